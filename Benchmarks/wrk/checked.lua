-- wrk script: sends one fixed request and checks every answer, so that a run whose answers are
-- wrong (a 401, a 429, {"active":false}) cannot pass for a throughput figure.
-- Environment:
--   BENCH_EXPECT_STATUS  the status every answer must have (required)
--   BENCH_EXPECT_BODY    a Lua pattern the body must match (optional; with it wrk keeps bodies)
--   BENCH_METHOD         request method (default GET)
--   BENCH_BODY           request body (optional; sent as application/json)
--   BENCH_BEARER         Authorization: Bearer value (optional)
-- done() prints "checked: N answers, M wrong"; the calling script fails the run when M > 0 or
-- N = 0.
local expect_status = tonumber(os.getenv("BENCH_EXPECT_STATUS") or "")
local expect_body = os.getenv("BENCH_EXPECT_BODY")
if expect_body == "" then expect_body = nil end
assert(expect_status, "BENCH_EXPECT_STATUS is required")

wrk.method = os.getenv("BENCH_METHOD") or "GET"
local body = os.getenv("BENCH_BODY")
if body and body ~= "" then
  wrk.body = body
  wrk.headers["Content-Type"] = "application/json"
end
local bearer = os.getenv("BENCH_BEARER")
if bearer and bearer ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. bearer
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  answers = 0
  wrong = 0
  first_wrong = ""
end

function response(status, headers, body)
  answers = answers + 1
  if status ~= expect_status or (expect_body and not (body and body:find(expect_body))) then
    wrong = wrong + 1
    if first_wrong == "" then
      first_wrong = tostring(status) .. " " .. string.sub(body or "", 1, 120)
    end
  end
end

function done(summary, latency, requests)
  local total_answers, total_wrong, example = 0, 0, ""
  for _, thread in ipairs(threads) do
    total_answers = total_answers + thread:get("answers")
    total_wrong = total_wrong + thread:get("wrong")
    if example == "" then example = thread:get("first_wrong") end
  end
  io.write(string.format("checked: %d answers, %d wrong\n", total_answers, total_wrong))
  if total_wrong > 0 then
    io.write("first wrong answer: " .. example .. "\n")
  end
end
