import Glibc

/// Checks for addresses, networks, URLs, origins and cookie names. Each returns the problem as a
/// message, or nil when the value is acceptable.
enum ConfigValidators {
    // MARK: Names

    /// A short identifier the configuration names things by (a BankID identity key's id, a
    /// webhook endpoint's name): 1 to 32 letters, digits, `-` or `_`.
    static func identifierProblem(_ text: String, what: String) -> String? {
        let valid =
            (1...32).contains(text.utf8.count)
            && text.unicodeScalars.allSatisfy {
                ("0"..."9").contains($0) || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || $0 == "-"
                    || $0 == "_"
            }
        return valid ? nil : "\(what) is 1 to 32 letters, digits, - or _"
    }

    /// The name of an environment variable holding a secret, which must start with `prefix`
    /// (so `checkEnvironmentNames` knows it) and be capitals, digits and `_`.
    static func secretVariableProblem(_ text: String, prefix: String) -> String? {
        let valid =
            text.hasPrefix(prefix) && text.count > prefix.count
            && text.unicodeScalars.allSatisfy {
                ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
            }
        return valid ? nil : "expected a variable name starting with \(prefix), in capitals, digits and _"
    }

    // MARK: Addresses

    /// The address family and 4 or 16 bytes of an IPv4 or IPv6 literal, parsed by inet_pton.
    static func ipAddress(_ text: String) -> (family: Int32, bytes: [UInt8])? {
        // inet_pton reads a C string: an embedded NUL would silently truncate the text.
        guard !text.contains("\0") else { return nil }
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, text, &v4) == 1 { return (AF_INET, v4) }
        var v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, text, &v6) == 1 { return (AF_INET6, v6) }
        return nil
    }

    /// Text of an address in its canonical form (inet_ntop), for suggestions.
    static func addressText(family: Int32, bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = inet_ntop(family, bytes, &buffer, socklen_t(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A listener host: an IPv4 or IPv6 literal, IPv6 without brackets.
    static func listenHostProblem(_ text: String) -> String? {
        if ipAddress(text) != nil { return nil }
        if text.hasPrefix("["), text.hasSuffix("]"), ipAddress(String(text.dropFirst().dropLast())) != nil {
            return "write the IPv6 address without brackets, e.g. \"::1\""
        }
        if text == "localhost" {
            return "expected an IP address literal, e.g. \"127.0.0.1\" or \"::1\", got \"localhost\""
        }
        return
            "expected an IPv4 or IPv6 address literal, e.g. \"127.0.0.1\" or \"::1\", got \(ConfigJSONWriter.quoted(text))"
    }

    /// Whether a host is a wildcard address, which overlaps every address on its port.
    static func isWildcard(_ bytes: [UInt8]) -> Bool { bytes.allSatisfy { $0 == 0 } }

    /// A trusted proxy: an address, or a network `address/prefix` with no host bits set.
    static func proxyProblem(_ text: String) -> String? {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = ipAddress(String(parts[0])) else {
            return
                "expected an IP address or CIDR network such as \"10.0.0.0/8\", got \(ConfigJSONWriter.quoted(text))"
        }
        guard parts.count == 2 else { return nil }
        let bits = address.bytes.count * 8
        let prefixText = parts[1]
        guard !prefixText.isEmpty, prefixText.count <= 3, prefixText.allSatisfy(\.isASCII),
            prefixText.allSatisfy(\.isNumber),
            let prefix = Int(prefixText), prefix <= bits
        else {
            return "invalid prefix length in \(ConfigJSONWriter.quoted(text)): expected 0 to \(bits)"
        }
        // A network with host bits set is almost always a typo for the network below it.
        var network = address.bytes
        for bit in prefix..<bits { network[bit / 8] &= ~(UInt8(0x80) >> UInt8(bit % 8)) }
        if network != address.bytes {
            let suggestion = addressText(family: address.family, bytes: network) + "/\(prefix)"
            return "\(ConfigJSONWriter.quoted(text)) has host bits set (did you mean \"\(suggestion)\"?)"
        }
        return nil
    }

    // MARK: URLs and origins

    /// The parts of `scheme://host[:port]`, the only URL form the configuration takes.
    struct Origin {
        var scheme: String
        /// The host as written; IPv6 keeps its brackets.
        var host: String
        var port: Int?

        /// Whether the host is the local machine, where plain http is tolerable.
        var isLoopback: Bool { host == "localhost" || host == "127.0.0.1" || host == "[::1]" }
    }

    /// Parses `scheme://host[:port]` strictly: lowercase scheme and host, no user info, path, query
    /// or fragment, a port from 1 to 65535 that is not the scheme's default.
    static func parseOrigin(_ text: String, what: String) throws(OriginProblem) -> Origin {
        guard let separator = text.firstRange(of: "://") else {
            throw OriginProblem(
                "expected \(what) of the form scheme://host[:port], got \(ConfigJSONWriter.quoted(text))")
        }
        let scheme = String(text[..<separator.lowerBound])
        guard scheme == "http" || scheme == "https" else {
            throw OriginProblem("\(what) must use http or https, got \(ConfigJSONWriter.quoted(text))")
        }
        var authority = Substring(text[separator.upperBound...])
        if let cut = authority.firstIndex(where: { "/?#".contains($0) }) {
            let rest = authority[cut...]
            let advice =
                rest == "/" ? "remove the trailing \"/\"" : "it must not have a path, query or fragment"
            throw OriginProblem("\(what) \(ConfigJSONWriter.quoted(text)): \(advice)")
        }
        if authority.contains("@") { throw OriginProblem("\(what) must not contain user information") }
        var port: Int?
        // The port follows the last colon outside IPv6 brackets.
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            let portText = authority[authority.index(after: colon)...]
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                let number = Int(portText), (1...65535).contains(number)
            else {
                throw OriginProblem(
                    "\(what) \(ConfigJSONWriter.quoted(text)) has an invalid port, expected 1 to 65535")
            }
            port = number
            authority = authority[..<colon]
        }
        let host = String(authority)
        if let problem = hostProblem(host) {
            throw OriginProblem("\(what) \(ConfigJSONWriter.quoted(text)): \(problem)")
        }
        // Browsers omit a default port from Origin, so a value that names it would never match.
        if (scheme == "https" && port == 443) || (scheme == "http" && port == 80) {
            throw OriginProblem("\(what) \(ConfigJSONWriter.quoted(text)): omit the default port \(port!)")
        }
        return Origin(scheme: scheme, host: host, port: port)
    }

    /// A problem with an origin, as a message.
    struct OriginProblem: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// A URL host: a lowercase DNS name, an IPv4 literal, or a bracketed IPv6 literal.
    static func hostProblem(_ host: String) -> String? {
        if host.isEmpty { return "the host is missing" }
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), let address = ipAddress(String(host.dropFirst().dropLast())),
                address.family == AF_INET6
            else { return "invalid IPv6 host \(host)" }
            return nil
        }
        if host != host.lowercased() { return "write the host in lowercase" }
        guard host.count <= 253 else { return "the host name is longer than 253 characters" }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            let valid =
                !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
            if !valid { return "invalid host name \(ConfigJSONWriter.quoted(host))" }
        }
        return nil
    }

    /// The public URL: an origin where plain http is allowed only for the local machine.
    static func publicURLProblem(_ text: String) -> String? {
        do {
            let origin = try parseOrigin(text, what: "the public URL")
            if origin.scheme == "http", !origin.isLoopback {
                return
                    "http is allowed only for localhost, 127.0.0.1 and [::1]; use https for \(ConfigJSONWriter.quoted(text))"
            }
            return nil
        } catch {
            return error.message
        }
    }

    /// A CORS origin, `scheme://host[:port]`; the wildcard is refused because sessions use credentials.
    static func corsOriginProblem(_ text: String) -> String? {
        if text == "*" || text == "null" {
            return
                "\(ConfigJSONWriter.quoted(text)) is not allowed; list each origin, e.g. \"https://app.example.com\""
        }
        do {
            _ = try parseOrigin(text, what: "an origin")
            return nil
        } catch {
            return error.message
        }
    }

    // MARK: Other values

    /// A cookie name: an RFC 6265 token (visible ASCII without separators), at most 64 characters.
    static func cookieNameProblem(_ text: String) -> String? {
        let separators = Set("()<>@,;:\\\"/[]?={} \t")
        let valid =
            !text.isEmpty && text.count <= 64
            && text.unicodeScalars.allSatisfy {
                (0x21...0x7E).contains($0.value) && !separators.contains(Character($0))
            }
        return valid
            ? nil
            : "expected a cookie name (1 to 64 letters, digits and !#$%&'*+-.^_`|~), got \(ConfigJSONWriter.quoted(text))"
    }

    /// A file system path: not empty, no NUL.
    static func pathProblem(_ text: String) -> String? {
        if text.isEmpty { return "expected a non-empty path" }
        if text.contains("\0") { return "a path must not contain NUL" }
        return nil
    }
}
