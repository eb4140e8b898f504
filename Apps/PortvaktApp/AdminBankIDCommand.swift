import FoundationEssentials
import Glibc
import Kernel
import Synchronization

/// `portvakt admin bankid verify-phone|sign-phone`: the support desk's BankID phone check over
/// the admin API. Starts the verification, polls it while printing BankID's messages, and exits 0
/// only when the person who completed it is the account's linked identity.
///
/// The personal number the caller states is read from standard input (prompted on a terminal),
/// never taken as an argument: command lines are visible to every local user.
enum AdminBankIDCommand {
    /// How often the verification is polled (the server asks BankID at most every 2 s anyway).
    static let pollInterval: TimeInterval = 1
    /// How long the command waits before it cancels (BankID gives a phone order up after
    /// about 3 minutes; the server after 10).
    static let patience: TimeInterval = 660
    /// Set by SIGINT or SIGTERM while waiting: the verification is cancelled, then the command ends.
    static let interrupted = Atomic<Bool>(false)

    static func run(_ arguments: ArraySlice<String>, environment: [String: String]) throws -> Int32 {
        var rest = arguments
        switch rest.popFirst() {
        case "verify-phone": return try check(rest, sign: false, environment: environment)
        case "sign-phone": return try check(rest, sign: true, environment: environment)
        case let other?:
            throw UsageError("unknown admin bankid command '\(other)' (expected verify-phone or sign-phone)")
        case nil:
            throw UsageError("admin bankid needs a command: verify-phone or sign-phone")
        }
    }

    private static func check(_ arguments: ArraySlice<String>, sign: Bool, environment: [String: String])
        throws -> Int32
    {
        let command = sign ? "admin bankid sign-phone" : "admin bankid verify-phone"
        let options = try Options.parse(
            arguments, command: command,
            flags: AdminAPICommand.common.union(
                sign ? ["--call-initiator", "--text"] : ["--call-initiator"]),
            switches: ["--json"], positional: 1)
        guard let user = options.positional.first else { throw UsageError("\(command) needs a USER-ID") }
        let initiator = options["--call-initiator"] ?? "RP"
        guard initiator == "RP" || initiator == "user" else {
            throw UsageError("option '--call-initiator' must be RP or user (exact case), got '\(initiator)'")
        }
        var text: String?
        if sign {
            guard let given = options["--text"], !given.trimmingWhitespace().isEmpty else {
                throw UsageError("\(command) needs '--text' with the text the caller confirms")
            }
            text = given
        }
        let client = try AdminAPICommand.Client(options, environment)
        let number = try readPersonalNumber()
        // After the prompt (Ctrl-C there just ends the command) and before any other thread
        // exists (the HTTP client starts some): Ctrl-C or SIGTERM from here on cancels the
        // verification at BankID before the command exits.
        let stop = StopSignals()
        Threads.start {
            _ = stop.wait()
            interrupted.store(true, ordering: .relaxed)
        }

        var body: [String: String] = ["callInitiator": initiator, "personalNumber": number]
        if let text { body["userVisibleData"] = text }
        let json = String(decoding: try JSONText.data(body), as: UTF8.self)
        let path = "/admin/v1/users/\(AdminAPICommand.escape(user))/bankid/"
        var last = try client.call(
            "POST", path + (sign ? "phone-signatures" : "phone-verifications"), json: json)
        let started = try AdminAPICommand.jsonObject(last)
        let id = AdminAPICommand.string(started["id"])
        let quiet = options.isSet("--json")
        if !quiet {
            print(
                "Phone \(sign ? "signature" : "verification") \(id) started for user \(user) (call initiator \(initiator)); waiting for BankID…"
            )
        }
        flush()

        // Poll until it ends; a message is printed each time it changes, for the agent to read out.
        let verificationPath = "/admin/v1/bankid/phone-verifications/\(AdminAPICommand.escape(id))"
        let deadline = Date().addingTimeInterval(patience)
        var shown: String?
        var current = started
        while true {
            if AdminAPICommand.string(current["status"]) != "pending" { break }
            if let message = current["message"] as? [String: Any] {
                let line =
                    "  \(AdminAPICommand.string(message["code"])): \(AdminAPICommand.string(message["text"]))"
                if line != shown, !quiet {
                    print(line)
                    flush()
                }
                shown = line
            }
            if Date() >= deadline || interrupted.load(ordering: .relaxed) {
                // Nobody is waiting any more (or the agent pressed Ctrl-C): end it at BankID
                // rather than leave the order ringing in the person's app.
                last = try client.call("DELETE", verificationPath)
                current = try AdminAPICommand.jsonObject(last)
                break
            }
            // In tenths, so an interrupt is acted on at once.
            for _ in 0..<10 where !interrupted.load(ordering: .relaxed) {
                Threads.sleep(seconds: pollInterval / 10)
            }
            if interrupted.load(ordering: .relaxed) { continue }
            last = try client.call("GET", verificationPath)
            current = try AdminAPICommand.jsonObject(last)
        }
        let verified =
            current["verified"] as? Bool == true && AdminAPICommand.string(current["status"]) == "complete"
        if quiet {
            _ = AdminAPICommand.printJSON(last)
        } else {
            print(outcome(current, sign: sign))
        }
        return verified ? 0 : 1
    }

    /// One line saying how it ended; never anything about who completed it (the API says nothing).
    static func outcome(_ object: [String: Any], sign: Bool) -> String {
        let what = sign ? "BankID phone signature" : "BankID phone identification"
        switch AdminAPICommand.string(object["status"]) {
        case "complete" where object["verified"] as? Bool == true:
            var line = "verified: the person who completed the \(what) is the account's linked identity"
            if sign, object["signatureReceived"] as? Bool == true { line += " (signature received)" }
            return line
        case "complete":
            return
                "NOT verified: the \(what) was completed by someone who is not the account's linked identity"
        case let status:
            let reason = AdminAPICommand.string(object["reason"], or: status)
            let hint = (object["hintCode"] as? String).map { ", hint \($0)" } ?? ""
            return
                "NOT verified: the \(what) \(status == "cancelled" ? "was cancelled" : "failed") (\(reason)\(hint))"
        }
    }

    /// The personal number the caller states, one line from standard input (prompted on a
    /// terminal). Only its form is checked here; the server checks the check digit.
    private static func readPersonalNumber() throws -> String {
        if isatty(STDIN_FILENO) == 1 {
            StandardIO.writeError("Personal number the caller states (YYYYMMDDNNNN): ".utf8)
        }
        guard let line = readLine(strippingNewline: true) else {
            throw UsageError(
                "the personal number the caller states is read from standard input; none was given")
        }
        let number = line.trimmingWhitespace().replacingEvery("-", with: "")
        guard number.utf8.count == 12, number.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            // The input is not repeated: it may be a personal number with a typo.
            throw UsageError("the personal number on standard input must be 12 digits (YYYYMMDDNNNN)")
        }
        return number
    }

    /// Standard output to a pipe is block-buffered: flush so a watcher sees each line at once.
    private static func flush() { fflush(nil) }
}
