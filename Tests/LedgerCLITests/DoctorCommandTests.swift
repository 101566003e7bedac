import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerSchema
import LedgerSecrets
import LedgerTestSupport
import Testing

/// `ledger doctor` as support runs it against an installation: a healthy one passes every check;
/// a schema behind the binary, a secrets key the database does not know, an unreadable digest key
/// are each named with what to do, and the command exits 1.
@Suite(.takingTurns) struct DoctorCommandTests {
    func doctor(_ database: PostgresConfiguration, key: String, extra: [String: String] = [:]) async throws -> ChildProcess.Outcome {
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = database.connectionString
        environment["LEDGER_SECRETS_KEY"] = key
        environment.removeValue(forKey: "LEDGER_DIGEST_KEY_FILE")
        for (name, value) in extra { environment[name] = value }
        return try await ChildProcess.run(LedgerCommandTests.ledgerBinary, ["doctor", "--offline"], environment: environment)
    }

    @Test func aHealthyInstallationPassesAndEachFaultIsNamedWithWhatToDo() async throws {
        let database = try await TestCluster.database()
        let key = LedgerCommandTests.secretsKey
        // The database knows its key, as after a first `ledger serve`.
        _ = try SecretVault(keyring: Keyring([try SecretsKey(base64: key)])).prepare(
            PostgresConnection.connect(TestCluster.applicationRole(database)))

        let healthy = try await doctor(database, key: key)
        #expect(healthy.status == 0, "\(healthy.output)")
        for line in [
            "ok   database: PostgreSQL", "ok   schema: all", "ok   roles: the server runs as", "ok   secrets key: opens every",
            "nothing wrong found",
        ] {
            #expect(healthy.output.contains(line), "\(line)\n\(healthy.output)")
        }

        let stranger = try await doctor(database, key: SecretsKey.generate())
        #expect(stranger.status == 1, "\(stranger.output)")
        #expect(
            stranger.output.contains("FAIL secrets key: LEDGER_SECRETS_KEY does not open this database's secrets"), "\(stranger.output)")

        let badDigestKey = try await doctor(database, key: key, extra: ["LEDGER_DIGEST_KEY_FILE": "/nonexistent/digest.pem"])
        #expect(badDigestKey.status == 1 && badDigestKey.output.contains("FAIL digest key"), "\(badDigestKey.output)")
        #expect(badDigestKey.output.contains("ledger digest-key generate"))

        let behind = try await TestCluster.database(migrations: try LedgerSchema.migrations().count - 1)
        let old = try await doctor(behind, key: key)
        #expect(old.status == 1 && old.output.contains("FAIL schema: 1 migration(s) not applied"), "\(old.output)")
        #expect(old.output.contains("run `ledger migrate`"))
    }
}
