import Foundation
import LedgerCore
import LedgerPostgres
import LedgerSecrets
import LedgerTestSupport
import Testing

/// The vault on a real database, as the runtime role: the first key is listed, another is
/// refused, values in clear are sealed, and a rotation moves every value without a moment where
/// a server holding either key cannot open it.
@Suite struct SecretVaultTests {
    static func key() throws -> SecretsKey { try SecretsKey(base64: SecretsKey.generate()) }

    /// A database holding one secret of each kind in clear, as an older ledger wrote them.
    static func databaseWithClearSecrets() async throws -> PostgresConnection {
        let connection = try PostgresConnection.connect(TestCluster.applicationRole(try await TestCluster.database()))
        try connection.query(
            "INSERT INTO ledger.app_secrets (bundle_id, shared_secret) VALUES ('com.example.game', 'clear-shared-secret-0001')")
        try connection.query(
            "INSERT INTO ledger.app_server_api_keys (bundle_id, issuer_id, key_id, private_key) VALUES ('com.example.game', 'issuer', 'KEY1', 'clear-pem-0002')"
        )
        try connection.query(
            """
            INSERT INTO ledger.webhooks (bundle_id, name, url, secret, starts_after)
            VALUES ('com.example.game', 'orders', 'https://example.com/hook', 'clear-webhook-secret-0003', 0)
            """)
        return connection
    }

    static func stored(_ connection: PostgresConnection) throws -> [String] {
        try StoredSecrets.columns.flatMap { column in
            try connection.query("SELECT \(column.column) AS value FROM \(column.table)").map { try $0["value"].string() }
        }
    }

    @Test func theFirstKeyIsListedValuesInClearAreSealedAndAnotherKeyIsRefused() async throws {
        let connection = try await Self.databaseWithClearSecrets()
        let key = try Self.key()
        let report = try SecretVault(keyring: Keyring([key])).prepare(connection)
        #expect(report.listed == [key.id] && report.sealed == 3)
        let values = try Self.stored(connection)
        #expect(values.count == 3 && values.allSatisfy { Keyring.keyIDs(of: $0) == [key.id] })
        #expect(!values.joined().contains("clear-"))
        let keyring = Keyring([key])
        #expect(try keyring.open(values[0], for: StoredSecrets.sharedSecret(of: "com.example.game")) == "clear-shared-secret-0001")

        #expect(try SecretVault(keyring: keyring).prepare(connection) == SecretVault.Report(), "a second start changes nothing")
        let stranger = try Self.key()
        let error = #expect(throws: SecretVaultError.self) { try SecretVault(keyring: Keyring([stranger])).prepare(connection) }
        let said = "\(error.map { "\($0)" } ?? "")"
        #expect(said.contains("LEDGER_SECRETS_KEY") && said.contains(key.id) && said.contains(stranger.id), "\(said)")
        #expect(try connection.query("SELECT key_id FROM ledger.secrets_keys").map { try $0["key_id"].string() } == [key.id])
    }

    @Test func aRotationSealsUnderBothKeysThenUnderTheNewOneAlone() async throws {
        let connection = try await Self.databaseWithClearSecrets()
        let (old, new) = (try Self.key(), try Self.key())
        _ = try SecretVault(keyring: Keyring([old])).prepare(connection)

        let rotated = try SecretVault(keyring: Keyring([old, new])).rotate(connection)
        #expect(rotated.listed == [new.id] && rotated.resealed == 3)
        #expect(try Self.stored(connection).allSatisfy { Keyring.keyIDs(of: $0) == [old.id, new.id] })
        // Servers holding either key start and open every value.
        for held in [old, new] {
            _ = try SecretVault(keyring: Keyring([held])).prepare(connection)
            let shared = try Self.stored(connection)[0]
            #expect(try Keyring([held]).open(shared, for: StoredSecrets.sharedSecret(of: "com.example.game")) == "clear-shared-secret-0001")
        }
        // A server still on the old key stores a secret meanwhile: finishing refuses until the
        // rotation has been run again.
        try connection.query(
            "UPDATE ledger.app_secrets SET shared_secret = $1",
            [Keyring([old]).seal("changed-during-switch", for: StoredSecrets.sharedSecret(of: "com.example.game"))])
        let refusal = #expect(throws: SecretVaultError.self) { try SecretVault(keyring: Keyring([new])).finish(connection) }
        #expect("\(refusal.map { "\($0)" } ?? "")".contains("ledger.app_secrets (com.example.game, shared_secret)"))
        #expect(try connection.query("SELECT count(*) AS n FROM ledger.secrets_keys")[0]["n"].int() == 2, "nothing forgotten")

        _ = try SecretVault(keyring: Keyring([old, new])).rotate(connection)
        let finished = try SecretVault(keyring: Keyring([new])).finish(connection)
        #expect(finished.resealed == 3 && finished.dropped == [old.id])
        #expect(try Self.stored(connection).allSatisfy { Keyring.keyIDs(of: $0) == [new.id] })
        #expect(throws: SecretVaultError.self) { try SecretVault(keyring: Keyring([old])).prepare(connection) }
        let shared = try Self.stored(connection)[0]
        #expect(try Keyring([new]).open(shared, for: StoredSecrets.sharedSecret(of: "com.example.game")) == "changed-during-switch")
    }

    /// A secret column added later and not on the list would stay in clear: every column whose
    /// name says it holds a secret must be one the vault walks.
    @Test func everySecretColumnOfTheSchemaIsSealed() async throws {
        let connection = try PostgresConnection.connect(try await TestCluster.database())
        let columns = try connection.query(
            """
            SELECT table_schema || '.' || table_name AS tbl, column_name AS col FROM information_schema.columns
             WHERE table_schema = 'ledger' AND (column_name ~ '(secret|private|password|credential)' OR column_name ~ '(^|_)key$')
               AND table_name NOT IN ('secrets_keys')
            """
        ).map { "\(try $0["tbl"].string()).\(try $0["col"].string())" }
        let sealed = Set(StoredSecrets.columns.map { "\($0.table).\($0.column)" })
        // Hashes and ids are not secrets: an API key is stored only as its SHA-256, a key id names a
        // key, a Google purchase key is a prefix of its token's SHA-256.
        let notSecrets: Set = [
            "ledger.api_keys.key_hash", "ledger.app_server_api_keys.key_id", "ledger.console_sessions.token_hash",
            "ledger.google_purchases.purchase_key",
        ]
        #expect(!columns.isEmpty)
        for column in columns where !notSecrets.contains(column) {
            #expect(sealed.contains(column), "\(column) looks like a secret and is not sealed")
        }
    }
}
