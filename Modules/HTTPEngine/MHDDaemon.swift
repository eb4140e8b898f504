import CGnuTLS
import CMicroHTTPD
import CryptoCore
import Dispatch
import Glibc
import Kernel
import Synchronization

/// One request's state between libmicrohttpd's calls: MHD calls the access handler once when
/// the headers are in, again for each piece of body, and a last time when the body is complete.
/// It lives in MHD's `req_cls` slot and is released in the completion callback, which MHD calls
/// for every request it started, including aborted uploads and timed-out connections.
final class RequestContext {
    var body: [UInt8] = []
    var bodyTooLarge = false
    var discardedBytes = 0
    var answered = false
    /// The header fields, read once on the first call (the framing check needs them before the
    /// body, the pipeline after it).
    var headers = HTTPHeaders()
    /// Set when the framing check refused the request: answered at once, connection closed.
    var refusal: HTTPError?
    /// Set while an async handler runs for this request (the connection suspended, `.workerPool`).
    var deferred: DeferredResponse?
    let startNanoseconds: UInt64

    init(startNanoseconds: UInt64) {
        self.startNanoseconds = startNanoseconds
    }
}

/// An async handler's response, handed from the task that ran the handler (or from shutdown,
/// with a 503) to the MHD thread that sends it. Its fields are only touched under
/// `ConnectionHandler.deferred`'s lock.
final class DeferredResponse: @unchecked Sendable {
    // @unchecked: a `.suspended` connection is MHD's pointer, used only to resume, under the lock,
    // while the connection is suspended (MHD cannot close a suspended connection before we
    // resume it).
    /// How the sending thread waits for the response.
    enum Waiter {
        /// The connection is suspended (`.workerPool`): resuming it makes MHD call the access
        /// handler again, on a worker thread, to send the response.
        case suspended(OpaquePointer)
        /// The connection's own thread is blocked on the semaphore (`.threadPerConnection`).
        case blocked(DispatchSemaphore)
    }

    let waiter: Waiter
    var prepared: PreparedResponse?

    init(_ waiter: Waiter) {
        self.waiter = waiter
    }

    /// Tells the sending side that `prepared` is set.
    func wake() {
        switch waiter {
        case .suspended(let connection): MHD_resume_connection(connection)
        case .blocked(let semaphore): semaphore.signal()
        }
    }
}

/// Where async handlers run: started inside `InlineExecutor.drain` on the thread that took the
/// request, so a handler runs there up to its first await; a continuation resumed on a thread of
/// ours that drains (the SQLite writer's) runs there too, and any other (a BankID call's, resumed
/// from libcurl's thread) on four threads of their own, never on Swift's global executor (which a
/// blocking caller elsewhere in the process can hold). A handler holds one of those four only
/// between awaits (parsing, a storage call), never while BankID answers.
enum AsyncHandlerExecutor {
    static let shared = InlineExecutor(fallback: OffPoolExecutor(name: "http-async", threads: 4))
}

/// The threads a pool worker hands `Router.addBlocking` handlers to: threads that may wait (for a
/// commit), each running the handler and then, inside `InlineExecutor.drain`, the rest of its
/// request's task (the answer, the connection's resumption), so the request is handed over twice,
/// as a suspended sign-in is. Four, started by the first such request: the waits they are for
/// are SQLite's, whose writes go one at a time anyway, so more threads would only queue there.
enum BlockingHandlerThreads {
    /// Started by the first job, so a scrape of `queuedCount` starts nothing.
    private static let started = Locked<WorkerThreads<Void>?>(nil)

    /// Jobs waiting for one of the threads.
    static var queuedCount: Int { started.withLock { $0?.queuedCount ?? 0 } }

    /// `handler(request)`, run on one of the threads.
    static func run(_ handler: @escaping HTTPHandler, _ request: HTTPRequest) async throws -> HTTPResponse {
        try await withCheckedThrowingContinuation { continuation in
            submit { continuation.resume(with: Result { try handler(request) }) }
        }
    }

    /// `handler(request)`, started on one of the threads as a task of its own, which runs there
    /// until it first awaits something (a handler that threw `InlineExecutor.WouldBlock` on a
    /// worker, run again). Not the calling task moved there: its resumption could still run on
    /// the worker, were it resumed before it had suspended.
    static func run(_ handler: @escaping AsyncHTTPHandler, _ request: HTTPRequest) async throws
        -> HTTPResponse
    {
        try await withCheckedThrowingContinuation { continuation in
            submit {
                Task(executorPreference: AsyncHandlerExecutor.shared) {
                    do {
                        continuation.resume(returning: try await handler(request))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        }
    }

    /// Runs `job` on one of the threads inside `InlineExecutor.drain(mayBlock: true)`.
    private static func submit(_ job: @escaping @Sendable () -> Void) {
        let threads = started.withLock { threads in
            if let threads { return threads }
            let made = WorkerThreads<Void>(name: "http-blocking", threads: 4, makeWorker: {})
            threads = made
            return made
        }
        let accepted = threads.submit { _ in InlineExecutor.drain(mayBlock: true, job) }
        // The threads are never stopped and the queue has no bound.
        precondition(accepted, "the blocking handlers' threads refused a job")
    }
}

extension HTTPServer {
    /// Async handlers' jobs waiting for one of their four threads, across every server in the
    /// process (for /metrics: a queue that stays up means handlers block those threads).
    public static var asyncHandlerJobsQueued: Int { AsyncHandlerExecutor.shared.fallback.queuedCount }

    /// `Router.addBlocking` handlers waiting for one of their four threads, across every server
    /// in the process (for /metrics: a queue that stays up means the waits they are for are long).
    public static var blockingHandlersQueued: Int { BlockingHandlerThreads.queuedCount }
}

/// The connections still owing their current request, each with the monotonic time it must have
/// arrived by: libmicrohttpd 0.9.75's only timeout is an idle one that every received byte
/// restarts, so a whole-request bound has to be kept here and enforced from outside MHD.
///
/// Each connection's deadline is an atomic in a record of its own, which MHD hands back with the
/// connection (its socket context): a request starts and ends its deadline without a lock that
/// every worker thread would share. The lock is taken only as connections open and close, and by
/// the watchdog.
final class RequestDeadlines: Sendable {
    /// One open connection: its socket and its deadline in monotonic nanoseconds (0 while its
    /// request is being answered: the idle timeout covers slow readers).
    final class Slot: Sendable {
        let socket: Int32
        let deadline: Atomic<UInt64>

        init(socket: Int32, deadline: UInt64) {
            self.socket = socket
            self.deadline = Atomic(deadline)
        }
    }

    /// Keyed by the slot's identity. The lock also orders a watchdog's shutdown() before MHD
    /// closes the descriptor: MHD reports a close (removing the slot under this lock) before it
    /// closes the socket, so a descriptor in the table is never one already reused.
    private let table = Locked<[ObjectIdentifier: Slot]>([:])
    private let limit: UInt64
    private let clock = SystemMonotonicClock()

    init(seconds: Int) {
        limit = UInt64(seconds) * 1_000_000_000
    }

    /// A connection was accepted: its first request is due within the limit. The slot goes into
    /// MHD's socket context for the connection (retained until `closed`).
    func opened(_ connection: OpaquePointer, socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        let socket = cmhd_connection_socket(connection)
        guard socket >= 0, let socketContext else { return }
        let slot = Slot(socket: socket, deadline: clock.nanoseconds() + limit)
        table.withLock { $0[ObjectIdentifier(slot)] = slot }
        socketContext.pointee = Unmanaged.passRetained(slot).toOpaque()
    }

    /// The request's header block and body are all in: no deadline while it is answered.
    func received(_ connection: OpaquePointer) {
        Self.slot(of: connection)?.deadline.store(0, ordering: .relaxed)
    }

    /// A response was sent: the next request on this connection is due within the limit.
    func responded(_ connection: OpaquePointer) {
        Self.slot(of: connection)?.deadline.store(clock.nanoseconds() + limit, ordering: .relaxed)
    }

    /// MHD is closing the connection (it closes the socket after this returns).
    func closed(_ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let socketContext, let pointer = socketContext.pointee else { return }
        socketContext.pointee = nil
        let slot = Unmanaged<Slot>.fromOpaque(pointer)
        _ = table.withLock { $0.removeValue(forKey: ObjectIdentifier(slot.takeUnretainedValue())) }
        slot.release()
    }

    /// The connection's slot, from MHD's socket context; nil for one never tracked.
    private static func slot(of connection: OpaquePointer) -> Slot? {
        guard let pointer = cmhd_socket_context(connection) else { return nil }
        return Unmanaged<Slot>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Shuts down every connection past its deadline; MHD then sees the socket end, closes the
    /// connection and reports it closed. Returns how many were shut down.
    @discardableResult
    func enforce() -> Int {
        let now = clock.nanoseconds()
        return table.withLock { table in
            var count = 0
            for slot in table.values {
                let deadline = slot.deadline.load(ordering: .relaxed)
                guard deadline != 0, deadline <= now else { continue }
                // Only if the request has not arrived (or been answered) meanwhile: a worker that
                // stored another deadline since the load wins.
                guard
                    slot.deadline.compareExchange(expected: deadline, desired: 0, ordering: .relaxed)
                        .exchanged
                else { continue }
                // shutdown(), not close(): the descriptor stays MHD's, and a poll on it wakes.
                Glibc.shutdown(slot.socket, Int32(SHUT_RDWR))
                count += 1
            }
            return count
        }
    }
}

/// The state the C callbacks reach through their `cls` pointer: the pipeline, the body limit,
/// and the count of requests between first call and completion, which shutdown waits on.
final class ConnectionHandler: Sendable {
    let pipeline: RequestPipeline
    let maxBodyBytes: Int
    let maxURIBytes: Int
    let maxHeaderBytes: Int
    /// Past this much discarded body we stop draining an oversized upload and drop the
    /// connection: the 413 is owed to honest clients, not to an endless stream.
    let discardLimit: Int
    let inFlight = Atomic<Int>(0)
    let draining = Atomic<Bool>(false)
    /// The configured Cache-Control as a C string, converted once.
    let cacheControl: ContiguousArray<CChar>
    /// Requests whose async handler is running, their connection suspended or their thread
    /// blocked; the lock also orders every suspend before its resume, and every wake-up before
    /// the daemon stops.
    private let deferred = Locked<(table: [ObjectIdentifier: DeferredResponse], stopping: Bool)>(([:], false))

    /// Whether every connection has a thread of its own (`.threadPerConnection`): async handlers
    /// then block that thread instead of suspending the connection.
    let ownThreadPerConnection: Bool
    /// The whole-request deadline of every open connection.
    let deadlines: RequestDeadlines

    init(pipeline: RequestPipeline) {
        self.deadlines = RequestDeadlines(seconds: pipeline.configuration.requestDeadlineSeconds)
        self.pipeline = pipeline
        self.ownThreadPerConnection = pipeline.configuration.threading == .threadPerConnection
        self.cacheControl = pipeline.configuration.apiCacheControl.utf8CString
        self.maxBodyBytes = pipeline.configuration.maxBodyBytes
        self.maxURIBytes = pipeline.configuration.maxURIBytes
        self.maxHeaderBytes = pipeline.configuration.maxHeaderBytes
        self.discardLimit = max(1 << 20, pipeline.configuration.maxBodyBytes * 16)
    }

    /// The access handler (MHD_AccessHandlerCallback), called on an MHD worker thread.
    func handle(
        connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
        version: UnsafePointer<CChar>, uploadData: UnsafePointer<CChar>?,
        uploadDataSize: UnsafeMutablePointer<Int>,
        requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let existing = requestSlot.pointee else {
            // First call: headers only. Track the request before anything can fail.
            let context = RequestContext(startNanoseconds: pipeline.clock.nanoseconds())
            requestSlot.pointee = Unmanaged.passRetained(context).toOpaque()
            inFlight.add(1, ordering: .relaxed)
            context.headers = Self.headers(of: connection)
            if let problem = sizeRefusal(connection: connection, url: url, headers: context.headers) {
                // Our limits sit below MHD's buffer, so a long target or header block gets this
                // problem+json rather than MHD's own HTML page.
                context.refusal = problem
                return answer(connection: connection, url: url, method: method, context: context)
            }
            switch RequestFraming.check(version: String(cString: version), headers: context.headers) {
            case .refused(let problem):
                // Framing MHD and a proxy could read differently (RFC 9112 §6): answered before
                // a byte of body is read, and the connection closed, so nothing behind the
                // header block is ever taken as a request.
                context.refusal = problem
                return answer(connection: connection, url: url, method: method, context: context)
            case .acceptable(let length?) where length > UInt64(maxBodyBytes):
                // Refuse before reading a byte: MHD skips the body and closes after the 413
                // (and never sends `100 Continue`).
                context.bodyTooLarge = true
                return answer(connection: connection, url: url, method: method, context: context)
            case .acceptable:
                break
            }
            // Everything else is answered on a later call: a response queued on this first call
            // makes MHD close the connection (it cannot know the body was read), which would
            // cost every client its keep-alive.
            return .YES
        }
        let context = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()
        let size = uploadDataSize.pointee
        if size > 0 {
            // Every byte MHD offers must be consumed (size set to 0), or it calls again forever.
            uploadDataSize.pointee = 0
            if context.answered { return .YES }
            if context.bodyTooLarge || context.body.count + size > maxBodyBytes {
                // A chunked body has no length up front: it is found too large while streaming.
                // Keep reading (and dropping) so the 413 can be sent once it ends.
                context.bodyTooLarge = true
                context.body = []
                context.discardedBytes += size
                return context.discardedBytes > discardLimit ? .NO : .YES
            }
            if let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: size) { bytes in
                    context.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: size))
                }
            }
            return .YES
        }
        if context.answered {
            // Called again after a resume: the async handler's response is ready.
            if let pending = context.deferred, let prepared = deferred.withLock({ _ in pending.prepared }) {
                context.deferred = nil
                return queue(prepared, on: connection)
            }
            return .YES
        }
        return answer(connection: connection, url: url, method: method, context: context)
    }

    /// Suspends the connection and runs `work` (an async handler) on the handlers' executor, so no
    /// MHD worker waits for it; when it returns, the response is stored and the connection
    /// resumed, and MHD calls the access handler again to send it.
    private func suspend(
        _ connection: OpaquePointer, context: RequestContext,
        work: @escaping @Sendable () async -> PreparedResponse
    ) -> MHD_Result {
        let pending = DeferredResponse(.suspended(connection))
        guard start(work, answering: pending, before: { MHD_suspend_connection(connection) }) else {
            return queue(pipeline.unavailable(requestID: RequestID.generate()), on: connection)
        }
        context.deferred = pending
        return .YES
    }

    /// Runs an async handler's work and blocks this thread until it is done or shutdown answers
    /// it. Only with a thread per connection, where the thread is this connection's alone, so no
    /// other client waits behind it; MHD's suspend/resume is not used in that mode because a
    /// resumed connection was left unanswered there (libmicrohttpd 0.9.75).
    private func wait(for work: @escaping @Sendable () async -> PreparedResponse) -> PreparedResponse {
        let done = DispatchSemaphore(value: 0)
        let pending = DeferredResponse(.blocked(done))
        // The handler runs here up to its first await (the drain's end), and this thread, the
        // connection's own, may wait for what it would otherwise await (its commit).
        var accepted = false
        InlineExecutor.drain(mayBlock: true) { accepted = start(work, answering: pending, before: {}) }
        guard accepted else { return pipeline.unavailable(requestID: RequestID.generate()) }
        done.wait()
        // Set before the wake-up, by the handler's task or by shutdown.
        return deferred.withLock { _ in pending.prepared }
            ?? pipeline.unavailable(requestID: RequestID.generate())
    }

    /// Registers `pending` (running `park` under the lock, so its wake-up cannot come first) and
    /// starts `work` on `AsyncHandlerExecutor`, not Swift's global one: whatever else blocks that
    /// executor's threads must not stall a waiting request. False, with nothing started, once the
    /// daemon is stopping.
    private func start(
        _ work: @escaping @Sendable () async -> PreparedResponse, answering pending: DeferredResponse,
        before park: () -> Void
    ) -> Bool {
        let accepted = deferred.withLock { state in
            guard !state.stopping else { return false }
            state.table[ObjectIdentifier(pending)] = pending
            park()
            return true
        }
        guard accepted else { return false }
        // Always called inside the request's `InlineExecutor.drain` (`answer` on a pool's worker,
        // `wait(for:)` on a connection's own thread), which runs the task's start at its end.
        Task(executorPreference: AsyncHandlerExecutor.shared) { [self] in
            let prepared = await work()
            deferred.withLock { state in
                // Gone from the table: shutdown already answered it.
                guard state.table.removeValue(forKey: ObjectIdentifier(pending)) != nil else { return }
                pending.prepared = prepared
                pending.wake()
            }
        }
        return true
    }

    /// Answers every request still waiting for its async handler with 503 and wakes its sender,
    /// and refuses new ones: MHD must not be stopped with a connection still suspended, nor wait
    /// for a blocked connection thread.
    func answerAllForShutdown() {
        let pipeline = pipeline
        deferred.withLock { state in
            state.stopping = true
            for pending in state.table.values {
                pending.prepared = pipeline.unavailable(requestID: RequestID.generate())
                pending.wake()
            }
            state.table.removeAll()
        }
    }

    /// The completion callback (MHD_RequestCompletedCallback): frees the request's state and
    /// starts the connection's deadline for its next request.
    func completed(connection: OpaquePointer?, requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        if let connection { deadlines.responded(connection) }
        guard let requestSlot, let existing = requestSlot.pointee else { return }
        Unmanaged<RequestContext>.fromOpaque(existing).release()
        requestSlot.pointee = nil
        inFlight.subtract(1, ordering: .relaxed)
    }

    private func answer(
        connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
        context: RequestContext
    ) -> MHD_Result {
        context.answered = true
        // The whole request is in (or refused before its body): the deadline no longer applies.
        deadlines.received(connection)
        var query: [String: String] = [:]
        withUnsafeMutablePointer(to: &query) { pointer in
            _ = MHD_get_connection_values(
                connection, .GET_ARGUMENT_KIND,
                { cls, _, key, value in
                    guard let cls, let key else { return .YES }
                    // The shim keeps arguments raw (see cmhd_unescape_identity); decode here.
                    guard let name = PercentDecoding.decode(String(cString: key), plusAsSpace: true) else {
                        return .YES
                    }
                    let decoded =
                        value.flatMap { PercentDecoding.decode(String(cString: $0), plusAsSpace: true) } ?? ""
                    let query = cls.assumingMemoryBound(to: [String: String].self)
                    if query.pointee[name] == nil { query.pointee[name] = decoded }
                    return .YES
                }, pointer)
        }
        let peer =
            cmhd_client_address(connection).flatMap { IPAddress(socketAddress: $0) } ?? IPAddress(ipv4: 0)
        let incoming = IncomingRequest(
            methodToken: String(cString: method), path: String(cString: url), query: query,
            headers: context.headers, body: context.body, peer: peer, bodyTooLarge: context.bodyTooLarge,
            refusal: context.refusal, startNanoseconds: context.startNanoseconds)
        context.body = []
        context.headers = HTTPHeaders()
        if ownThreadPerConnection {
            switch pipeline.respond(to: incoming, closeConnection: draining.load(ordering: .relaxed)) {
            case .now(let prepared): return queue(prepared, on: connection)
            case .later(let work): return queue(wait(for: work), on: connection)
            }
        }
        // A pool's worker serves many connections: everything it runs for this request, a
        // synchronous handler too, runs where `InlineExecutor.currentThreadMayBlock` is false, so
        // code that would wait for a commit suspends (`GroupCommit.writeAsync`) or throws
        // `WouldBlock`; the task of an async route starts at the drain's end.
        var result = MHD_Result.NO
        InlineExecutor.drain(mayBlock: false) {
            switch pipeline.respond(to: incoming, closeConnection: draining.load(ordering: .relaxed)) {
            case .now(let prepared): result = queue(prepared, on: connection)
            case .later(let work): result = suspend(connection, context: context, work: work)
            }
        }
        return result
    }

    /// 414 or 431 when the request target or the header block is over its limit, else nil.
    private func sizeRefusal(connection: OpaquePointer, url: UnsafePointer<CChar>, headers: HTTPHeaders)
        -> HTTPError?
    {
        // MHD hands over the path without its query: add the arguments back (`?`, `=` and `&`
        // counted), without building Swift strings for them.
        var targetBytes = strlen(url)
        withUnsafeMutablePointer(to: &targetBytes) { pointer in
            _ = MHD_get_connection_values(
                connection, .GET_ARGUMENT_KIND,
                { cls, _, key, value in
                    guard let cls, let key else { return .YES }
                    cls.assumingMemoryBound(to: Int.self).pointee +=
                        strlen(key) + (value.map { strlen($0) } ?? 0) + 2
                    return .YES
                }, pointer)
        }
        if targetBytes > maxURIBytes {
            return HTTPError(
                ProblemDetails(
                    status: 414, code: "request.uri_too_long", title: "URI too long",
                    detail: "The request target exceeds \(maxURIBytes) bytes.",
                    extensions: ["limit": .int(maxURIBytes)]))
        }
        let headerBytes = headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
        if headerBytes > maxHeaderBytes {
            return HTTPError(
                ProblemDetails(
                    status: 431, code: "request.header_fields_too_large",
                    title: "Request header fields too large",
                    detail: "The request's header block exceeds \(maxHeaderBytes) bytes.",
                    extensions: ["limit": .int(maxHeaderBytes)]))
        }
        return nil
    }

    /// Every header field of the connection's request, in order, repeated names kept.
    private static func headers(of connection: OpaquePointer) -> HTTPHeaders {
        var headers = HTTPHeaders()
        withUnsafeMutablePointer(to: &headers) { pointer in
            _ = MHD_get_connection_values(
                connection, .HEADER_KIND,
                { cls, _, key, value in
                    guard let cls, let key else { return .YES }
                    let headers = cls.assumingMemoryBound(to: HTTPHeaders.self)
                    headers.pointee.add(String(cString: key), value.map { String(cString: $0) } ?? "")
                    return .YES
                }, pointer)
        }
        return headers
    }

    /// Hands a response to MHD, which copies the body and sends it (no body for HEAD), adding
    /// the headers every response carries.
    private func queue(_ prepared: PreparedResponse, on connection: OpaquePointer) -> MHD_Result {
        let response = prepared.response
        // MHD_NO makes MHD close the connection with nothing sent: the dropped link asked for.
        if response.dropsConnection { return .NO }
        let created = response.body.withUnsafeBytes { raw in
            MHD_create_response_from_buffer(
                raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse = created else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        for field in response.headers {
            // MHD refuses fields with CR/LF, so a handler cannot split the response.
            field.name.withCString { name in
                field.value.withCString { value in _ = MHD_add_response_header(mhdResponse, name, value) }
            }
        }
        prepared.requestID.withCString { value in
            _ = MHD_add_response_header(mhdResponse, StaticHeader.requestID.cString, value)
        }
        for header in StaticHeader.security {
            _ = MHD_add_response_header(mhdResponse, header.name.cString, header.value.cString)
        }
        if prepared.addDefaultCSP {
            _ = MHD_add_response_header(
                mhdResponse, StaticHeader.csp.name.cString, StaticHeader.csp.value.cString)
        }
        if prepared.addDefaultCacheControl {
            cacheControl.withUnsafeBufferPointer { value in
                _ = MHD_add_response_header(mhdResponse, StaticHeader.cacheControl.cString, value.baseAddress)
            }
        }
        return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    }
}

/// The header names and values every response carries, as C strings that live in the binary:
/// converting Swift strings (most of these are short enough to be stored inline, not as C
/// strings) would cost an allocation per header per response.
enum StaticHeader {
    static let requestID: StaticString = "X-Request-Id"
    static let cacheControl: StaticString = "Cache-Control"
    static let csp: (name: StaticString, value: StaticString) = (
        "Content-Security-Policy", "frame-ancestors 'none'"
    )
    static let security: [(name: StaticString, value: StaticString)] = [
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
    ]
}

extension StaticString {
    /// The literal's bytes as a C string (literals are stored NUL-terminated in the binary).
    var cString: UnsafePointer<CChar> { UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self) }
}

/// Owns the `MHD_Daemon`: started in `init`, stopped in `deinit` (which waits for MHD's threads).
final class MHDDaemon: @unchecked Sendable {
    // @unchecked: the pointer is only used by `quiesce` and `deinit`, which HTTPServer
    // serialises under its lock; MHD's own threads never see this object.
    private let daemon: OpaquePointer
    private let retainedHandler: Unmanaged<ConnectionHandler>
    /// The port bound, which differs from the one asked for when that was 0.
    let port: Int
    private var listenSocket: Int32 = -1
    /// A worker pool's listening socket and accepting thread; nil with a thread per connection,
    /// where MHD listens itself.
    private let acceptor: ConnectionAcceptor?
    /// Shuts down connections past their request deadline, four times a second.
    private let watchdog: any DispatchSourceTimer
    private let watchdogQueue = DispatchQueue(label: "portvakt.http.deadlines")

    init(configuration: HTTPServerConfiguration, handler: ConnectionHandler) throws(HTTPServerError) {
        var storage = sockaddr_storage()
        try Self.fill(&storage, host: configuration.host, port: configuration.port)
        let address = Self.describe(host: configuration.host, port: configuration.port)
        // A worker pool listens through its own acceptor, bound before MHD starts so that a taken
        // port fails the same way as MHD's own bind does.
        var acceptor: ConnectionAcceptor?
        if configuration.threading == .workerPool {
            do {
                acceptor = try ConnectionAcceptor(address: storage)
            } catch {
                throw Self.listenFailure(code: error.errno, address: address, configuration: configuration)
            }
        }
        let retained = Unmanaged.passRetained(handler)
        let (started, failure) = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                // errno is read at once: anything Swift runs after the call may overwrite it.
                let daemon = Self.start(address, configuration: configuration, context: retained.toOpaque())
                return (daemon, errno)
            }
        }
        guard let started else {
            retained.release()
            acceptor?.close()
            throw Self.listenFailure(code: failure, address: address, configuration: configuration)
        }
        daemon = started
        retainedHandler = retained
        self.acceptor = acceptor
        let daemonAddress = UInt(bitPattern: started)
        acceptor?.start { client, peer, length in
            // MHD owns the descriptor from here, and closes it itself when it refuses it (a
            // limit reached). The daemon outlives the acceptor (`deinit` closes it first).
            _ = MHD_add_connection(OpaquePointer(bitPattern: daemonAddress), client, peer, length)
        }
        port = acceptor?.port ?? Int(cmhd_bound_port(started))
        // The deadline holds to within this period (plus MHD noticing the socket end, immediate).
        let deadlines = handler.deadlines
        watchdog = DispatchSource.makeTimerSource(queue: watchdogQueue)
        watchdog.schedule(deadline: .now() + .milliseconds(250), repeating: .milliseconds(250))
        watchdog.setEventHandler { deadlines.enforce() }
        watchdog.resume()
    }

    /// Why the server could not listen on `address`, from the failing call's errno.
    private static func listenFailure(
        code failure: Int32, address: String, configuration: HTTPServerConfiguration
    ) -> HTTPServerError {
        if failure == EADDRINUSE {
            // Usually a second instance started on the same port: name the address plainly,
            // so the operator does not go looking at TLS files or permissions.
            return HTTPServerError(
                .addressInUse, "\(address) is already in use: another process is listening there")
        }
        // Never the PEM text itself: the key is a secret.
        let what = configuration.tls == nil ? "" : " or refused the TLS key, certificate or client CA"
        return HTTPServerError(
            .startFailed,
            "libmicrohttpd could not listen on \(address)\(what) (\(String(cString: strerror(failure))))")
    }

    /// Starts MHD with the configuration's threading and TLS; nil when MHD refuses.
    private static func start(
        _ address: UnsafePointer<sockaddr>, configuration: HTTPServerConfiguration,
        context: UnsafeMutableRawPointer
    ) -> OpaquePointer? {
        // MHD_USE_ITC lets MHD_quiesce_daemon wake the workers. poll(), not epoll: with epoll and
        // its own threads, MHD_quiesce_daemon races the workers removing the listening socket from
        // their epoll sets, and the loser calls MHD_PANIC (an open libmicrohttpd defect, seen here
        // as "Failed to remove listen FD from epoll set" aborting a graceful shutdown). The
        // poll() side of quiescing only raises a flag and wakes the worker. (Per connection, poll()
        // rather than select() too: select cannot watch a descriptor past FD_SETSIZE.)
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_POLL.rawValue | MHD_USE_ITC.rawValue
        var poolSize = UInt32(configuration.threads)
        switch configuration.threading {
        case .workerPool:
            // Async routes (BankID start and cancel) park their connection instead of a worker.
            // The listening socket is ours (`ConnectionAcceptor`), which spreads connections over
            // the workers evenly.
            flags |= MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_NO_LISTEN_SOCKET.rawValue
        case .threadPerConnection:
            // No suspend/resume: an async route blocks its connection's own thread (see
            // `ConnectionHandler.wait(for:)`). MHD refuses a worker pool beside this mode.
            flags |= MHD_USE_THREAD_PER_CONNECTION.rawValue
            poolSize = 0
        }
        let access: MHD_AccessHandlerCallback = {
            cls, connection, url, method, version, uploadData, uploadDataSize, requestSlot in
            guard let cls, let connection, let url, let method, let version, let uploadDataSize,
                let requestSlot
            else {
                return .NO
            }
            return Unmanaged<ConnectionHandler>.fromOpaque(cls).takeUnretainedValue().handle(
                connection: connection, url: url, method: method, version: version, uploadData: uploadData,
                uploadDataSize: uploadDataSize, requestSlot: requestSlot)
        }
        let completed: MHD_RequestCompletedCallback = { cls, connection, requestSlot, _ in
            guard let cls else { return }
            Unmanaged<ConnectionHandler>.fromOpaque(cls).takeUnretainedValue().completed(
                connection: connection, requestSlot: requestSlot)
        }
        // Every connection's start and close, for the request deadline.
        let track: MHD_NotifyConnectionCallback = { cls, connection, socketContext, code in
            guard let cls, let connection else { return }
            let deadlines = Unmanaged<ConnectionHandler>.fromOpaque(cls).takeUnretainedValue().deadlines
            if code == .CONNECTION_NOTIFY_STARTED {
                deadlines.opened(connection, socketContext: socketContext)
            } else {
                deadlines.closed(socketContext)
            }
        }
        let perAddress = UInt32(configuration.perAddressConnectionLimit)
        let timeout = UInt32(configuration.connectionTimeoutSeconds)
        let limit = UInt32(configuration.connectionLimit)
        let memory = Self.connectionMemory(configuration)
        guard let tls = configuration.tls else {
            return cmhd_start(
                UInt32(flags), address, access, context, completed, context, poolSize, timeout, limit, memory,
                perAddress, track, context)
        }
        // Runs for each new TLS connection after MHD has set up its GnuTLS session and before the
        // handshake. Given a trust store, MHD only *requests* a client certificate; this makes
        // GnuTLS require one and verify it against that store during the handshake, so a client
        // without a certificate from the client CA never gets a request through.
        let requireClientCertificate: MHD_NotifyConnectionCallback = { cls, connection, socketContext, code in
            guard let cls, let connection else { return }
            let deadlines = Unmanaged<ConnectionHandler>.fromOpaque(cls).takeUnretainedValue().deadlines
            guard code == .CONNECTION_NOTIFY_STARTED else { return deadlines.closed(socketContext) }
            deadlines.opened(connection, socketContext: socketContext)
            guard let session = cmhd_tls_session(connection) else { return }
            gnutls_certificate_server_set_request(OpaquePointer(session), GNUTLS_CERT_REQUIRE)
            gnutls_session_set_verify_cert(OpaquePointer(session), nil, 0)
        }
        // MHD keeps these pointers without copying, but reads them only while it starts, which
        // MHD_start_daemon finishes before it returns: the C strings may go after the call.
        return tls.keyPEM.value.withCString { key in
            tls.certificatePEM.withCString { certificate in
                guard let clientCA = tls.clientCAPEM else {
                    return cmhd_start_tls(
                        UInt32(flags), address, access, context, completed, context, poolSize, timeout, limit,
                        memory, perAddress, track, context, key, certificate, nil)
                }
                return clientCA.withCString { trust in
                    cmhd_start_tls(
                        UInt32(flags), address, access, context, completed, context, poolSize, timeout, limit,
                        memory, perAddress, requireClientCertificate, context, key, certificate, trust)
                }
            }
        }
    }

    /// The size of libmicrohttpd's per-connection memory pool (MHD_OPTION_CONNECTION_MEMORY_LIMIT).
    ///
    /// MHD reads the request line and header block into this pool and keeps them there, allocates
    /// a 64-byte record per parsed field from it (and then the response's header block), and
    /// answers with its own HTML 414/431 when they do not fit. So it holds a request at both of our
    /// limits at once, plus `fieldRoom` for the records of about 100 fields and the response's
    /// header, and our limits stay the ones that answer. It is no larger because MHD 0.9.75 zeroes
    /// the whole pool after every request (`MHD_pool_reset`) and the unused half of its read
    /// buffer once the request is in: the 48 KiB it was before (twice the limits) cost about
    /// 147,000 instructions of memset per login, the 32 KiB of the default limits about 98,000.
    static func connectionMemory(_ configuration: HTTPServerConfiguration) -> Int {
        let fieldRoom = 8 * 1024
        return max(16 * 1024, configuration.maxURIBytes + configuration.maxHeaderBytes + fieldRoom)
    }

    /// Stops accepting, so new connections are refused while open ones finish: a worker pool's
    /// acceptor shuts its socket down and ends its thread; with a thread per connection MHD stops
    /// polling its listening socket and we close it.
    func quiesce() {
        if let acceptor {
            acceptor.close()
            return
        }
        guard listenSocket == -1 else { return }
        let socket = MHD_quiesce_daemon(daemon)
        if socket >= 0 {
            // MHD hands the socket back to us to close: closing it makes connect() fail at once.
            close(socket)
            listenSocket = socket
        }
    }

    deinit {
        // Cancelled and drained (a run in progress finishes on its serial queue) before MHD closes
        // the sockets, so no shutdown() can reach a descriptor number reused after the stop.
        watchdog.cancel()
        watchdogQueue.sync {}
        // MHD must not stop with suspended connections or blocked connection threads: answer them first.
        retainedHandler.takeUnretainedValue().answerAllForShutdown()
        // No connection may be handed to a daemon that is stopping.
        acceptor?.close()
        MHD_stop_daemon(daemon)
        // Only after MHD's threads are gone can no callback reach the handler.
        retainedHandler.release()
    }

    /// `host:port`, with an IPv6 literal in brackets, as operators type it.
    static func describe(host: String, port: Int) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Fills a sockaddr_in or sockaddr_in6 from an IP literal; a name like "localhost" is refused
    /// so the bind address is never decided by a resolver.
    private static func fill(_ storage: inout sockaddr_storage, host: String, port: Int)
        throws(HTTPServerError)
    {
        guard (0...65_535).contains(port) else {
            throw HTTPServerError(.invalidConfiguration, "port out of range: \(port)")
        }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            withUnsafeMutableBytes(of: &storage) { raw in
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(UInt16(port).bigEndian)
                address.sin_addr = v4
                raw.storeBytes(of: address, as: sockaddr_in.self)
            }
            return
        }
        var literal = host
        if literal.hasPrefix("[") && literal.hasSuffix("]") {
            literal = String(literal.dropFirst().dropLast())
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, literal, &v6) == 1 else {
            throw HTTPServerError(.invalidConfiguration, "host must be an IPv4 or IPv6 literal: \(host)")
        }
        withUnsafeMutableBytes(of: &storage) { raw in
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            address.sin6_addr = v6
            raw.storeBytes(of: address, as: sockaddr_in6.self)
        }
    }
}
