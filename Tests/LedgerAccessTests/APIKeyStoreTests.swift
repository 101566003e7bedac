import Foundation
import LedgerAccess
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import Testing

/// Keys as `ledger keys` and the API use them, on the runtime role: the secret shown once and
/// stored only as a hash, scopes and an app limit honoured, a revoked key refused.
@Suite struct APIKeyStoreTests {
    @Test func aKeyIsRecognisedByItsSecretOnlyUntilItIsRevoked() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 2, logger: TestCluster.quietLogger)
        let keys = APIKeyStore(pool: pool, cacheTTL: .zero)
        let (key, secret) = try await keys.create(name: "game-server", scopes: [.ingest], bundleID: "com.example.app")

        let found = try #require(try await keys.authenticate(secret))
        #expect(found.id == key.id)
        #expect(found.grants(.ingest) && !found.grants(.admin) && !found.grants(.finance))
        #expect(found.covers(bundleID: "com.example.app") && !found.covers(bundleID: "com.example.other"))
        #expect(try await keys.authenticate(secret + "0") == nil)
        #expect(try await keys.authenticate("not a key") == nil)

        let stored = try await pool.query("SELECT encode(key_hash, 'hex') AS hash FROM ledger.api_keys WHERE id = $1", [key.id])
        #expect(try stored[0]["hash"].string() != secret && !(try stored[0]["hash"].string().contains(secret)), "only a digest is stored")

        #expect(try await keys.revoke("game-server") == 1)
        #expect(try await keys.authenticate(secret) == nil, "a revoked key is refused")
        #expect(try await keys.revoke("game-server") == 0)
        await pool.close()
    }

    @Test func anAdminKeyGrantsEveryScopeAndAKeyNeedsANameAndAScope() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 1, logger: TestCluster.quietLogger)
        let keys = APIKeyStore(pool: pool, cacheTTL: .zero)
        let (admin, _) = try await keys.create(name: "ops", scopes: [.admin], bundleID: nil)
        #expect(Scope.allCases.allSatisfy(admin.grants))
        await #expect(throws: LedgerError.self) { try await keys.create(name: "", scopes: [.read], bundleID: nil) }
        await #expect(throws: LedgerError.self) { try await keys.create(name: "nothing", scopes: [], bundleID: nil) }
        await pool.close()
    }
}
