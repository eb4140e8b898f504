import Dispatch
import Foundation

/// `portvakt serve`: runs until SIGTERM or SIGINT, then shuts down gracefully and exits 0.
enum ServeCommand {
    static func run(configPath: String?, environment: [String: String]) throws -> Int32 {
        let configuration = try PortvaktConfiguration.load(path: configPath, environment: environment)
        let logger = Logger(minimum: configuration.logging.level)
        let server = try PortvaktServer(configuration: configuration, logger: logger)
        // Signals are taken by a dispatch source, not a C handler, so shutdown runs as ordinary
        // code. The main thread waits on a semaphore that the source signals. The sources exist
        // before the listeners do: a SIGTERM sent as soon as a port answers is never lost.
        let stop = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "portvakt.signals")
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
            source.setEventHandler { [logger] in
                logger.log(.info, "stopping", ["signal": signalNumber == SIGTERM ? "SIGTERM" : "SIGINT"])
                stop.signal()
            }
            source.resume()
            sources.append(source)
        }
        try server.start()
        if let token = server.createdAdminToken {
            // Shown once, on the terminal that started the first run; only its hash is stored.
            FileHandle.standardOutput.write(
                Data("Admin API token (shown once, store it now; only its hash is kept):\n  \(token)\n".utf8))
        }
        logger.log(.info, "ready", ["publicURL": configuration.publicURL])

        stop.wait()
        server.shutdown(grace: 10)
        sources.forEach { $0.cancel() }
        return 0
    }
}
