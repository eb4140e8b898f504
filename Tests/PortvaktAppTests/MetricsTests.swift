import AuthOrchestrator
import Foundation
import HTTPEngine
import Kernel
import PortvaktAPI
import PortvaktApp
import Storage
import TestSupport
import Testing

@Suite("GET /metrics", .serialized)
struct MetricsTests {
    @Test(
        "Prometheus text 0.0.4: requests by route and status, latency histograms, logins, registrations, live sessions, SQLite writes"
    )
    func exposition() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let http = InProcessHTTPClient()
        let person = PasskeyUser(server: server)
        #expect(try http.send(.GET, server.publicURL + "/v1/me").status == 401)
        #expect(try http.send(.GET, server.publicURL + "/no/such/path").status == 404)
        let (credential, _, _) = try person.signUp("mia")
        #expect(try person.login(credential).status == 200)
        let reader = try server.server.adminTokens.create(
            name: "scraper", scope: .read, lifetime: nil, actor: .cli)

        let response = try http.send(
            .GET, server.adminURL + "/metrics", headers: ["Authorization": "Bearer \(reader.token)"])
        #expect(response.status == 200)
        #expect(response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        let lines = response.text.split(separator: "\n").map(String.init)
        for expected in [
            #"portvakt_http_requests_total{listener="public",route="/v1/me",status="401"} 1"#,
            #"portvakt_http_requests_total{listener="public",route="(unmatched)",status="404"} 1"#,
            #"portvakt_http_requests_total{listener="public",route="/v1/passkeys/login/finalize",status="200"} 1"#,
            #"portvakt_http_request_duration_seconds_count{listener="public",route="/v1/me"} 1"#,
            #"portvakt_http_request_duration_seconds_bucket{listener="public",route="/v1/me",le="+Inf"} 1"#,
            #"portvakt_passkey_logins_total{outcome="success"} 1"#,
            #"portvakt_passkey_logins_total{outcome="refused"} 0"#,
            #"portvakt_passkey_registrations_total{outcome="success"} 1"#,
            "portvakt_sessions_active 2",
            "# TYPE portvakt_storage_write_duration_seconds histogram",
            "# TYPE portvakt_sqlite_write_duration_seconds histogram",
            #"portvakt_executor_jobs_queued{executor="http-async"} 0"#,
            #"portvakt_executor_jobs_queued{executor="http-blocking"} 0"#,
            #"portvakt_executor_jobs_queued{executor="bankid-poll"} 0"#,
        ] {
            #expect(lines.contains(expected), "missing: \(expected)")
        }
        let writes = try #require(
            lines.first { $0.hasPrefix(#"portvakt_storage_write_duration_seconds_count{engine="sqlite"} "#) })
        #expect((UInt64(writes.split(separator: " ")[1]) ?? 0) > 0)
        // The name from before PostgreSQL, kept on SQLite for existing dashboards.
        let legacy = try #require(
            lines.first { $0.hasPrefix("portvakt_sqlite_write_duration_seconds_count ") })
        #expect(legacy.split(separator: " ")[1] == writes.split(separator: " ")[1])

        // Every sample is `name{labels} value`, and every family has HELP and TYPE before its samples.
        let sample = try Regex(#"^([a-z_]+)(\{[a-z_]+="[^"\n]*"(,[a-z_]+="[^"\n]*")*\})? [0-9][0-9.e+-]*$"#)
        var typed: Set<String> = []
        for line in lines {
            if line.hasPrefix("# TYPE ") { typed.insert(String(line.split(separator: " ")[2])) }
            if line.hasPrefix("#") { continue }
            let match = try #require(try sample.wholeMatch(in: line), "malformed: \(line)")
            let name = String(match.output[1].substring ?? "")
            let family = ["_bucket", "_sum", "_count"].reduce(name) { current, suffix in
                typed.contains(current)
                    ? current : (current.hasSuffix(suffix) ? String(current.dropLast(suffix.count)) : current)
            }
            #expect(typed.contains(family), "no TYPE before \(name)")
        }

        // Buckets are cumulative.
        let buckets = lines.filter {
            $0.hasPrefix(#"portvakt_http_request_duration_seconds_bucket{listener="public",route="/v1/me","#)
        }.compactMap { UInt64($0.split(separator: " ").last ?? "") }
        #expect(buckets == buckets.sorted() && buckets.last == 1)
    }
}
