// Passkey login benchmark: complete logins (POST login/initialize, sign the challenge, POST
// login/finalize) against the release `portvakt serve` over HTTP, SQLite on disk, from many
// concurrent clients, beside the single-core raw OpenSSL P-256 verify rate measured in the same run.
//
// Three runs, each on a fresh database:
//   main:    10,000 users with one ES256 passkey each, 64 clients  → logins/s, p50, p99
//   small:   1,000 stored passkeys, 8 clients                      → p50, p99
//   large:   1,000,000 stored passkeys (the same 1,000 real users plus filler), 8 clients
// The small/large pair shows how latency grows with the credential table (target: under 1.5x).
//   slow BankID: 1,000 users, 8 clients, measured idle and then while the BankID simulator answers
//            every call after 10 s and 200 pending orders are polled every 2 s (target: p99
//            within 1.5x: BankID never holds the threads that serve passkey logins)
//
// Usage: bench-login --binary PATH [--seconds N] [--main-only] [--threads N] [--clients N]. Prints name=value:unit pairs for record.py.
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
/// Only the main run (for profiling); the 1k/1M comparison is skipped.
var mainOnly = false
/// The server's HTTP worker threads; nil keeps the shipped default.
var threads: Int?
/// Concurrent clients of the main run (the issue's figure is 64).
var mainClients = 64
while let argument = arguments.next() {
    switch argument {
    case "--binary": binary = arguments.next() ?? binary
    case "--seconds": seconds = arguments.next().flatMap(Double.init) ?? seconds
    case "--main-only": mainOnly = true
    case "--threads": threads = arguments.next().flatMap(Int.init)
    case "--clients": mainClients = arguments.next().flatMap(Int.init) ?? mainClients
    default:
        FileHandle.standardError.write(
            Data(
                "usage: bench-login --binary PATH [--seconds N] [--main-only] [--threads N] [--clients N]\n"
                    .utf8))
        exit(2)
    }
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

/// A data directory holding `realUsers` users, each with one ES256 passkey whose key the benchmark
/// keeps, and `filler` further passkeys (random ids, one shared filler owner) that only make the
/// table large.
func prepare(realUsers: Int, filler: Int, in directory: String) throws -> [SoftwareCredential] {
    let database = try SQLiteDatabase(path: directory + "/portvakt.sqlite")
    let store = SQLStore(database: database)
    let authenticator = SoftwareAuthenticator()
    var credentials: [SoftwareCredential] = []
    let now = Date()
    for index in 0..<realUsers {
        let user = User(
            id: "bench-\(index)", username: "bench\(index)", displayName: "Bench \(index)", createdAt: now)
        let credential = authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: user.userHandle)
        try store.createUser(
            user,
            firstPasskey: StoredPasskey(
                credentialID: credential.id, userID: user.id, publicKey: credential.publicKey.encoded,
                algorithm: -7, signCount: 0, aaguid: "00000000-0000-0000-0000-000000000000",
                providerName: nil,
                transports: ["internal"], backupEligible: true, backupState: true, attestationFormat: "none",
                attestationType: "none", attestationTrusted: false, name: "Bench", createdAt: now,
                lastUsedAt: nil))
        credentials.append(credential)
    }
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
    return credentials
}

/// Starts `portvakt serve` on `port` over `directory`; returns the process.
func startServer(port: Int, directory: String, threads: Int?) throws -> PortvaktProcess {
    let config = """
        {"publicURL": "http://localhost:\(port)", "listen": {"public": {"port": \(port)}, "admin": {"port": 0}},
         \(threads.map { #""http": {"threads": \#($0)},"# } ?? "")
         "rateLimits": {"auth": {"burst": 100000, "perSecond": 100000},
                        "bankid": {"burst": 100000, "perSecond": 100000},
                        "default": {"burst": 100000, "perSecond": 100000}}}
        """
    try Data(config.utf8).write(to: URL(fileURLWithPath: directory + "/config.json"))
    let process = try PortvaktProcess(
        ["serve", "--config", directory + "/config.json"], environment: ["PORTVAKT_DATA": directory])
    _ = try process.waitForPort(listener: "public")
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

/// Runs `clients` threads logging in for `seconds`; returns (logins per second, latencies in µs).
func measure(port: Int, credentials: [SoftwareCredential], clients: Int, seconds: Double) -> (
    Double, [Double]
) {
    let origin = "http://localhost:\(port)"
    let latencies = Mutex<[Double]>([])
    let failures = Atomic<Int>(0)
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    let start = DispatchTime.now().uptimeNanoseconds
    let group = DispatchGroup()
    for clientIndex in 0..<clients {
        group.enter()
        let thread = Thread {
            defer { group.leave() }
            let connection = BenchConnection(port: port)
            let authenticator = SoftwareAuthenticator()
            var mine: [Double] = []
            var next = clientIndex
            while DispatchTime.now().uptimeNanoseconds < deadline {
                // Each client logs in as its own users, so no two clients race one credential.
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
            latencies.withLock { $0 += mine }
        }
        thread.start()
    }
    group.wait()
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let all = latencies.withLock { $0 }
    if failures.load(ordering: .relaxed) > 0 {
        FileHandle.standardError.write(
            Data("bench-login: \(failures.load(ordering: .relaxed)) logins failed\n".utf8))
    }
    return (Double(all.count) / elapsed, all.sorted())
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

/// CPU seconds (user + system) a process has used, from /proc/PID/stat.
func cpuSeconds(pid: Int32) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
    else { return 0 }
    // Fields after the command name: state is field 3, utime 14 and stime 15 (in clock ticks).
    let fields = stat[stat.index(after: end)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// CPU seconds this benchmark process (the clients) has used.
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// What one run measured: throughput, sorted latencies (µs), and CPU time per login (µs) in
/// the server and in the clients. CPU per login barely depends on what else the machine runs,
/// so it shows where the time goes even when throughput is noisy.
struct RunFigures {
    var rate: Double
    var latencies: [Double]
    var serverCPUPerLogin: Double
    var clientCPUPerLogin: Double
}

/// One full run on a fresh database: prepare, serve, warm up, measure, stop.
func run(realUsers: Int, filler: Int, clients: Int, seconds: Double, threads: Int?) throws -> RunFigures {
    let directory = try TemporaryDirectory(prefix: "portvakt-bench-login")
    let credentials = try prepare(realUsers: realUsers, filler: filler, in: directory.path)
    let port = freePort()
    let server = try startServer(port: port, directory: directory.path, threads: threads)
    defer {
        server.send(SIGTERM)
        server.wait()
    }
    _ = measure(port: port, credentials: credentials, clients: clients, seconds: 1)
    let serverBefore = cpuSeconds(pid: server.pid)
    let clientBefore = ownCPUSeconds()
    let (rate, latencies) = measure(port: port, credentials: credentials, clients: clients, seconds: seconds)
    let logins = max(1, Double(latencies.count))
    return RunFigures(
        rate: rate, latencies: latencies,
        serverCPUPerLogin: (cpuSeconds(pid: server.pid) - serverBefore) / logins * 1e6,
        clientCPUPerLogin: (ownCPUSeconds() - clientBefore) / logins * 1e6)
}

/// Passkey login latency beside a slow BankID: on one server (1,000 users, 8 clients), logins are
/// measured unloaded, then again while the simulator answers every call after 10 s and 200
/// pending BankID orders are polled every 2 s each. Returns (unloaded, loaded) sorted latencies.
func slowBankIDRun(seconds: Double, threads: Int?) throws -> ([Double], [Double]) {
    let directory = try TemporaryDirectory(prefix: "portvakt-bench-bankid-load")
    let credentials = try prepare(realUsers: 1_000, filler: 0, in: directory.path)
    let port = freePort()
    let server = try startServer(port: port, directory: directory.path, threads: threads)
    defer {
        server.send(SIGTERM)
        server.wait()
    }
    _ = measure(port: port, credentials: credentials, clients: 8, seconds: 1)
    let unloaded = measure(port: port, credentials: credentials, clients: 8, seconds: seconds).1

    // 200 orders for another device, started while BankID is quick; each keeps its binding.
    let starter = BenchConnection(port: port)
    var orders: [(id: String, binding: String)] = []
    for _ in 0..<200 {
        let started = try starter.post(
            "/v1/bankid/orders", body: Array(#"{"intent":"login","device":"other","client":"native"}"#.utf8))
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

    // 20 pollers share the orders: each order is polled about every 2 s, as a page would.
    let stop = Atomic<Bool>(false)
    let pollers = DispatchGroup()
    let allOrders = orders
    for poller in 0..<20 {
        pollers.enter()
        Thread {
            defer { pollers.leave() }
            let connection = BenchConnection(port: port)
            let mine = stride(from: poller, to: allOrders.count, by: 20).map { allOrders[$0] }
            while !stop.load(ordering: .relaxed) {
                let began = DispatchTime.now().uptimeNanoseconds
                for order in mine {
                    _ = try? connection.get(
                        "/v1/bankid/orders/\(order.id)", headers: [("Portvakt-BankID-Binding", order.binding)]
                    )
                }
                let spent = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
                if spent < 2 { usleep(UInt32((2 - spent) * 1e6)) }
            }
        }.start()
    }
    usleep(2_500_000)  // the first collects are under way and slow
    let loaded = measure(port: port, credentials: credentials, clients: 8, seconds: seconds).1
    stop.store(true, ordering: .relaxed)
    pollers.wait()
    return (unloaded, loaded)
}

// The single-core raw rate, measured first on an idle machine, over the same kind of data.
let probe = SoftwareAuthenticator().makeCredential(algorithm: .es256, rpID: "localhost", userHandle: [1])
let message = Array(repeating: UInt8(7), count: 69)
let rawRate = Benchmarking.rate(
    seconds: 2,
    RawOpenSSLVerifier.make(
        spki: probe.publicKey.publicKey.derRepresentation, digest: "SHA256", signature: probe.sign(message),
        data: message))

let main = try run(realUsers: 10_000, filler: 0, clients: mainClients, seconds: seconds, threads: threads)
let small =
    mainOnly
    ? [] : try run(realUsers: 1_000, filler: 0, clients: 8, seconds: seconds, threads: threads).latencies
let large =
    mainOnly
    ? []
    : try run(realUsers: 1_000, filler: 999_000, clients: 8, seconds: seconds, threads: threads).latencies
let latencies = main.latencies

let (quiet, busy) = mainOnly ? ([], []) : try slowBankIDRun(seconds: seconds, threads: threads)

let figures = [
    "login.logins_per_second=\(Int(main.rate)):logins/s",
    "login.p50=\(String(format: "%.2f", percentile(latencies, 0.5) / 1000)):ms",
    "login.p99=\(String(format: "%.2f", percentile(latencies, 0.99) / 1000)):ms",
    "login.raw_p256_verify_one_core=\(Int(rawRate)):verifies/s",
    "login.share_of_raw=\(String(format: "%.1f", 100 * main.rate / rawRate)):%",
    "login.server_cpu_per_login=\(Int(main.serverCPUPerLogin)):µs",
    "login.client_cpu_per_login=\(Int(main.clientCPUPerLogin)):µs",
    "login.p50_1k_passkeys=\(String(format: "%.2f", percentile(small, 0.5) / 1000)):ms",
    "login.p50_1m_passkeys=\(String(format: "%.2f", percentile(large, 0.5) / 1000)):ms",
    "login.p99_1k_passkeys=\(String(format: "%.2f", percentile(small, 0.99) / 1000)):ms",
    "login.p99_1m_passkeys=\(String(format: "%.2f", percentile(large, 0.99) / 1000)):ms",
    "login.p99_bankid_idle=\(String(format: "%.2f", percentile(quiet, 0.99) / 1000)):ms",
    "login.p99_bankid_slow_200_orders=\(String(format: "%.2f", percentile(busy, 0.99) / 1000)):ms",
    "login.p99_growth_slow_bankid=\(String(format: "%.2f", percentile(busy, 0.99) / max(percentile(quiet, 0.99), 1))):x",
    "login.p50_growth_1k_to_1m=\(String(format: "%.2f", percentile(large, 0.5) / max(percentile(small, 0.5), 1))):x",
]
print(figures.joined(separator: " "))
