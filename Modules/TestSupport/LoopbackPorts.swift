import Glibc

/// Loopback TCP ports nothing listens on, for a server a test is about to start or for a
/// connection that must be refused.
public enum LoopbackPorts {
    /// `count` distinct ports of 127.0.0.1, each bound by the kernel's choice and then released.
    ///
    /// All sockets stay bound until every port is chosen: released one at a time, the kernel may
    /// hand the same port out twice, and a test taking a public and an admin port would then
    /// start a server whose listeners overlap. Another process may still take a port after it is
    /// released; a caller that cannot tolerate that retries on a new one.
    public static func unused(_ count: Int) throws -> [Int] {
        var descriptors: [Int32] = []
        defer { descriptors.forEach { close($0) } }
        var ports: [Int] = []
        for _ in 0..<count {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw LoopbackPortError("socket() failed, errno \(errno)") }
            descriptors.append(descriptor)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    bind(descriptor, socketAddress, length) == 0
                        && getsockname(descriptor, socketAddress, &length) == 0
                }
            }
            guard bound else { throw LoopbackPortError("could not bind a loopback port, errno \(errno)") }
            ports.append(Int(UInt16(bigEndian: address.sin_port)))
        }
        return ports
    }

    /// One unused loopback port (see `unused(_:)`).
    public static func unused() throws -> Int {
        try unused(1)[0]
    }
}

/// Why no loopback port could be chosen.
public struct LoopbackPortError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
