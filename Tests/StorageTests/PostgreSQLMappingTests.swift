import Testing

@testable import Storage

/// The parts of the libpq wrapper that need no server: release checks, URLs, SQLSTATE mapping.
@Suite("PostgreSQL wrapper without a server")
struct PostgreSQLMappingTests {
    @Test("a server older than PostgreSQL 13 is refused with its release named")
    func versionCheck() throws {
        #expect(PostgreSQLConnection.versionName(120015) == "12.15")
        #expect(PostgreSQLConnection.versionName(90624) == "9.6.24")
        #expect(PostgreSQLConnection.versionName(150004) == "15.4")
        do {
            try PostgreSQLConnection.checkServerVersion(120015, endpoint: "db.example:5432")
            Issue.record("PostgreSQL 12 was accepted")
        } catch {
            #expect(error.code == .unsupportedServer)
            #expect(error.message.contains("PostgreSQL 12.15 at db.example:5432"))
        }
        try PostgreSQLConnection.checkServerVersion(130000, endpoint: "db.example:5432")
    }

    @Test("URLs: libpq parses them, unknown settings are refused, and the password is never shown")
    func urls() throws {
        let configuration = try PostgreSQLConfiguration(
            url:
                "postgresql://app:s%40cret@db.example:6543/portvakt?sslmode=verify-full&sslrootcert=/etc/ca.pem"
                + "&application_name=portvakt-a&connect_timeout=7")
        #expect(configuration.host == "db.example" && configuration.port == 6543)
        #expect(configuration.user == "app" && configuration.password == "s@cret")
        #expect(configuration.database == "portvakt" && configuration.tlsMode == .verifyFull)
        #expect(configuration.rootCertificatePath == "/etc/ca.pem")
        #expect(configuration.applicationName == "portvakt-a" && configuration.connectTimeout == .seconds(7))
        #expect(!configuration.description.contains("s@cret"))
        #expect(configuration.description.contains("<redacted>"))
        let defaults = try PostgreSQLConfiguration(url: "postgresql://app@db.example/portvakt")
        #expect(defaults.port == 5432 && defaults.tlsMode == .verifyFull && defaults.password == nil)
        let refused = [
            "postgresql://app:hunter2@db.example/portvakt?sslmode=prefer",
            "postgresql://app:hunter2@db.example/portvakt?options=-c%20x=1",
            "postgresql://app:hunter2@db.example/portvakt?nonsense=1",
            "postgresql://app:hunter2@db.example",
            "postgresql://app:hunter2@db.example:99999/portvakt",
            "postgresql://app:hunter2@%zz/portvakt",
        ]
        for url in refused {
            do {
                _ = try PostgreSQLConfiguration(url: url)
                Issue.record("\(url) was accepted")
            } catch {
                #expect(error.code == .invalidArgument)
                #expect(!error.message.contains("hunter2"), "\(error)")
            }
        }
    }

    @Test("SQLSTATE classes map to stable codes, and only a serialization failure is retryable")
    func sqlStateMapping() {
        let expected: [String: StorageError.Code] = [
            "23505": .conflict, "23P01": .conflict, "23502": .constraint, "23503": .constraint,
            "23514": .constraint, "40001": .serializationFailure, "40P01": .serializationFailure,
            "57014": .timeout, "55P03": .busy, "08006": .unavailable, "08001": .unavailable,
            "57P01": .unavailable, "57P03": .unavailable, "53300": .unavailable, "25006": .readOnly,
            "22001": .invalidArgument, "22P02": .invalidArgument, "53100": .io, "XX001": .corrupt,
            "42P01": .internal, "42601": .internal,
        ]
        for (sqlState, code) in expected {
            #expect(PostgreSQLErrorMapping.storageCode(sqlState: sqlState) == code, "\(sqlState)")
        }
        #expect(PostgreSQLErrorMapping.endsSession(sqlState: "57P01"))
        #expect(PostgreSQLErrorMapping.endsSession(sqlState: "08006"))
        #expect(!PostgreSQLErrorMapping.endsSession(sqlState: "57014"))
        #expect(StorageError.Code.allCases.filter(\.isRetryable) == [.serializationFailure])
    }
}
