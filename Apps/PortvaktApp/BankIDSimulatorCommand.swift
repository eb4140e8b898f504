import BankIDSimulator
import FoundationEssentials

/// `portvakt bankid-simulator`: the BankID simulator on its own, for any v6 client.
enum BankIDSimulatorCommand {
    static let usage = """
        Usage: portvakt bankid-simulator --data DIR --port N [--user-port N] [--auto-complete N]
                                         [--scenario FILE] [--print-config]
          --data DIR          the simulator's folder (development PKI created there on first start)
          --port N            the RP API's HTTPS port on 127.0.0.1 (mutual TLS)
          --user-port N       the user API's HTTP port on 127.0.0.1 (default: port + 1)
          --auto-complete N   every order completes by itself after N pending collects
          --scenario FILE     JSON: test persons, per-person outcomes, faults, latency, timing
          --print-config      print {"baseUrl", "caCertificate", "clientCertificate", "passphrase",
                              "userApiUrl"} and exit (without it: serve until SIGTERM or SIGINT)
        """

    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options.parse(
            arguments, command: "bankid-simulator",
            flags: ["--data", "--port", "--user-port", "--auto-complete", "--scenario"],
            switches: ["--print-config"])
        let data = try options.required("--data")
        guard let port = Int(try options.required("--port")), (0...65_535).contains(port) else {
            throw UsageError("--port needs a port number")
        }
        var configuration = BankIDSimulatorConfiguration(dataDirectory: data)
        configuration.port = port
        if let text = options["--user-port"] {
            guard let userPort = Int(text), (0...65_535).contains(userPort) else {
                throw UsageError("--user-port needs a port number")
            }
            configuration.userPort = userPort
        } else {
            configuration.userPort = port == 0 ? 0 : port + 1
        }
        if let path = options["--scenario"] {
            guard let bytes = FileManager.default.contents(atPath: path) else {
                throw UsageError("cannot read the scenario file \(path)")
            }
            try configuration.apply(scenarioJSON: [UInt8](bytes))
        }
        if let text = options["--auto-complete"] {
            guard let collects = Int(text), collects >= 0 else {
                throw UsageError("--auto-complete needs N >= 0")
            }
            configuration.autoCompleteAfter = collects
        }
        if options.isSet("--print-config") {
            // Creates the PKI if needed and reports what a client needs for these ports, without serving.
            print(try BankIDSimulator.clientConfiguration(configuration).json)
            return 0
        }
        // Before the logger and the listeners start threads and before the simulator announces
        // itself: a SIGTERM sent as soon as it says anything stops it cleanly instead of being lost.
        let signals = StopSignals()
        let logger = Logger(minimum: .info)
        let simulator = try BankIDSimulator.start(
            configuration, log: { logger.log(.info, "request", ["line": $0]) })
        logger.log(
            .info, "listening", ["listener": "bankid-simulator", "address": "127.0.0.1:\(simulator.port)"])
        logger.log(
            .info, "listening",
            ["listener": "bankid-simulator-user", "address": "127.0.0.1:\(simulator.userPort)"])
        // Written unbuffered so a script reading the first line gets it while the simulator serves.
        StandardIO.writeOutput((simulator.clientConfigurationJSON + "\n").utf8)

        logger.log(.info, "stopping", ["signal": signals.wait()])
        simulator.stop(grace: 10)
        return 0
    }
}
