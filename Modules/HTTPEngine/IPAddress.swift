import Glibc

/// An IPv4 or IPv6 address held as 128 bits, IPv4 as its IPv4-mapped IPv6 form (`::ffff:a.b.c.d`)
/// so one comparison covers both families and mapped peers normalise to plain IPv4.
struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The high and low 64 bits, most significant first.
    let high: UInt64
    let low: UInt64

    private static let mappedPrefix: UInt64 = 0x0000_ffff_0000_0000

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Parses an IPv4 or IPv6 literal (an IPv6 zone such as `%eth0` is dropped); nil otherwise.
    init?(_ text: some StringProtocol) {
        var literal = String(text)
        if let zone = literal.firstIndex(of: "%") { literal = String(literal[..<zone]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            self.init(ipv4: UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, literal, &v6) == 1 else { return nil }
        self.init(ipv6: v6)
    }

    /// The address of a socket peer, or nil for families other than IPv4 and IPv6.
    init?(socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let v4 = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in.self)
            self.init(ipv4: UInt32(bigEndian: v4.sin_addr.s_addr))
        case AF_INET6:
            let v6 = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in6.self)
            self.init(ipv6: v6.sin6_addr)
        default:
            return nil
        }
    }

    init(ipv4: UInt32) {
        self.init(high: 0, low: Self.mappedPrefix | UInt64(ipv4))
    }

    init(ipv6: in6_addr) {
        var bytes = ipv6
        let (high, low) = withUnsafeBytes(of: &bytes) { raw in
            (
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
        self.init(high: high, low: low)
    }

    /// Whether this is an IPv4 address (including one that arrived IPv4-mapped).
    var isIPv4: Bool { high == 0 && low >> 32 == 0xffff }

    /// The canonical text: dotted IPv4, or RFC 5952 IPv6 as inet_ntop writes it.
    var description: String {
        if isIPv4 {
            // Formatted by hand: this runs for every request (access log, rate limiting), and
            // string interpolation costs several times more.
            let v4 = UInt32(truncatingIfNeeded: low)
            return String(unsafeUninitializedCapacity: 15) { buffer in
                var index = 0
                for shift in stride(from: 24, through: 0, by: -8) {
                    let octet = Int(v4 >> UInt32(shift) & 0xff)
                    if octet >= 100 { buffer[index] = UInt8(ascii: "0") + UInt8(octet / 100); index += 1 }
                    if octet >= 10 { buffer[index] = UInt8(ascii: "0") + UInt8(octet / 10 % 10); index += 1 }
                    buffer[index] = UInt8(ascii: "0") + UInt8(octet % 10)
                    index += 1
                    if shift > 0 { buffer[index] = UInt8(ascii: "."); index += 1 }
                }
                return index
            }
        }
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { raw in
            raw.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "::" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An address block (`10.0.0.0/8`, `2001:db8::/32`) or a single address.
struct IPNetwork: Hashable, Sendable {
    let address: IPAddress
    let maskHigh: UInt64
    let maskLow: UInt64

    /// Parses `address` or `address/prefix`; nil when either part is invalid.
    init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let address = IPAddress(first) else { return nil }
        let maximum = address.isIPv4 ? 32 : 128
        var prefix = maximum
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...maximum).contains(parsed) else { return nil }
            prefix = parsed
        }
        // IPv4 lives in the last 32 bits of the mapped form, behind a fixed 96-bit prefix.
        let bits = address.isIPv4 ? prefix + 96 : prefix
        maskHigh = bits >= 64 ? ~0 : (bits == 0 ? 0 : ~0 << UInt64(64 - bits))
        maskLow = bits <= 64 ? 0 : (bits == 128 ? ~0 : ~0 << UInt64(128 - bits))
        self.address = IPAddress(high: address.high & maskHigh, low: address.low & maskLow)
    }

    func contains(_ candidate: IPAddress) -> Bool {
        candidate.high & maskHigh == address.high && candidate.low & maskLow == address.low
    }
}

/// Finds the client behind trusted reverse proxies.
///
/// Forwarding headers are written by whoever sends them, so they are believed only from a
/// trusted peer, and only up to the first hop that is not itself a trusted proxy: walking the
/// list from the right, everything left of an untrusted hop may be forged.
struct ClientIPResolver: Sendable {
    let trusted: [IPNetwork]

    /// - Throws: the first entry that is neither an address nor a CIDR block.
    init(trustedProxies: [String]) throws(HTTPServerError) {
        var networks: [IPNetwork] = []
        for entry in trustedProxies {
            guard let network = IPNetwork(entry) else {
                throw HTTPServerError(
                    .invalidConfiguration, "trustedProxies entry is not an IP address or CIDR block: \(entry)"
                )
            }
            networks.append(network)
        }
        trusted = networks
    }

    func isTrusted(_ address: IPAddress) -> Bool {
        trusted.contains { $0.contains(address) }
    }

    /// The client's address for a request from `peer` carrying `headers`.
    func resolve(peer: IPAddress, headers: HTTPHeaders) -> IPAddress {
        guard !trusted.isEmpty, isTrusted(peer) else { return peer }
        let hops: [Substring?]
        let forwarded = headers.values(for: "Forwarded")
        if !forwarded.isEmpty {
            hops = forwarded.flatMap { Self.forwardedFor($0) }
        } else {
            hops = headers.values(for: "X-Forwarded-For").flatMap {
                $0.split(separator: ",").map { Optional($0) }
            }
        }
        var current = peer
        for hop in hops.reversed() {
            // An unusable hop (`unknown`, an obfuscated `_name`, garbage) ends the walk: the proxy
            // that wrote it is the last address we can vouch for.
            guard let hop, let address = Self.parseHop(hop) else { return current }
            current = address
            if !isTrusted(address) { return address }
        }
        return current
    }

    /// The `for=` value of each RFC 7239 element, nil for an element without one.
    static func forwardedFor(_ header: String) -> [Substring?] {
        header.split(separator: ",").map { element in
            for pair in element.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " || $0 == "\t" }
                guard let equals = trimmed.firstIndex(of: "=") else { continue }
                let name = trimmed[..<equals]
                guard name.count == 3, name.lowercased() == "for" else { continue }
                return trimmed[trimmed.index(after: equals)...]
            }
            return nil
        }
    }

    /// Parses one hop: `1.2.3.4`, `1.2.3.4:80`, `"[2001:db8::1]:4711"`, `2001:db8::1`.
    static func parseHop(_ raw: Substring) -> IPAddress? {
        var hop = raw.trimmingSpaces()
        if hop.count >= 2, hop.first == "\"", hop.last == "\"" { hop = hop.dropFirst().dropLast() }
        if hop.first == "[" {
            guard let close = hop.firstIndex(of: "]") else { return nil }
            return IPAddress(hop[hop.index(after: hop.startIndex)..<close])
        }
        // One colon is IPv4 with a port; more colons is a bare IPv6 address.
        if let colon = hop.firstIndex(of: ":"), hop[hop.index(after: colon)...].firstIndex(of: ":") == nil {
            return IPAddress(hop[..<colon])
        }
        return IPAddress(hop)
    }
}

extension Substring {
    /// Drops surrounding spaces and tabs (optional whitespace in header lists).
    func trimmingSpaces() -> Substring {
        var trimmed = self
        while let first = trimmed.first, first == " " || first == "\t" { trimmed = trimmed.dropFirst() }
        while let last = trimmed.last, last == " " || last == "\t" { trimmed = trimmed.dropLast() }
        return trimmed
    }
}
