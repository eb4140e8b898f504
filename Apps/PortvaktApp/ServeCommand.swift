import FoundationEssentials
import Kernel

/// `portvakt serve`: runs until SIGTERM or SIGINT, then shuts down gracefully and exits 0.
enum ServeCommand {
    static func run(configPath: String?, environment: [String: String]) throws -> Int32 {
        // Before anything else (the log line "storage opened" included): a SIGTERM or SIGINT sent
        // while it starts is kept until it is up, then it stops at once and exits 0. Starting is
        // bounded by the storage timeouts, and a start that fails exits 1 all the same.
        let signals = StopSignals()
        let configuration = try PortvaktConfiguration.load(path: configPath, environment: environment)
        let logger = Logger(minimum: configuration.logging.level)
        let server = try PortvaktServer(configuration: configuration, logger: logger)
        try server.start()
        if let token = server.createdAdminToken {
            // Shown once, on the terminal that started the first run; only its hash is stored.
            StandardIO.writeOutput(
                "Admin API token (shown once, store it now; only its hash is kept):\n  \(token)\n".utf8)
        }
        logger.log(.info, "ready", ["publicURL": configuration.publicURL])
        // Starting ran much code that serving never runs again (configuration, migrations, the
        // BankID simulator's certificates): let go of those pages now; code a request needs
        // comes back as a minor fault from the page cache (Docs/performance-memory.md).
        logger.log(.info, "startup code released", ["residentKB": String(CodePages.releaseResident())])

        logger.log(.info, "stopping", ["signal": signals.wait()])
        server.shutdown(grace: 10)
        return 0
    }
}
