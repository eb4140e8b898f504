// Passkey login benchmark: complete logins (POST login/initialize, sign the challenge, POST
// login/finalize) against the release `portvakt serve` over HTTP, SQLite on disk, from many
// concurrent clients, beside the single-core raw OpenSSL P-256 verify rate measured in the same run.
//
// Runs, each on a fresh database:
//   main:    10,000 users with one ES256 passkey each, at 16 and then at 64 clients (each on a
//            fresh database) → logins/s, p50, p99, p99.9, the fewest logins any client completed
//            over the most (how evenly the server shares itself), and the server's CPU per login
//            beside the cost of one raw verify (their ratio: what the server spends on everything else)
//   mixed:   the 64-client main run again with 8 more clients (--writers N) that each sign in,
//            rename their user and log out in a loop, so that writes other than a sign-in's commit
//            beside the logins measured → the logins' p99 and those writes' rate and p99. Every
//            main and mixed run is made with the shipped threading and with a thread per connection.
//   pg1/pg2: the 64-client main run again, right after it, on PostgreSQL (the server PORTVAKT_TEST_POSTGRES_URL
//            names): one and then two `portvakt serve` instances on one database, client i on
//            instance i % N; the users are seeded through the store. Besides the servers' CPU per
//            login, the PostgreSQL cluster's (--postgres-pid: the postmaster's process tree).
//   small:   1,000 stored passkeys, 8 clients                      → p50, p99
//   large:   1,000,000 stored passkeys (the same 1,000 real users plus filler), 8 clients
// The small/large pair shows how latency grows with the credential table (target: p50 under
// 1.2x); the two servers are measured in 5 alternating windows, the medians of the windows.
//   slow BankID: 1,000 users, 8 clients, on a quiet server and on one whose BankID simulator
//            answers every call after 10 s while 200 pending orders are polled every 2 s (100
//            polls a second, spread evenly), in 5 alternating windows; the median of each side's
//            window p99s (target: within 1.2x: BankID never holds the threads that serve logins)
//   slow webhook: 1,000 users, 8 clients, about 20 webhook events a second (logins that replace
//            the session they came with), on a server whose receiver answers at once and on one
//            whose receiver never answers, in 5 alternating windows; the median of each side's
//            window p99s (target: p99 within 1.2x: delivery never holds a request)
//
// Usage: bench-login --binary PATH [--seconds N] [--main-only | --sides-only] [--threads N | --per-connection] [--clients N[,N…]]
//                    [--writers N] [--postgres-pid PID] [--no-postgresql | --postgresql-only]
//        bench-login --binary PATH --logins N [--warmup M] [--clients N] [--callgrind FILE]
// Prints name=value:unit pairs for record.py.
//
// With --logins, only a fixed workload: the main run's 10,000 users on SQLite, M warm-up logins
// (default 50), then exactly N complete logins (every response checked), then the server stops;
// exits non-zero when any login failed. With --callgrind FILE the server runs under
// `valgrind --tool=callgrind --instr-atstart=no` writing FILE, and instrumentation is switched on
// (callgrind_control -i on) only around the N measured logins (collection follows it; the warm-up
// and start run uninstrumented, near native speed), so FILE's total Ir divided by N is
// the instructions one complete login costs the server (Benchmarks/login-instructions.sh).
import CSQLite
import CryptoCore
import Foundation
import Glibc
import HTTPEngine
import Kernel
import PasskeyCore
import PortvaktAPI
import Storage
import Synchronization
import TestSupport

var arguments = CommandLine.arguments.dropFirst().makeIterator()
var binary = ".build/release/portvakt"
var seconds = 10.0
/// Only the main runs (for profiling); the side comparisons are skipped.
var mainOnly = false
/// Only the side comparisons (1k/1M passkeys, slow BankID, hanging webhook receiver), for
/// repeating them: the main runs and PostgreSQL's are skipped.
var sidesOnly = false
/// How the servers spread connections over threads.
enum ServerThreading {
    /// `http.threading` "pool" with this many workers.
    case pool(Int)
    /// `http.threading` "perConnection".
    case perConnection

    /// The keys of the `http` section that choose it.
    var configuration: String {
        switch self {
        case .pool(let workers): #""threading": "pool", "threads": \#(workers), "#
        case .perConnection: #""threading": "perConnection", "#
        }
    }
}
/// `--threads N` (a pool of N) or `--per-connection`; nil keeps the shipped default for the
/// storage engine (a pool of one worker per core on SQLite, a thread per connection on PostgreSQL).
var threading: ServerThreading?
/// Clients of the mixed run (`--writers N`, 0 for none) that sign in, rename their user
/// (`PATCH /v1/me`) and log out, in a loop: writes that are not a sign-in's, beside the logins
/// measured (`*_mixed_*`).
var otherWriters = 8
/// Concurrent clients of each main run, in order (issue 17's figures are 16 and 64); the last is
/// also the PostgreSQL runs' and the fixed workload's.
var mainClientCounts = [16, 64]
var mainClients: Int { mainClientCounts.last ?? 64 }
/// Whether the main run is repeated on PostgreSQL, and whether SQLite's runs happen at all.
var postgreSQLRuns = true
var sqliteRuns = true
/// The PostgreSQL cluster's postmaster, whose process tree's CPU is counted; nil counts none.
var postmaster: Int32?
/// A fixed number of measured logins (and warm-up logins before them) instead of timed runs.
var fixedLogins: Int?
var warmupLogins = 50
/// Where callgrind writes its profile of the fixed logins; nil runs the server natively.
var callgrindOutput: String?
/// Where `strace -c` writes its count of the server's system calls during the fixed logins.
var straceOutput: String?
let usage = """
    usage: bench-login --binary PATH [--seconds N] [--main-only | --sides-only] [--threads N | --per-connection] [--clients N[,N…]]
                       [--writers N] [--postgres-pid PID] [--no-postgresql | --postgresql-only]
           bench-login --binary PATH --logins N [--warmup M] [--clients N] [--callgrind FILE | --strace FILE]
    The PostgreSQL runs need PORTVAKT_TEST_POSTGRES_URL (Benchmarks/login.sh starts a cluster and sets it).

    """
while let argument = arguments.next() {
    switch argument {
    case "--binary": binary = arguments.next() ?? binary
    case "--seconds": seconds = arguments.next().flatMap(Double.init) ?? seconds
    case "--main-only": mainOnly = true
    case "--sides-only":
        // The PostgreSQL runs are main runs.
        sidesOnly = true
        postgreSQLRuns = false
    case "--threads": threading = arguments.next().flatMap(Int.init).map(ServerThreading.pool)
    case "--per-connection": threading = .perConnection
    case "--writers": otherWriters = arguments.next().flatMap(Int.init) ?? 0
    case "--clients":
        mainClientCounts = arguments.next()?.split(separator: ",").map { Int($0) ?? 0 } ?? []
    case "--postgres-pid": postmaster = arguments.next().flatMap(Int32.init)
    case "--no-postgresql": postgreSQLRuns = false
    case "--postgresql-only": sqliteRuns = false
    case "--logins": fixedLogins = arguments.next().flatMap(Int.init) ?? 0
    case "--warmup": warmupLogins = arguments.next().flatMap(Int.init) ?? -1
    case "--callgrind": callgrindOutput = arguments.next()
    case "--strace": straceOutput = arguments.next()
    default:
        FileHandle.standardError.write(Data(usage.utf8))
        exit(2)
    }
}
// Every run is bounded in time and clients; an engine asked for must run, not be skipped for
// want of a server.
if !(seconds > 0 && seconds <= 3600) || !sqliteRuns && !postgreSQLRuns || mainOnly && sidesOnly
    || !(1...4).contains(mainClientCounts.count)
    || mainClientCounts.contains(where: { !(1...1024).contains($0) })
    || postgreSQLRuns && fixedLogins == nil && TestPostgreSQL.url == nil
    || fixedLogins.map({ !(1...100_000).contains($0) }) ?? (callgrindOutput != nil || straceOutput != nil)
    || callgrindOutput != nil && straceOutput != nil
    || !(0...100_000).contains(warmupLogins)
{
    FileHandle.standardError.write(Data(usage.utf8))
    exit(2)
}

// PortvaktProcess runs the binary named by PORTVAKT_BIN.
setenv("PORTVAKT_BIN", binary, 1)

/// A free TCP port on loopback: the origin must be known before the server starts.
func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length)
            return getsockname(fd, pointer, &length)
        }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Benchmark user `index`, and an ES256 passkey for it whose key the benchmark keeps.
func benchUser(_ index: Int, at now: Date) -> (user: User, credential: SoftwareCredential) {
    let user = User(
        id: "bench-\(index)", username: "bench\(index)", displayName: "Bench \(index)", createdAt: now)
    let credential = SoftwareAuthenticator().makeCredential(
        algorithm: .es256, rpID: "localhost", userHandle: user.userHandle)
    return (user, credential)
}

/// Stores `user` with `credential` as its first passkey, through the public store API.
func create(_ user: User, _ credential: SoftwareCredential, in store: SQLStore, at now: Date) throws {
    try store.createUser(
        user,
        firstPasskey: StoredPasskey(
            credentialID: credential.id, userID: user.id, publicKey: credential.publicKey.encoded,
            algorithm: -7, signCount: 0, aaguid: "00000000-0000-0000-0000-000000000000",
            providerName: nil,
            transports: ["internal"], backupEligible: true, backupState: true, attestationFormat: "none",
            attestationType: "none", attestationTrusted: false, name: "Bench", createdAt: now,
            lastUsedAt: nil))
}

/// Seconds since `start` (a `DispatchTime` in nanoseconds).
func elapsedSeconds(since start: UInt64) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// A data directory holding `realUsers` users, each with one ES256 passkey whose key the benchmark
/// keeps, and `filler` further passkeys (random ids, one shared filler owner) that only make the
/// table large. Also returns how long storing the users took (making their keys not included).
func prepare(realUsers: Int, filler: Int, in directory: String) throws -> (
    credentials: [SoftwareCredential], seedSeconds: Double
) {
    let database = try SQLiteDatabase(path: directory + "/portvakt.sqlite")
    let store = SQLStore(database: database)
    let now = Date()
    let users = (0..<realUsers).map { benchUser($0, at: now) }
    let began = DispatchTime.now().uptimeNanoseconds
    for (user, credential) in users { try create(user, credential, in: store, at: now) }
    let seedSeconds = elapsedSeconds(since: began)
    let credentials = users.map(\.credential)
    database.close()
    if filler > 0 {
        // Test data only, and in bulk: one statement in one transaction, straight to SQLite, rather
        // than a million single-row transactions through the store.
        var handle: OpaquePointer?
        guard sqlite3_open(directory + "/portvakt.sqlite", &handle) == SQLITE_OK, let handle else {
            fatalError("cannot open the benchmark database")
        }
        defer { sqlite3_close(handle) }
        let key = credentials[0].publicKey.encoded.map { String(format: "%02x", $0) }.joined()
        let sql = """
            BEGIN;
            INSERT INTO users (id, username, display_name, created_at, user_handle)
                VALUES ('bench-filler', 'benchfiller', 'Filler', 0, randomblob(32));
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(filler))
            INSERT INTO passkeys (credential_id, user_id, public_key, algorithm, sign_count, aaguid,
                transports, backup_eligible, backup_state, attestation_format, attestation_type,
                attestation_trusted, name, created_at)
            SELECT randomblob(32), 'bench-filler', x'\(key)', -7, 0, '00000000-0000-0000-0000-000000000000',
                '[]', 1, 1, 'none', 'none', 0, 'Filler', i FROM n;
            COMMIT;
            """
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
            fatalError("filler insert failed: \(String(cString: sqlite3_errmsg(handle)))")
        }
    }
    return (credentials, seedSeconds)
}

/// Seeds `count` users as `prepare` does, into PostgreSQL through the store, from `writers`
/// threads at once: one user is one transaction of a few round trips and, on a durable cluster, a
/// WAL flush, which concurrent commits share. Returns the credentials in user order and how long
/// storing took (making the keys not included).
func seedPostgreSQL(_ database: PostgreSQLTestDatabase, users count: Int, writers: Int) throws -> (
    credentials: [SoftwareCredential], seedSeconds: Double
) {
    let opened = try PostgreSQLDatabase(
        configuration: PostgreSQLDatabase.Configuration(
            connection: database.configuration, poolSize: max(2, writers)))
    defer { opened.close() }
    let store = SQLStore(database: opened)
    let now = Date()
    let users = (0..<count).map { benchUser($0, at: now) }
    let failure = Mutex<(any Error)?>(nil)
    let began = DispatchTime.now().uptimeNanoseconds
    DispatchQueue.concurrentPerform(iterations: writers) { writer in
        // Each writer stops at its first failure; the first failure is thrown below.
        for index in stride(from: writer, to: count, by: writers) {
            do {
                try create(users[index].user, users[index].credential, in: store, at: now)
            } catch {
                failure.withLock { $0 = $0 ?? error }
                return
            }
        }
    }
    let seedSeconds = elapsedSeconds(since: began)
    if let error = failure.withLock({ $0 }) { throw error }
    return (users.map(\.credential), seedSeconds)
}

/// The PostgreSQL database a server uses, and the name its connections show in pg_stat_activity.
struct ServerDatabase {
    var database: PostgreSQLTestDatabase
    var applicationName: String
}

/// Starts `portvakt serve` on `port` over `directory`, on SQLite there or on `postgreSQL` (with
/// the pool at its default size); returns the process.
func startServer(
    port: Int, directory: String, threading: ServerThreading?, postgreSQL: ServerDatabase? = nil,
    startTimeout: Double = 20,
    webhook: WebhookReceiver? = nil
) throws -> PortvaktProcess {
    var storage = ""
    var environment = ["PORTVAKT_DATA": directory]
    var webhooks = ""
    if let webhook {
        // Every event to one receiver; each attempt may take 10 s, on two sender threads.
        webhooks = """
            "webhooks": {"endpoints": [{"name": "bench", "url": "http://127.0.0.1:\(webhook.port)/events",
              "events": ["*"], "secretVariable": "PORTVAKT_WEBHOOK_BENCH"}],
              "timeoutSeconds": 10, "threads": 2},
            """
        environment["PORTVAKT_WEBHOOK_BENCH"] =
            "whsec_" + Data(repeating: 42, count: 32).base64EncodedString()
    }
    if let postgreSQL {
        var section = postgreSQL.database.storageJSON
        var server = section["postgresql"] as? [String: Any] ?? [:]
        server["applicationName"] = postgreSQL.applicationName
        section["postgresql"] = server
        let json = String(decoding: try JSONSerialization.data(withJSONObject: section), as: UTF8.self)
        storage = #""storage": \#(json),"#
        // The password only from the environment, as Portvakt requires.
        environment.merge(postgreSQL.database.passwordEnvironment) { _, new in new }
    }
    // Every client is on 127.0.0.1: the per-address cap must not be what the run measures.
    let config = """
        {"publicURL": "http://localhost:\(port)", "listen": {"public": {"port": \(port)}, "admin": {"port": 0}},
         "http": {\(threading?.configuration ?? "")"perAddressConnectionLimit": 1024}, \(storage) \(webhooks)
         "rateLimits": {"auth": {"burst": 100000, "perSecond": 100000},
                        "bankid": {"burst": 100000, "perSecond": 100000},
                        "default": {"burst": 100000, "perSecond": 100000}},
         "bankid": {"appIdentifiers": ["se.example.bench"]}}
        """
    try Data(config.utf8).write(to: URL(fileURLWithPath: directory + "/config.json"))
    let process = try PortvaktProcess(
        ["serve", "--config", directory + "/config.json"], environment: environment)
    _ = try process.waitForPort(listener: "public", timeout: startTimeout)
    return process
}

/// One complete login; nil on success, else what went wrong.
func login(
    _ connection: BenchConnection, origin: String, credential: SoftwareCredential,
    authenticator: SoftwareAuthenticator
) -> String? {
    guard let options = try? connection.post("/v1/passkeys/login/initialize", body: Array("{}".utf8))
    else { return "initialize: no response" }
    guard options.status == 200, let challengeID = options.body.jsonString(named: "challengeId"),
        let challenge = options.body.jsonString(named: "challenge").flatMap(Base64URL.decode)
    else {
        return "initialize: \(options.status) \(String(decoding: options.body.prefix(300), as: UTF8.self))"
    }
    let assertion = authenticator.authenticate(credential, challenge: challenge, origin: origin)
    let body =
        Array(#"{"challengeId":"\#(challengeID)","client":"native","credential":"#.utf8) + assertion.json()
        + [UInt8(ascii: "}")]
    guard let result = try? connection.post("/v1/passkeys/login/finalize", body: body) else {
        return "finalize: no response"
    }
    return result.status == 200
        ? nil : "finalize: \(result.status) \(String(decoding: result.body.prefix(300), as: UTF8.self))"
}

/// Runs `clients` threads logging in for `seconds`, client i against the server on
/// `ports[i % ports.count]`; returns (logins per second, latencies in µs, the fewest logins any
/// client completed over the most: 1 when the server shares itself evenly between its clients).
func measure(
    ports: [Int], credentials: [SoftwareCredential], clients: Int, seconds: Double, writers: Int = 0
) -> (rate: Double, latencies: [Double], fairness: Double, writes: [Double]) {
    /// Each client's latencies, appended as it finishes.
    let perClient = Mutex<[[Double]]>([])
    let failures = Atomic<Int>(0)
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    let start = DispatchTime.now().uptimeNanoseconds
    let group = DispatchGroup()
    let writes = Mutex<[Double]>([])
    for writerIndex in 0..<writers {
        group.enter()
        Thread {
            defer { group.leave() }
            let port = ports[writerIndex % ports.count]
            let mine = otherWrites(
                port: port, credentials: credentials, first: credentials.count / 2 + writerIndex,
                step: writers,
                until: deadline, failures: failures)
            writes.withLock { $0 += mine }
        }.start()
    }
    for clientIndex in 0..<clients {
        group.enter()
        let thread = Thread {
            defer { group.leave() }
            let port = ports[clientIndex % ports.count]
            let origin = "http://localhost:\(port)"
            let connection = BenchConnection(port: port)
            let authenticator = SoftwareAuthenticator()
            var mine: [Double] = []
            var next = clientIndex
            while DispatchTime.now().uptimeNanoseconds < deadline {
                // Each client logs in as its own users, so no two measured clients race one
                // credential (the mixed run's writers may share one with them: a sign count of 0).
                let credential = credentials[next % credentials.count]
                next += clients
                let began = DispatchTime.now().uptimeNanoseconds
                switch login(connection, origin: origin, credential: credential, authenticator: authenticator)
                {
                case nil: break
                case let problem?:
                    if failures.add(1, ordering: .relaxed).newValue == 1 {
                        FileHandle.standardError.write(Data("bench-login: a login failed: \(problem)\n".utf8))
                    }
                    continue
                }
                mine.append(Double(DispatchTime.now().uptimeNanoseconds - began) / 1000)
            }
            perClient.withLock { $0.append(mine) }
        }
        thread.start()
    }
    group.wait()
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let clientLatencies = perClient.withLock { $0 }
    let all = clientLatencies.flatMap { $0 }
    if failures.load(ordering: .relaxed) > 0 {
        FileHandle.standardError.write(
            Data(
                "bench-login: \(failures.load(ordering: .relaxed)) logins (or mixed-run writes) failed\n".utf8
            ))
    }
    let counts = clientLatencies.map(\.count)
    let fairness = Double(counts.min() ?? 0) / Double(max(1, counts.max() ?? 0))
    return (Double(all.count) / elapsed, all.sorted(), fairness, writes.withLock { $0 }.sorted())
}

/// One writer of `measure`: until `deadline`, signs in as its users in turn (from `first`, every
/// `step`-th), renames the user and logs out; returns the rename's and the logout's latencies (µs).
func otherWrites(
    port: Int, credentials: [SoftwareCredential], first: Int, step: Int, until deadline: UInt64,
    failures: borrowing Atomic<Int>
) -> [Double] {
    let origin = "http://localhost:\(port)"
    let connection = BenchConnection(port: port)
    let authenticator = SoftwareAuthenticator()
    var latencies: [Double] = []
    var next = first
    var failed = 0
    func timed(_ method: String, _ path: String, _ body: String, token: String, expect: Int) -> Bool {
        let began = DispatchTime.now().uptimeNanoseconds
        guard
            let response = try? connection.send(
                method, path, body: Array(body.utf8), headers: [("Authorization", "Bearer \(token)")]),
            response.status == expect
        else {
            if failed == 0 {
                FileHandle.standardError.write(Data("bench-login: \(method) \(path) failed\n".utf8))
            }
            failed += 1
            return false
        }
        latencies.append(Double(DispatchTime.now().uptimeNanoseconds - began) / 1000)
        return true
    }
    defer { failures.add(failed, ordering: .relaxed) }
    while DispatchTime.now().uptimeNanoseconds < deadline {
        let credential = credentials[next % credentials.count]
        next += step
        guard
            let token = try? signIn(
                connection, origin: origin, credential: credential, authenticator: authenticator,
                replacing: nil)
        else {
            if failed == 0 {
                FileHandle.standardError.write(Data("bench-login: a writer's sign-in failed\n".utf8))
            }
            failed += 1
            continue
        }
        guard timed("PATCH", "/v1/me", #"{"displayName":"Writer \#(next)"}"#, token: token, expect: 200)
        else {
            continue
        }
        _ = timed("POST", "/v1/logout", "", token: token, expect: 204)
    }
    return latencies
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

/// What /proc/PID/stat says of a process's CPU, in seconds: its own (user + system), that of the
/// children it has reaped, and its parent's pid; nil when there is no such process.
func processTimes(pid: Int32) -> (own: Double, reapedChildren: Double, parent: Int32)? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
    else { return nil }
    // Fields after the command name: state is field 3, ppid 4, utime 14, stime 15, cutime 16 and
    // cstime 17 (in clock ticks).
    let fields = stat[stat.index(after: end)...].split(separator: " ")
    guard fields.count > 14, let parent = Int32(fields[1]), let user = Double(fields[11]),
        let system = Double(fields[12]), let childUser = Double(fields[13]),
        let childSystem = Double(fields[14])
    else { return nil }
    let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
    return ((user + system) / tick, (childUser + childSystem) / tick, parent)
}

/// CPU seconds (user + system) a process has used, from /proc/PID/stat.
func cpuSeconds(pid: Int32) -> Double { processTimes(pid: pid)?.own ?? 0 }

/// CPU seconds the PostgreSQL cluster under `postmaster` has used: the postmaster, its live
/// children (backends, WAL writer, checkpointer, autovacuum…) and those it has reaped, so a
/// backend that exits mid-run still counts.
func clusterCPUSeconds(postmaster: Int32) -> Double {
    guard let root = processTimes(pid: postmaster) else { return 0 }
    var total = root.own + root.reapedChildren
    // One pass over /proc: bounded by the number of processes.
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let pid = Int32(entry), pid != postmaster, let times = processTimes(pid: pid),
            times.parent == postmaster
        else { continue }
        total += times.own
    }
    return total
}

/// CPU seconds this benchmark process (the clients) has used.
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// What one run measured: throughput, sorted latencies (µs), CPU time per login (µs) in the
/// servers (summed over instances), in the PostgreSQL cluster (0 on SQLite, where that work is
/// the server's) and in the clients, and how long seeding the users took. CPU per login barely
/// depends on what else the machine runs, so it shows where the time goes even when throughput
/// is noisy.
struct RunFigures {
    var rate: Double
    var latencies: [Double]
    /// The fewest logins any client completed over the most.
    var fairness: Double
    var serverCPUPerLogin: Double
    var databaseCPUPerLogin: Double
    var clientCPUPerLogin: Double
    var seedSeconds: Double
    /// The other writers' renames and logouts per second, and their latencies (µs, sorted).
    var writeRate: Double
    var writeLatencies: [Double]
}

/// A server the clients log in to, and its data directory (removed when the value goes).
struct RunningServer {
    var process: PortvaktProcess
    var port: Int
    var directory: TemporaryDirectory
}

/// Warms `servers` up for a second, then measures logins and the CPU the servers, the cluster
/// under `postmaster` (when given) and the clients spend on them.
func measure(
    _ servers: [RunningServer], credentials: [SoftwareCredential], clients: Int, seconds: Double,
    postmaster: Int32?, seedSeconds: Double, writers: Int = 0
) -> RunFigures {
    let ports = servers.map(\.port)
    _ = measure(ports: ports, credentials: credentials, clients: clients, seconds: 1)
    func serverCPU() -> Double { servers.reduce(0) { $0 + cpuSeconds(pid: $1.process.pid) } }
    func databaseCPU() -> Double { postmaster.map(clusterCPUSeconds(postmaster:)) ?? 0 }
    let serverBefore = serverCPU()
    let databaseBefore = databaseCPU()
    let clientBefore = ownCPUSeconds()
    let (rate, latencies, fairness, writes) = measure(
        ports: ports, credentials: credentials, clients: clients, seconds: seconds, writers: writers)
    let logins = max(1, Double(latencies.count))
    return RunFigures(
        rate: rate, latencies: latencies, fairness: fairness,
        serverCPUPerLogin: (serverCPU() - serverBefore) / logins * 1e6,
        databaseCPUPerLogin: (databaseCPU() - databaseBefore) / logins * 1e6,
        clientCPUPerLogin: (ownCPUSeconds() - clientBefore) / logins * 1e6, seedSeconds: seedSeconds,
        writeRate: Double(writes.count) / seconds, writeLatencies: writes)
}

/// Stops a server and waits for it (bounded: `wait` kills one that outlives its timeout).
func stop(_ server: PortvaktProcess) {
    server.send(SIGTERM)
    server.wait()
}

/// Stops a server before its data directory goes.
func stop(_ server: RunningServer) {
    withExtendedLifetime(server.directory) { stop(server.process) }
}

/// A server on a fresh SQLite data directory seeded with `realUsers` (and `filler` passkeys of
/// nobody's), sending its events to `webhook` when given.
func startSQLiteServer(
    realUsers: Int, filler: Int = 0, prefix: String = "portvakt-bench-login", threading: ServerThreading?,
    webhook: WebhookReceiver? = nil
) throws -> (server: RunningServer, credentials: [SoftwareCredential], seedSeconds: Double) {
    let directory = try TemporaryDirectory(prefix: prefix)
    let (credentials, seedSeconds) = try prepare(realUsers: realUsers, filler: filler, in: directory.path)
    let port = freePort()
    let process = try startServer(
        port: port, directory: directory.path, threading: threading, webhook: webhook)
    return (RunningServer(process: process, port: port, directory: directory), credentials, seedSeconds)
}

/// One full run on a fresh database: prepare, serve, warm up, measure, stop.
func run(realUsers: Int, clients: Int, seconds: Double, threading: ServerThreading?, writers: Int) throws
    -> RunFigures
{
    let (server, credentials, seedSeconds) = try startSQLiteServer(realUsers: realUsers, threading: threading)
    defer { stop(server) }
    return measure(
        [server], credentials: credentials, clients: clients, seconds: seconds, postmaster: nil,
        seedSeconds: seedSeconds, writers: writers)
}

/// The clients of every side comparison (1k/1M passkeys, slow BankID, hanging webhook receiver).
let sideClients = 8

/// The latencies (µs, sorted) of `sideClients` clients logging in on `server` for `seconds`.
func sideWindow(_ server: RunningServer, _ credentials: [SoftwareCredential], seconds: Double) -> [Double] {
    measure(ports: [server.port], credentials: credentials, clients: sideClients, seconds: seconds).latencies
}

/// Measures two sides in `rounds` alternating windows, `first` then `second` in each round, and
/// returns each side's results in round order. Every side comparison runs its two servers this
/// way: on 2 shared cores a p99 moves by a third from one window to the next, so sides measured
/// one after the other measure that drift; alternating lets both see the same machine.
func alternating<T>(rounds: Int, _ first: () throws -> T, _ second: () throws -> T) rethrows -> (
    first: [T], second: [T]
) {
    var results: (first: [T], second: [T]) = ([], [])
    for _ in 0..<rounds {
        results.first.append(try first())
        results.second.append(try second())
    }
    return results
}

/// Passkey login latency as the credential table grows: two servers with the same 1,000 real users,
/// one with no other passkey and one with 999,000 filler passkeys besides, measured in `rounds`
/// alternating windows. Returns each server's per-window (p50, p99) in µs, in round order.
func growthRun(seconds: Double, threading: ServerThreading?, rounds: Int = 5) throws -> (
    small: [(p50: Double, p99: Double)], large: [(p50: Double, p99: Double)]
) {
    let (small, smallCredentials, _) = try startSQLiteServer(realUsers: 1_000, threading: threading)
    defer { stop(small) }
    let (large, largeCredentials, _) = try startSQLiteServer(
        realUsers: 1_000, filler: 999_000, threading: threading)
    defer { stop(large) }
    func window(_ server: RunningServer, _ credentials: [SoftwareCredential], _ seconds: Double) -> (
        p50: Double, p99: Double
    ) {
        let latencies = sideWindow(server, credentials, seconds: seconds)
        return (percentile(latencies, 0.5), percentile(latencies, 0.99))
    }
    _ = window(small, smallCredentials, 1)
    _ = window(large, largeCredentials, 1)
    let windowSeconds = seconds / Double(rounds)
    let (smallWindows, largeWindows) = alternating(
        rounds: rounds, { window(small, smallCredentials, windowSeconds) },
        { window(large, largeCredentials, windowSeconds) })
    return (smallWindows, largeWindows)
}

/// The main run on PostgreSQL: a fresh database seeded through the store, `instances` servers on
/// it (each with a data directory of its own), the clients spread over them.
func postgreSQLRun(
    instances: Int, users: Int, clients: Int, seconds: Double, threading: ServerThreading?, postmaster: Int32?
) throws -> RunFigures {
    // Dropped (with any connection still open to it) when the value goes.
    let database = try PostgreSQLTestDatabase()
    let (credentials, seedSeconds) = try seedPostgreSQL(database, users: users, writers: 8)
    var servers: [RunningServer] = []
    // The servers stop before their directories and the database go, also when one fails to start.
    defer {
        servers.forEach { stop($0.process) }
        withExtendedLifetime(database) {}
    }
    for instance in 1...instances {
        let directory = try TemporaryDirectory(prefix: "portvakt-bench-login-pg")
        let port = freePort()
        let process = try startServer(
            port: port, directory: directory.path, threading: threading,
            postgreSQL: ServerDatabase(database: database, applicationName: "portvakt-bench-\(instance)"))
        servers.append(RunningServer(process: process, port: port, directory: directory))
    }
    return measure(
        servers, credentials: credentials, clients: clients, seconds: seconds, postmaster: postmaster,
        seedSeconds: seedSeconds)
}

/// Passkey login latency beside a slow BankID, as the medians over `rounds` rounds of the p99 of
/// 8 clients' logins on two servers of 1,000 users each, measured in alternating windows: a quiet
/// one (no BankID order), and one whose simulator answers every call after 10 s while 200 pending
/// orders are polled, each about every 2 s. The pollers run only in the loaded server's windows
/// (its collects stay in flight throughout), so the quiet windows see a machine without the poll
/// load. Returns (quiet, loaded) per-window p99s in µs, in round order.
func slowBankIDRun(seconds: Double, threading: ServerThreading?, rounds: Int = 5) throws -> (
    quiet: [Double], loaded: [Double]
) {
    let (quiet, quietCredentials, _) = try startSQLiteServer(
        realUsers: 1_000, prefix: "portvakt-bench-bankid-quiet", threading: threading)
    defer { stop(quiet) }
    let (loaded, credentials, _) = try startSQLiteServer(
        realUsers: 1_000, prefix: "portvakt-bench-bankid-load", threading: threading)
    defer { stop(loaded) }
    let port = loaded.port
    _ = sideWindow(quiet, quietCredentials, seconds: 1)
    _ = sideWindow(loaded, credentials, seconds: 1)

    // 200 orders for another device, started while BankID is quick; each keeps its binding.
    let starter = BenchConnection(port: port)
    var orders: [(id: String, binding: String)] = []
    for _ in 0..<200 {
        let started = try starter.post(
            "/v1/bankid/orders",
            body: Array(
                #"{"intent":"login","device":"other","client":"native","appIdentifier":"se.example.bench","deviceOS":"Linux","deviceModelName":"bench","deviceIdentifier":"bench-1"}"#
                    .utf8))
        guard started.status == 201, let id = started.body.jsonString(named: "orderId"),
            let binding = started.body.jsonString(named: "clientBinding")
        else { throw BenchConnection.Failure(description: "a BankID order did not start: \(started.status)") }
        orders.append((id, binding))
    }
    // The pollers below use exactly this request: it must reach the order.
    let probe = try starter.get(
        "/v1/bankid/orders/\(orders[0].id)", headers: [("Portvakt-BankID-Binding", orders[0].binding)])
    guard probe.status == 200 else {
        throw BenchConnection.Failure(description: "polling failed: \(probe.status)")
    }
    // From now on BankID answers every call after 10 s.
    let slowed = try starter.post("/sim/v1/control", body: Array(#"{"latencyMilliseconds":10000}"#.utf8))
    guard slowed.status == 200 else { throw BenchConnection.Failure(description: "latency not set") }

    // 20 pollers share the orders: each order is polled about every 2 s, as its page would, and
    // the 200 pages poll independently of each other: the polls are spread evenly over the 2 s
    // (poller k starts k × 100 ms in and polls one of its 10 orders every 200 ms), 100 a second.
    // Polling every order in the same instant would measure bursts of 200 requests every 2 s, a
    // load no set of independent pages makes.
    let finished = Atomic<Bool>(false)
    let polling = Atomic<Bool>(true)
    let polls = Atomic<Int>(0)
    let pollers = DispatchGroup()
    let allOrders = orders
    let pollerCount = 20
    let pollPeriod: UInt64 = 2_000_000_000
    let firstRound = DispatchTime.now().uptimeNanoseconds
    for poller in 0..<pollerCount {
        pollers.enter()
        Thread {
            defer { pollers.leave() }
            let connection = BenchConnection(port: port)
            let mine = stride(from: poller, to: allOrders.count, by: pollerCount).map { allOrders[$0] }
            let spacing = pollPeriod / UInt64(mine.count)
            var due = firstRound + UInt64(poller) * (pollPeriod / UInt64(pollerCount))
            while !finished.load(ordering: .relaxed) {
                for order in mine {
                    let now = DispatchTime.now().uptimeNanoseconds
                    if now < due { usleep(UInt32((due - now) / 1000)) }
                    // A poll that took longer than its slot moves the rest of the round, not the rate.
                    due = max(due, DispatchTime.now().uptimeNanoseconds) + spacing
                    guard polling.load(ordering: .relaxed) else { continue }
                    if (try? connection.get(
                        "/v1/bankid/orders/\(order.id)", headers: [("Portvakt-BankID-Binding", order.binding)]
                    ))?.status == 200 {
                        polls.add(1, ordering: .relaxed)
                    }
                }
            }
        }.start()
    }
    defer {
        finished.store(true, ordering: .relaxed)
        pollers.wait()
    }
    usleep(2_500_000)  // the first collects are under way and slow
    let window = seconds / Double(rounds)
    let (quietP99, loadedP99) = try alternating(
        rounds: rounds,
        {
            polling.store(false, ordering: .relaxed)
            return percentile(sideWindow(quiet, quietCredentials, seconds: window), 0.99)
        },
        {
            polling.store(true, ordering: .relaxed)
            let before = polls.load(ordering: .relaxed)
            let p99 = percentile(sideWindow(loaded, credentials, seconds: window), 0.99)
            // The load must have been there: about 100 answered polls a second.
            guard polls.load(ordering: .relaxed) - before > Int(window * 50) else {
                throw BenchConnection.Failure(description: "the pollers made too few polls")
            }
            return p99
        })
    return (quietP99, loadedP99)
}

/// The median of `values` (the mean of the middle two when their count is even).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Where the slow-webhook run's server sends its events: an HTTP server that answers 200 at
/// once, or a socket that listens and never accepts (curl connects, sends, and waits until its
/// 10 s timeout), as a receiver that hangs.
final class WebhookReceiver: @unchecked Sendable {
    let port: Int
    private let server: HTTPServer?
    private let socket: Int32
    /// Deliveries the healthy receiver answered.
    let received = Count()

    /// A counter the receiver's handler and the run share.
    final class Count: Sendable {
        let value = Atomic<Int>(0)
    }

    init(hanging: Bool) throws {
        if hanging {
            let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0, listen(fd, 64) == 0 else {
                throw BenchConnection.Failure(description: "the hanging receiver could not listen")
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            socket = fd
            server = nil
            port = Int(UInt16(bigEndian: address.sin_port))
        } else {
            var router = Router()
            let received = received
            router.add(.POST, "/events", rateClass: .unlimited, summary: "webhook events") { _ in
                received.value.add(1, ordering: .relaxed)
                return HTTPResponse(status: 204)
            }
            var configuration = HTTPServerConfiguration()
            configuration.host = "127.0.0.1"
            configuration.port = 0
            let server = try HTTPServer(configuration: configuration, router: router, accessLog: { _ in })
            port = try server.start()
            self.server = server
            socket = -1
        }
    }

    deinit {
        server?.shutdown(grace: 1)
        if socket >= 0 { close(socket) }
    }
}

/// Passkey login latency beside webhook deliveries, as the medians over `rounds` rounds of the
/// p99 of 8 clients' logins on two servers of 1,000 users each, measured in alternating windows:
/// one whose receiver answers at once and one whose receiver hangs. On each, a side loop makes about 20 events a second (a login that replaces the
/// session it came with ends that session: `session.revoked`), running only in its server's
/// windows. Returns (healthy, hanging) per-window p99s in µs and the events still pending at the
/// hanging server at the end (proof it hung).
func slowWebhookRun(seconds: Double, threading: ServerThreading?, rounds: Int = 5) throws -> (
    healthy: [Double], hanging: [Double], pendingWhileHanging: Int
) {
    /// One server with its receiver and its side loop, which makes events while `active`.
    final class Side: @unchecked Sendable {
        let receiver: WebhookReceiver
        let server: RunningServer
        let credentials: [SoftwareCredential]
        let active = Atomic<Bool>(false)
        let finished = Atomic<Bool>(false)
        let made = Atomic<Int>(0)
        let loop = DispatchGroup()

        init(hanging: Bool, threading: ServerThreading?) throws {
            receiver = try WebhookReceiver(hanging: hanging)
            (server, credentials, _) = try startSQLiteServer(
                realUsers: 1_000, prefix: "portvakt-bench-webhooks", threading: threading, webhook: receiver)
            let port = server.port
            loop.enter()
            Thread { [self] in
                defer { loop.leave() }
                let connection = BenchConnection(port: port)
                let authenticator = SoftwareAuthenticator()
                var token: String?
                var index = 0
                while !finished.load(ordering: .relaxed) {
                    let began = DispatchTime.now().uptimeNanoseconds
                    if active.load(ordering: .relaxed) {
                        let credential = credentials[(credentials.count - 1) - index % 100]
                        index += 1
                        if let issued = try? signIn(
                            connection, origin: "http://localhost:\(port)", credential: credential,
                            authenticator: authenticator, replacing: token)
                        {
                            if token != nil { made.add(1, ordering: .relaxed) }
                            token = issued
                        }
                    }
                    let spent = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
                    if spent < 0.05 { usleep(UInt32((0.05 - spent) * 1e6)) }
                }
            }.start()
        }

        /// The p99 of 8 clients' logins (not the side loop's users) over `seconds`, the loop on.
        func window(seconds: Double) -> Double {
            active.store(true, ordering: .relaxed)
            defer { active.store(false, ordering: .relaxed) }
            return percentile(sideWindow(server, Array(credentials.prefix(900)), seconds: seconds), 0.99)
        }

        /// Stops the loop, then the server.
        func close() {
            finished.store(true, ordering: .relaxed)
            loop.wait()
            stop(server)
        }
    }
    let healthy = try Side(hanging: false, threading: threading)
    defer { healthy.close() }
    let hanging = try Side(hanging: true, threading: threading)
    defer { hanging.close() }
    _ = healthy.window(seconds: 1)
    _ = hanging.window(seconds: 1)
    let window = seconds / Double(rounds)
    let (healthyP99, hangingP99) = alternating(
        rounds: rounds, { healthy.window(seconds: window) }, { hanging.window(seconds: window) })
    let pending = try pendingDeliveries(in: hanging.server.directory.path + "/portvakt.sqlite")
    guard healthy.made.load(ordering: .relaxed) > Int(seconds * 10),
        hanging.made.load(ordering: .relaxed) > Int(seconds * 10)
    else { throw BenchConnection.Failure(description: "a side loop made too few events") }
    if healthy.receiver.received.value.load(ordering: .relaxed) == 0 {
        throw BenchConnection.Failure(description: "the healthy receiver got no delivery")
    }
    return (healthyP99, hangingP99, pending)
}

/// How many webhook deliveries are still pending in the SQLite file at `path` (read by its own
/// connection while the server runs: WAL lets it).
func pendingDeliveries(in path: String) throws -> Int {
    var handle: OpaquePointer?
    guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let handle else {
        throw BenchConnection.Failure(description: "could not open \(path)")
    }
    defer { sqlite3_close(handle) }
    sqlite3_busy_timeout(handle, 5000)
    var statement: OpaquePointer?
    guard
        sqlite3_prepare_v2(
            handle, "SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'", -1, &statement, nil)
            == SQLITE_OK
    else { throw BenchConnection.Failure(description: String(cString: sqlite3_errmsg(handle))) }
    defer { sqlite3_finalize(statement) }
    guard sqlite3_step(statement) == SQLITE_ROW else {
        throw BenchConnection.Failure(description: String(cString: sqlite3_errmsg(handle)))
    }
    return Int(sqlite3_column_int64(statement, 0))
}

/// A complete login that presents `replacing` (a session token) as the client's current one;
/// returns the new session's token.
func signIn(
    _ connection: BenchConnection, origin: String, credential: SoftwareCredential,
    authenticator: SoftwareAuthenticator, replacing: String?
) throws -> String? {
    let headers = replacing.map { [("Authorization", "Bearer \($0)")] } ?? []
    let options = try connection.post("/v1/passkeys/login/initialize", body: Array("{}".utf8))
    guard options.status == 200, let challengeID = options.body.jsonString(named: "challengeId"),
        let challenge = options.body.jsonString(named: "challenge").flatMap(Base64URL.decode)
    else { return nil }
    let assertion = authenticator.authenticate(credential, challenge: challenge, origin: origin)
    let body =
        Array(#"{"challengeId":"\#(challengeID)","client":"native","credential":"#.utf8) + assertion.json()
        + [UInt8(ascii: "}")]
    let result = try connection.post("/v1/passkeys/login/finalize", body: body, headers: headers)
    guard result.status == 200 else { return nil }
    return result.body.jsonString(named: "token")
}

/// Exactly `count` complete logins from `clients` threads against the server on `port`, the users
/// taken in turn from `firstUser` on; returns how many failed (the first failure is printed).
func logins(
    _ count: Int, port: Int, credentials: [SoftwareCredential], clients: Int, firstUser: Int
) -> Int {
    let next = Atomic<Int>(0)
    let failures = Atomic<Int>(0)
    let group = DispatchGroup()
    for _ in 0..<min(clients, max(count, 1)) {
        group.enter()
        Thread {
            defer { group.leave() }
            let origin = "http://localhost:\(port)"
            let connection = BenchConnection(port: port)
            let authenticator = SoftwareAuthenticator()
            while case let index = next.add(1, ordering: .relaxed).oldValue, index < count {
                let credential = credentials[(firstUser + index) % credentials.count]
                if let problem = login(
                    connection, origin: origin, credential: credential, authenticator: authenticator)
                {
                    if failures.add(1, ordering: .relaxed).newValue == 1 {
                        FileHandle.standardError.write(Data("bench-login: a login failed: \(problem)\n".utf8))
                    }
                }
            }
        }.start()
    }
    group.wait()
    return failures.load(ordering: .relaxed)
}

/// Runs `command` to completion; throws unless it exits 0.
func runTool(_ command: [String]) throws {
    let tool = Process()
    tool.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    tool.arguments = command
    tool.standardOutput = FileHandle.nullDevice
    tool.standardError = FileHandle.nullDevice
    try tool.run()
    tool.waitUntilExit()
    guard tool.terminationStatus == 0 else {
        throw BenchConnection.Failure(description: "\(command.joined(separator: " ")) failed")
    }
}

/// The fixed workload (--logins): the main run's users on SQLite, `warmup` logins, then `count`
/// measured ones, under callgrind (collecting only around the measured logins) when `callgrind`
/// names its output file, or with `strace -c` attached to every thread of the server around them
/// when `strace` does. Returns the number of failed logins.
func fixedRun(
    binary: String, count: Int, warmup: Int, clients: Int, threading: ServerThreading?, callgrind: String?,
    strace: String?
) throws -> Int {
    let directory = try TemporaryDirectory(prefix: "portvakt-bench-login-fixed")
    let credentials = try prepare(realUsers: 10_000, filler: 0, in: directory.path).credentials
    if let callgrind {
        // The server's pid stays valgrind's: the wrapper execs it.
        let wrapper = directory.path + "/portvakt-under-callgrind"
        let script = """
            #!/bin/sh
            exec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file='\(callgrind)' \\
              '\(binary)' "$@"

            """
        try Data(script.utf8).write(to: URL(fileURLWithPath: wrapper))
        chmod(wrapper, 0o755)
        setenv("PORTVAKT_BIN", wrapper, 1)
    }
    let port = freePort()
    let server = try startServer(
        port: port, directory: directory.path, threading: threading, startTimeout: callgrind == nil ? 20 : 600
    )
    defer { stop(server) }
    var failed = logins(warmup, port: port, credentials: credentials, clients: clients, firstUser: 0)
    let pid = String(server.pid)
    if callgrind != nil { try runTool(["callgrind_control", "--instr=on", pid]) }
    let tracer = try strace.map { try attachStrace(to: server.pid, output: $0) }
    failed += logins(count, port: port, credentials: credentials, clients: clients, firstUser: warmup)
    if callgrind != nil { try runTool(["callgrind_control", "--instr=off", pid]) }
    if let tracer {
        // SIGINT detaches strace from every thread and makes it write its table.
        tracer.interrupt()
        tracer.waitUntilExit()
    }
    return failed
}

/// Starts `strace -f -c` on the server `pid` (with -f, on every thread it has and starts), and
/// returns once strace has attached, so that it counts everything after.
func attachStrace(to pid: Int32, output: String) throws -> Process {
    let tracer = Process()
    tracer.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    tracer.arguments = ["strace", "-f", "-c", "-o", output, "-p", String(pid)]
    let messages = Pipe()
    tracer.standardError = messages
    try tracer.run()
    // "Process N attached with M threads" on its standard error, once all of them are.
    var text = ""
    let reader = messages.fileHandleForReading
    while !text.contains(" attached") {
        let chunk = reader.availableData
        guard !chunk.isEmpty else {
            throw BenchConnection.Failure(description: "strace ended before attaching: \(text)")
        }
        text += String(decoding: chunk, as: UTF8.self)
    }
    return tracer
}

if let fixedLogins {
    let failed = try fixedRun(
        binary: binary, count: fixedLogins, warmup: warmupLogins, clients: mainClients, threading: threading,
        callgrind: callgrindOutput, strace: straceOutput)
    if failed > 0 {
        FileHandle.standardError.write(Data("bench-login: \(failed) logins failed\n".utf8))
        exit(1)
    }
    print("login.fixed_logins=\(fixedLogins):logins")
    exit(0)
}

// The single-core raw rate over the same kind of data, per second of the measuring thread's own
// CPU time, so that it divides the server's CPU per login whatever else the machine runs then.
let probe = SoftwareAuthenticator().makeCredential(algorithm: .es256, rpID: "localhost", userHandle: [1])
let message = Array(repeating: UInt8(7), count: 69)
func measureRawRate() -> Double {
    Benchmarking.cpuRate(
        seconds: 2,
        RawOpenSSLVerifier.make(
            spki: probe.publicKey.publicKey.derRepresentation, digest: "SHA256",
            signature: probe.sign(message),
            data: message))
}
let rawRate = measureRawRate()

/// Microseconds as milliseconds, as the table prints them.
func milliseconds(_ microseconds: Double) -> String { String(format: "%.2f", microseconds / 1000) }

/// One raw verify's cost in µs, for the ratio below.
let rawVerifyMicroseconds = 1e6 / rawRate
var figures: [String] = [
    "login.raw_p256_verify_one_core=\(Int(rawRate)):verifies/s",
    "login.raw_p256_verify_cost=\(String(format: "%.1f", rawVerifyMicroseconds)):µs",
]
if sqliteRuns, !sidesOnly {
    // The machine's speed drifts within a run (a shared virtual machine), so each main run's ratio
    // divides by the raw cost measured right before and right after it, not by the first figure.
    var rawBefore = rawRate
    // The shipped threading (or the one chosen), then, unless one was chosen, a thread per
    // connection for comparison (Docs/configuration.md, `http.threading`): login.c16_*,
    // login.c64_*, login.c16_per_connection_*, …. Each also once more at the last client count with
    // `otherWriters` clients beside the measured ones whose renames and logouts commit too
    // (login.c64_mixed_*, login.c64_mixed_per_connection_*).
    let threadings: [(ServerThreading?, String)] =
        threading == nil ? [(nil, ""), (.perConnection, "_per_connection")] : [(threading, "")]
    for (runThreading, suffix) in threadings {
        let runs =
            mainClientCounts.map { (clients: $0, writers: 0, name: "login.c\($0)\(suffix)") }
            + (otherWriters > 0
                ? [
                    (
                        clients: mainClients, writers: otherWriters,
                        name: "login.c\(mainClients)_mixed\(suffix)"
                    )
                ] : [])
        for (clients, writers, name) in runs {
            let main = try run(
                realUsers: 10_000, clients: clients, seconds: seconds, threading: runThreading,
                writers: writers)
            let rawAfter = measureRawRate()
            let runRawRate = (rawBefore + rawAfter) / 2
            let runVerifyMicroseconds = 1e6 / runRawRate
            rawBefore = rawAfter
            figures += [
                "\(name)_logins_per_second=\(Int(main.rate)):logins/s",
                "\(name)_p50=\(milliseconds(percentile(main.latencies, 0.5))):ms",
                "\(name)_p99=\(milliseconds(percentile(main.latencies, 0.99))):ms",
                "\(name)_p999=\(milliseconds(percentile(main.latencies, 0.999))):ms",
                "\(name)_fewest_to_most_logins_per_client=\(String(format: "%.2f", main.fairness)):x",
            ]
            if writers > 0 {
                // The server's CPU then also pays for the writers' work: no per-login figures.
                figures += [
                    "\(name)_other_writes_per_second=\(Int(main.writeRate)):writes/s",
                    "\(name)_other_write_p99=\(milliseconds(percentile(main.writeLatencies, 0.99))):ms",
                ]
                continue
            }
            figures += [
                "\(name)_share_of_raw=\(String(format: "%.1f", 100 * main.rate / runRawRate)):%",
                "\(name)_server_cpu_per_login=\(Int(main.serverCPUPerLogin)):µs",
                "\(name)_raw_p256_verify_cost=\(String(format: "%.1f", runVerifyMicroseconds)):µs",
                "\(name)_server_cpu_to_raw_verify=\(String(format: "%.2f", main.serverCPUPerLogin / runVerifyMicroseconds)):x",
                "\(name)_client_cpu_per_login=\(Int(main.clientCPUPerLogin)):µs",
                "\(name)_seed_10k_users=\(String(format: "%.1f", main.seedSeconds)):s",
            ]
        }
    }
}
// Right after SQLite's main run, with its clients, duration and number of users.
if postgreSQLRuns {
    for instances in [1, 2] {
        let pg = try postgreSQLRun(
            instances: instances, users: 10_000, clients: mainClients, seconds: seconds, threading: threading,
            postmaster: postmaster)
        let name = "login.pg\(instances)"
        figures += [
            "\(name)_logins_per_second=\(Int(pg.rate)):logins/s",
            "\(name)_p50=\(milliseconds(percentile(pg.latencies, 0.5))):ms",
            "\(name)_p99=\(milliseconds(percentile(pg.latencies, 0.99))):ms",
            "\(name)_server_cpu_per_login=\(Int(pg.serverCPUPerLogin)):µs",
            "\(name)_postgres_cpu_per_login=\(Int(pg.databaseCPUPerLogin)):µs",
            "\(name)_client_cpu_per_login=\(Int(pg.clientCPUPerLogin)):µs",
            "\(name)_seed_10k_users=\(String(format: "%.1f", pg.seedSeconds)):s",
        ]
    }
}
if sqliteRuns, !mainOnly {
    let growth = try growthRun(seconds: seconds, threading: threading)
    let (smallP50, smallP99) = (median(growth.small.map(\.p50)), median(growth.small.map(\.p99)))
    let (largeP50, largeP99) = (median(growth.large.map(\.p50)), median(growth.large.map(\.p99)))
    let (quiet, busy) = try slowBankIDRun(seconds: seconds, threading: threading)
    let (quietP99, busyP99) = (median(quiet), median(busy))
    let (healthy, hanging, pending) = try slowWebhookRun(seconds: seconds, threading: threading)
    let (healthyP99, hangingP99) = (median(healthy), median(hanging))
    figures += [
        "login.p50_1k_passkeys=\(milliseconds(smallP50)):ms",
        "login.p50_1m_passkeys=\(milliseconds(largeP50)):ms",
        "login.p99_1k_passkeys=\(milliseconds(smallP99)):ms",
        "login.p99_1m_passkeys=\(milliseconds(largeP99)):ms",
        "login.p99_bankid_idle=\(milliseconds(quietP99)):ms",
        "login.p99_bankid_slow_200_orders=\(milliseconds(busyP99)):ms",
        "login.p99_growth_slow_bankid=\(String(format: "%.2f", busyP99 / max(quietP99, 1))):x",
        "login.p99_webhook_healthy=\(milliseconds(healthyP99)):ms",
        "login.p99_webhook_hanging=\(milliseconds(hangingP99)):ms",
        "login.p99_growth_hanging_webhook=\(String(format: "%.2f", hangingP99 / max(healthyP99, 1))):x",
        "login.webhook_pending_while_hanging=\(pending):deliveries",
        "login.p50_growth_1k_to_1m=\(String(format: "%.2f", largeP50 / max(smallP50, 1))):x",
    ]
}
print(figures.joined(separator: " "))
