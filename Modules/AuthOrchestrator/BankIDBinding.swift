import CryptoCore
public import Kernel
public import SessionCore

/// Which device the user runs BankID on.
public enum BankIDDevice: String, Sendable, CaseIterable, Codable {
    /// This device: the app is launched with the autostart token.
    case same
    /// Another device: the user scans the animated QR code.
    case other
}

/// Who is asking about an order: the binding an order is tied to.
public struct BankIDRequester: Sendable {
    /// The request's live session and its user, when signed in.
    public var session: Session?
    /// The user of that session.
    public var user: User?
    /// The value of the client's binding cookie (or header), when it sent one.
    public var binding: String?

    /// Creates a requester.
    public init(session: Session? = nil, user: User? = nil, binding: String? = nil) {
        self.session = session
        self.user = user
        self.binding = binding
    }

    /// The session and its user, when the request is signed in.
    var signedIn: (session: Session, user: User)? {
        guard let session, let user else { return nil }
        return (session, user)
    }

    /// The bindings this requester can show, as stored: its session's and its binding value's.
    var bindingHashes: [[UInt8]] {
        var hashes: [[UInt8]] = []
        if let session { hashes.append(BankIDBinding.hash(session: session.id)) }
        if let binding { hashes.append(BankIDBinding.hash(client: binding)) }
        return hashes
    }

    /// Whether this requester shows the binding stored as `hash` (compared in constant time).
    func isBound(to hash: [UInt8]) -> Bool {
        bindingHashes.contains { ConstantTime.equals($0, hash) }
    }
}

/// How an order is tied to the client that started it: its session when signed in, else a
/// random binding value handed out in a cookie (or, to a native app, in the body). Stored only
/// as digests, like every other capability.
enum BankIDBinding {
    /// The stored binding of an order started from session `id`.
    static func hash(session id: String) -> [UInt8] { Digest.sha256("portvakt.bankid.session:" + id) }

    /// The stored binding of an order started by a client showing binding `value`.
    static func hash(client value: String) -> [UInt8] { Digest.sha256("portvakt.bankid.client:" + value) }

    /// A client's binding value when it looks like one we issued (43 base64url characters):
    /// anything else gets a fresh value instead of being stored.
    static func acceptable(_ value: String) -> String? {
        value.utf8.count == 43
            && value.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            } ? value : nil
    }
}

/// The nonce in the returnUrl of a web client's same-device order: only the browser BankID
/// returns to learns it, and only a poll presenting it receives the result.
enum BankIDReturnNonce {
    /// The returnUrl BankID is told to open: `url` with `nonce` added.
    static func url(_ url: String, nonce: String) -> String {
        url + (url.contains("?") ? "&" : "?") + "nonce=" + nonce
    }

    /// The nonce as stored: its SHA-256, like every other capability.
    static func hash(_ nonce: String) -> String {
        Base64URL.encode(Digest.sha256("portvakt.bankid.return:" + nonce))
    }

    /// Whether `presented` is the nonce stored as `stored` (false when the order has none).
    static func matches(_ presented: String, _ stored: String?) -> Bool {
        guard let stored else { return false }
        return ConstantTime.equals(Array(hash(presented).utf8), Array(stored.utf8))
    }

}
