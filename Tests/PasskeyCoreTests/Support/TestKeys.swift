import CryptoCore
import Kernel
import PasskeyCore
import TestSupport

/// Keys generated once per test process; RSA generation is slow enough to share.
enum TestKeys {
    static let p256 = SoftwareKey.generate(.ec(.p256))
    static let p384 = SoftwareKey.generate(.ec(.p384))
    static let p521 = SoftwareKey.generate(.ec(.p521))
    static let ed25519 = SoftwareKey.generate(.ed25519)
    static let rsa2048 = SoftwareKey.generate(.rsa(bits: 2048))
    /// A second P-256 key, for wrong-key checks.
    static let otherP256 = SoftwareKey.generate(.ec(.p256))
    /// A second RSA key, for wrong-key checks.
    static let otherRSA2048 = SoftwareKey.generate(.rsa(bits: 2048))
    /// A key too small to accept.
    static let rsa1024 = SoftwareKey.generate(.rsa(bits: 1024))

    /// The key that signs for each algorithm, with the algorithm.
    static let byAlgorithm: [(COSEAlgorithm, SoftwareKey)] = [
        (.es256, p256), (.es384, p384), (.es512, p521), (.edDSA, ed25519),
        (.rs256, rsa2048), (.rs384, rsa2048), (.rs512, rsa2048), (.ps256, rsa2048), (.rs1, rsa2048),
    ]
}
