// swift-tools-version: 6.1
import PackageDescription

/// Settings every Swift target shares: explicit imports, explicit existentials.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Portvakt",
    products: [
        .executable(name: "portvakt", targets: ["portvakt"])
    ],
    targets: [
        // C libraries from Debian, wrapped as system-library targets.
        .systemLibrary(
            name: "COpenSSL", path: "Modules/CSystem/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CCurl", path: "Modules/CSystem/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CSQLite", path: "Modules/CSystem/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CPQ", path: "Modules/CSystem/CPQ", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        .systemLibrary(
            name: "CMicroHTTPD", path: "Modules/CSystem/CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(
            name: "CGnuTLS", path: "Modules/CSystem/CGnuTLS", pkgConfig: "gnutls",
            providers: [.apt(["libgnutls28-dev"])]),
        .systemLibrary(
            name: "CQREncode", path: "Modules/CSystem/CQREncode", pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]),
        // The C library's calls that Swift's Glibc module leaves out (getrandom); nothing to link.
        .systemLibrary(name: "CLinux", path: "Modules/CSystem/CLinux"),

        // The kernel: the vocabulary every layer shares (users, audit events, the clock,
        // randomness, coded errors). It depends on nothing of Portvakt's.
        .target(
            name: "Kernel", dependencies: ["CLinux"], path: "Modules/Kernel", swiftSettings: strictSettings),

        // Libraries.
        // ML-DSA (FIPS 204) verification in Swift, for the OpenSSL builds without it (3.0 to 3.4):
        // no dependencies, no I/O.
        .target(name: "MLDSA", path: "Modules/MLDSA", swiftSettings: strictSettings),
        .target(
            name: "CryptoCore", dependencies: ["COpenSSL", "Kernel", "MLDSA"], path: "Modules/CryptoCore",
            swiftSettings: strictSettings),
        .target(
            name: "PasskeyCore", dependencies: ["CryptoCore", "Kernel", "MLDSA"], path: "Modules/PasskeyCore",
            swiftSettings: strictSettings),
        .target(
            name: "SessionCore", dependencies: ["CryptoCore", "Kernel"], path: "Modules/SessionCore",
            swiftSettings: strictSettings),
        .target(
            name: "BankIDCore", dependencies: ["CCurl", "CQREncode", "CryptoCore", "Kernel"],
            path: "Modules/BankIDCore",
            swiftSettings: strictSettings),
        // Webhooks: Standard Webhooks signatures, the retry schedule, the libcurl sender and the
        // dispatcher over the outbox Storage implements.
        .target(
            name: "WebhookCore", dependencies: ["CCurl", "CryptoCore", "Kernel"], path: "Modules/WebhookCore",
            swiftSettings: strictSettings),
        .target(
            name: "Storage",
            dependencies: [
                "CPQ", "CSQLite", "CryptoCore", "Kernel", "SessionCore", "BankIDCore", "WebhookCore",
            ],
            path: "Modules/Storage", swiftSettings: strictSettings),
        .target(
            name: "AuthOrchestrator",
            dependencies: ["BankIDCore", "CryptoCore", "Kernel", "PasskeyCore", "SessionCore", "Storage"],
            path: "Modules/AuthOrchestrator", swiftSettings: strictSettings),
        // The HTTP engine: libmicrohttpd, requests and responses, routing, the pipeline, rate
        // limits, problem+json. It knows nothing of passkeys, BankID or storage.
        .target(
            name: "HTTPEngine", dependencies: ["CMicroHTTPD", "CGnuTLS", "CryptoCore", "Kernel"],
            path: "Modules/HTTPEngine", swiftSettings: strictSettings),
        // The public and admin APIs and the sign-in page: HTTP translated to the use cases.
        .target(
            name: "PortvaktAPI",
            dependencies: [
                "AuthOrchestrator", "BankIDCore", "CryptoCore", "HTTPEngine", "Kernel", "PasskeyCore",
                "SessionCore",
            ],
            path: "Modules/PortvaktAPI", swiftSettings: strictSettings),
        .target(
            name: "BankIDSimulator", dependencies: ["Kernel", "HTTPEngine", "CryptoCore"],
            path: "Modules/BankIDSimulator", swiftSettings: strictSettings),
        .target(
            name: "PortvaktApp",
            dependencies: [
                "BankIDSimulator", "BankIDCore", "CCurl", "CryptoCore", "HTTPEngine", "Kernel", "SessionCore",
                "Storage", "WebhookCore",
                "PortvaktAPI", "PasskeyCore", "AuthOrchestrator",
            ],
            path: "Apps/PortvaktApp", swiftSettings: strictSettings),
        // The C library's malloc serves the whole process (Docs/architecture.md, "The C library's
        // allocator, not mimalloc").
        .executableTarget(
            name: "portvakt", dependencies: ["PortvaktApp"], path: "Apps/portvakt",
            swiftSettings: strictSettings),

        // Benchmarks: the bare libmicrohttpd handler the HTTP front is measured against.
        .executableTarget(
            name: "bench-bare-http", dependencies: ["CMicroHTTPD"], path: "Benchmarks/BareHTTP",
            swiftSettings: strictSettings),

        // Passkey assertions through the full path against raw OpenSSL verification.
        .executableTarget(
            name: "bench-passkey",
            dependencies: ["Kernel", "COpenSSL", "CryptoCore", "PasskeyCore", "TestSupport"],
            path: "Benchmarks/Passkey", swiftSettings: strictSettings),

        // Complete passkey logins over HTTP against the release server.
        .executableTarget(
            name: "bench-login",
            dependencies: [
                "CSQLite", "CryptoCore", "HTTPEngine", "Kernel", "PasskeyCore", "Storage", "TestSupport",
            ],
            path: "Benchmarks/Login", swiftSettings: strictSettings),

        // BankID: QR codes per second and upstream collects per order under 50 pollers.
        .executableTarget(
            name: "bench-bankid",
            dependencies: ["Kernel", "BankIDCore", "BankIDSimulator", "Storage", "TestSupport"],
            path: "Benchmarks/BankID", swiftSettings: strictSettings),

        // Shared test helpers: an HTTP client over libcurl, a fixed clock, a server on port 0, a fresh
        // store on either engine (TestStore), software keys, a throwaway certificate authority and a
        // software WebAuthn authenticator over OpenSSL.
        .target(
            name: "TestSupport",
            dependencies: [
                "CCurl", "COpenSSL", "CPQ", "CryptoCore", "HTTPEngine", "Kernel", "PasskeyCore",
                "SessionCore",
                "Storage",
                "PortvaktAPI", "PortvaktApp",
            ],
            path: "Modules/TestSupport", swiftSettings: strictSettings),

        .testTarget(
            name: "MLDSATests", dependencies: ["MLDSA", "COpenSSL"], path: "Tests/MLDSATests",
            swiftSettings: strictSettings),
        .testTarget(
            name: "CryptoCoreTests", dependencies: ["Kernel", "CryptoCore", "TestSupport"],
            path: "Tests/CryptoCoreTests",
            swiftSettings: strictSettings),
        .testTarget(
            name: "PasskeyCoreTests",
            dependencies: ["Kernel", "PasskeyCore", "CryptoCore", "MLDSA", "TestSupport"],
            path: "Tests/PasskeyCoreTests", swiftSettings: strictSettings),
        .testTarget(
            name: "SessionCoreTests", dependencies: ["Kernel", "SessionCore", "Storage", "TestSupport"],
            path: "Tests/SessionCoreTests", swiftSettings: strictSettings),
        .testTarget(
            name: "BankIDCoreTests",
            dependencies: [
                "Kernel", "BankIDCore", "BankIDSimulator", "CryptoCore", "Storage", "TestSupport",
            ],
            path: "Tests/BankIDCoreTests", swiftSettings: strictSettings),
        .testTarget(
            name: "WebhookCoreTests", dependencies: ["Kernel", "CryptoCore", "WebhookCore", "TestSupport"],
            path: "Tests/WebhookCoreTests", swiftSettings: strictSettings),
        .testTarget(
            name: "StorageTests", dependencies: ["CSQLite", "Kernel", "Storage", "TestSupport"],
            path: "Tests/StorageTests",
            swiftSettings: strictSettings),
        .testTarget(
            name: "AuthOrchestratorTests",
            dependencies: [
                "Kernel",
                "AuthOrchestrator", "BankIDCore", "CryptoCore", "PasskeyCore", "SessionCore", "Storage",
                "TestSupport",
            ],
            path: "Tests/AuthOrchestratorTests", swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPEngineTests", dependencies: ["Kernel", "HTTPEngine", "CryptoCore", "TestSupport"],
            path: "Tests/HTTPEngineTests", swiftSettings: strictSettings),
        .testTarget(
            name: "PortvaktAPITests",
            dependencies: [
                "PortvaktAPI", "AuthOrchestrator", "HTTPEngine", "Kernel", "SessionCore", "Storage",
                "TestSupport",
            ],
            path: "Tests/PortvaktAPITests", swiftSettings: strictSettings),
        .testTarget(
            name: "BankIDSimulatorTests",
            dependencies: ["Kernel", "BankIDSimulator", "CryptoCore", "TestSupport", "portvakt"],
            path: "Tests/BankIDSimulatorTests", swiftSettings: strictSettings),
        .testTarget(
            name: "PortvaktAppTests",
            dependencies: [
                "PortvaktApp", "BankIDCore", "HTTPEngine", "Kernel", "PortvaktAPI", "AuthOrchestrator",
                "TestSupport", "portvakt",
            ],
            path: "Tests/PortvaktAppTests", swiftSettings: strictSettings),
    ]
)
