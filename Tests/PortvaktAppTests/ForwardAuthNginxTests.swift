import Foundation
import Glibc
import HTTPEngine
import Kernel
import PortvaktApp
import SessionCore
import Synchronization
import TestSupport
import Testing

/// An upstream app on a free loopback port that records the Portvakt headers of every request
/// that reaches it: what the app behind the proxy would trust.
final class RecordingUpstream: Sendable {
    /// The recorded headers, shared with the server's threads.
    final class Log: Sendable {
        let entries = Mutex<[[String: String]]>([])
    }

    private let server: HTTPServer
    private let seen = Log()
    let port: Int

    static let recorded = [
        "portvakt-user-id", "portvakt-session-id", "portvakt-username", "portvakt-auth-method",
    ]

    init() throws {
        var router = Router()
        let seen = seen
        let handler: HTTPHandler = { request in
            var headers: [String: String] = [:]
            for name in Self.recorded {
                // Every copy, so a client's forged header beside the proxy's would show.
                let values = request.headers.values(for: name)
                if !values.isEmpty { headers[name] = values.joined(separator: ",") }
            }
            seen.entries.withLock { $0.append(headers) }
            return .text("app")
        }
        router.add(.GET, "/app", rateClass: .unlimited, summary: "the protected app", handler: handler)
        router.add(.POST, "/app", rateClass: .unlimited, summary: "a change in the app", handler: handler)
        var configuration = HTTPServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        server = try HTTPServer(configuration: configuration, router: router, accessLog: { _ in })
        port = try server.start()
    }

    /// The requests that reached the app, oldest first.
    var requests: [[String: String]] { seen.entries.withLock { $0 } }

    func stop() { server.shutdown(grace: 1) }
}

/// Debian's nginx (/usr/sbin/nginx, built with `http_auth_request`) in the foreground with
/// everything it writes inside a temporary directory, running the forward-auth configuration
/// Docs/operations.md shows.
final class ForwardAuthNginx {
    let directory: TemporaryDirectory
    let port: Int
    private let process: Process

    static let binary = "/usr/sbin/nginx"

    /// The configuration: the block from Docs/operations.md between the listen line and the
    /// upstream, with the Portvakt and upstream addresses filled in.
    static func configuration(directory: String, port: Int, portvakt: String, upstream: Int) -> String {
        """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log warn;
        events { worker_connections 64; }
        http {
            access_log \(directory)/access.log;
            client_body_temp_path \(directory)/client_body;
            proxy_temp_path \(directory)/proxy;
            fastcgi_temp_path \(directory)/fastcgi;
            uwsgi_temp_path \(directory)/uwsgi;
            scgi_temp_path \(directory)/scgi;
            server {
                listen 127.0.0.1:\(port);
                location = /_portvakt/check {
                    internal;
                    proxy_pass \(portvakt)/v1/auth/check;
                    proxy_pass_request_body off;
                    proxy_set_header Content-Length "";
                    proxy_set_header X-Forwarded-Method $request_method;
                    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
                }
                location / {
                    auth_request /_portvakt/check;
                    auth_request_set $pv_user $upstream_http_portvakt_user_id;
                    auth_request_set $pv_sid  $upstream_http_portvakt_session_id;
                    auth_request_set $pv_name $upstream_http_portvakt_username;
                    auth_request_set $pv_amr  $upstream_http_portvakt_auth_method;
                    proxy_set_header Portvakt-User-Id $pv_user;
                    proxy_set_header Portvakt-Session-Id $pv_sid;
                    proxy_set_header Portvakt-Username $pv_name;
                    proxy_set_header Portvakt-Auth-Method $pv_amr;
                    proxy_pass http://127.0.0.1:\(upstream);
                }
            }
        }

        """
    }

    struct NginxError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Starts nginx in front of `portvakt` (a base URL) and the upstream, and waits (at most 10 s)
    /// until it answers. A port lost to another process is retried on a new one, three times.
    init(portvakt: String, upstream: Int) throws {
        directory = try TemporaryDirectory(prefix: "portvakt-nginx")
        var lastError = ""
        for _ in 0..<3 {
            let port = try LoopbackPorts.unused()
            let path = directory.path("nginx.conf")
            try Self.configuration(
                directory: directory.path, port: port, portvakt: portvakt, upstream: upstream
            )
            .write(toFile: path, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.binary)
            process.arguments = ["-e", directory.path("error.log"), "-p", directory.path, "-c", path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle(forWritingAtPath: "/dev/null")
            try process.run()
            if Self.waitUntilListening(port: port, process: process) {
                self.port = port
                self.process = process
                return
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            lastError = (try? String(contentsOfFile: directory.path("error.log"), encoding: .utf8)) ?? ""
            guard lastError.contains("Address already in use") else { break }
        }
        throw NginxError("nginx did not start listening within 10 s; its error log:\n\(lastError)")
    }

    /// Whether nginx accepts connections on `port` within 10 s (false at once if it exited).
    private static func waitUntilListening(port: Int, process: Process) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        let client = HTTPTestClient(timeout: 2)
        while Date() < deadline, process.isRunning {
            if (try? client.send(url: "http://127.0.0.1:\(port)/_nginx_probe")) != nil { return true }
            usleep(50_000)
        }
        return false
    }

    /// nginx's error log, for failure messages.
    var errorLog: String { (try? String(contentsOfFile: directory.path("error.log"), encoding: .utf8)) ?? "" }

    /// Stops nginx (SIGTERM: a fast shutdown) and waits for it, killing it after 5 s.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// Forward auth through a real nginx (`auth_request`) in front of a recording upstream: the app
/// sees Portvakt's user headers on every signed-in request and never sees a request Portvakt
/// refused. Not skipped when nginx is missing: `make test` installs it (Tools/install-deps.sh).
@Suite("Forward auth through nginx auth_request", .serialized)
struct ForwardAuthNginxTests {
    @Test("nginx lets signed-in requests through with Portvakt's headers, and nothing else")
    func throughNginx() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: ForwardAuthNginx.binary),
            "nginx is missing: run Tools/install-deps.sh test (Debian's nginx package)")
        let server = try TestServer()
        defer { server.stop() }
        let upstream = try RecordingUpstream()
        defer { upstream.stop() }
        let nginx = try ForwardAuthNginx(portvakt: server.publicURL, upstream: upstream.port)
        defer { nginx.stop() }
        let client = HTTPTestClient(timeout: 10)
        let direct = HTTPTestClient(timeout: 10)
        let app = "http://127.0.0.1:\(nginx.port)/app"
        let cookieName = server.server.configuration.sessionCookieName
        var expectedRequests = 0

        /// Sends through nginx and checks the status and that the upstream's count moved only
        /// for an admitted request; returns what the upstream saw when it did.
        @discardableResult
        func through(
            _ headers: [(String, String)], method: String = "GET", status: Int, _ comment: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) throws -> [String: String]? {
            let response = try client.send(
                method: method, url: app, headers: headers, body: method == "POST" ? [] : nil)
            #expect(
                response.status == status,
                "\(comment): nginx answered \(response.status), expected \(status); nginx error log:\n\(nginx.errorLog)",
                sourceLocation: sourceLocation)
            if status == 200 { expectedRequests += 1 }
            let requests = upstream.requests
            #expect(
                requests.count == expectedRequests,
                "\(comment): the upstream has seen \(requests.count) requests, expected \(expectedRequests)",
                sourceLocation: sourceLocation)
            return status == 200 && requests.count == expectedRequests ? requests.last : nil
        }

        // A native bearer session: the four headers, the username percent-encoded.
        let ada = try server.makeUser(username: "åda")
        let bearer = try server.signIn(ada)
        let seenBearer = try through([("Authorization", "Bearer \(bearer.token)")], status: 200, "bearer")
        #expect(
            seenBearer == [
                "portvakt-user-id": ada.id, "portvakt-session-id": bearer.session.id,
                "portvakt-username": "%C3%A5da", "portvakt-auth-method": "passkey",
            ])

        // A web cookie session, with a forged user id from the client: nginx overwrites it.
        let bob = try server.makeUser(username: "bob")
        let web = try server.signIn(bob, as: .web)
        let cookie = ("Cookie", "\(cookieName)=\(web.token)")
        let seenCookie = try through(
            [cookie, ("Portvakt-User-Id", ada.id), ("Portvakt-Username", "ada")], status: 200,
            "cookie + forged id")
        #expect(
            seenCookie == [
                "portvakt-user-id": bob.id, "portvakt-session-id": web.session.id,
                "portvakt-username": "bob", "portvakt-auth-method": "passkey",
            ])

        // Refused: the upstream sees none of these.
        try through([], status: 401, "no token")
        try through(
            [("Portvakt-User-Id", ada.id), ("Portvakt-Session-Id", bearer.session.id)], status: 401,
            "forged headers only")
        try through([("Authorization", "Bearer pvs_garbage")], status: 401, "garbage bearer")
        try through([("Cookie", "\(cookieName)=garbage")], status: 401, "garbage cookie")
        // A cookie change from a foreign origin; the same from the public origin passes.
        try through(
            [cookie, ("Origin", "https://evil.example")], method: "POST", status: 401,
            "cross-site cookie POST")
        try through(
            [cookie, ("Origin", server.server.configuration.publicOrigin)], method: "POST", status: 200,
            "same-origin cookie POST")

        // Revoked by logout, straight at Portvakt.
        let carol = try server.signIn(try server.makeUser(username: "carol"))
        try through([("Authorization", "Bearer \(carol.token)")], status: 200, "carol before logout")
        let logout = try direct.send(
            method: "POST", url: "\(server.publicURL)/v1/logout",
            headers: [("Authorization", "Bearer \(carol.token)")], body: [])
        #expect(logout.status == 204)
        try through([("Authorization", "Bearer \(carol.token)")], status: 401, "revoked session")

        // Disabled through the admin API.
        let dave = try server.makeUser(username: "dave")
        let daveSession = try server.signIn(dave)
        try through([("Authorization", "Bearer \(daveSession.token)")], status: 200, "dave before disabling")
        let disable = try direct.send(
            method: "PATCH", url: "\(server.adminURL)/admin/v1/users/\(dave.id)",
            headers: [
                ("Authorization", "Bearer \(server.adminToken)"), ("Content-Type", "application/json"),
            ],
            body: Array(#"{"disabled":true}"#.utf8))
        #expect(disable.status == 200)
        try through(
            [("Authorization", "Bearer \(daveSession.token)")], status: 401, "disabled user's session")

        // Portvakt gone: nginx fails closed with its own 500, and the app sees nothing.
        server.stop()
        try through([("Authorization", "Bearer \(bearer.token)")], status: 500, "Portvakt stopped")
    }
}
