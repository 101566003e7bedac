import AppStore
import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerSchema
import LedgerSecrets
import LedgerServer
import LedgerTestSupport
import Testing

/// The routes' contract where neither a socket nor a database is the point: requests go through
/// the real router and middleware in memory (`HummingbirdTesting`'s `.router`), and the database
/// the services point at does not exist (a closed loopback port). What must still be answered —
/// liveness, the API's description, refusals that need nothing stored — is; what needs the
/// database is a 503 in the one error shape, never a hang or a 500.
@Suite struct RouterTests {
    private func withRouter(_ body: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let logger = TestCluster.quietLogger
        let nowhere = PostgresConfiguration(connectionString: "host=127.0.0.1 port=1 dbname=ledger user=ledger connect_timeout=2")
        let pool = PostgresPool(configuration: nowhere, size: 1, waitLimit: .seconds(2), logger: logger)
        let services = LedgerServices(
            pool: pool, store: EventStore(pool: pool, logger: logger),
            migrator: try Migrator(migrations: LedgerSchema.migrations(), logger: logger),
            verifier: SignedDataVerifier(roots: []), keyring: .ephemeral(), receipts: VerifyReceiptConfiguration(), logger: logger)
        let application = services.application(host: "127.0.0.1", port: 0, logger: logger)
        try await application.test(.router) { client in try await body(client) }
        await pool.close()
    }

    private struct ErrorBody: Decodable {
        struct Detail: Decodable { var code: String; var message: String }
        var error: Detail
    }

    private func code(_ response: TestResponse) throws -> String {
        try JSONDecoder().decode(ErrorBody.self, from: Data(response.body.readableBytesView)).error.code
    }

    @Test func livenessAndTheAPIDescriptionNeedNoDatabase() async throws {
        try await withRouter { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/openapi.json", method: .get) { response in
                #expect(response.status == .ok)
                let document = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                let paths = document?["paths"] as? [String: Any] ?? [:]
                #expect(paths["/v1/apps/{bundle_id}/users/{user_id}"] != nil, "\(paths.keys.sorted())")
            }
        }
    }

    @Test func refusalsThatNeedNothingStoredAreAnsweredInTheErrorShape() async throws {
        try await withRouter { client in
            try await client.execute(uri: "/no/such/route", method: .get) { response in
                #expect(response.status == .notFound)
                #expect((try? code(response)) == "not_found")
            }
            try await client.execute(uri: "/v1/apps/com.example.game/users/alice", method: .get) { response in
                #expect(response.status == .unauthorized)
                #expect((try? code(response)) == "missing_api_key")
            }
        }
    }

    /// A documented path asked with a method it does not answer is 405 with the methods it does,
    /// as HTTP says (and schemathesis checks); a path the description lacks is still 404.
    @Test func aDocumentedPathWithAnotherMethodIs405WithAllow() async throws {
        try await withRouter { client in
            for (uri, method, allowed) in [
                ("/healthz", HTTPRequest.Method(rawValue: "TRACE")!, "GET"), ("/v1/apps/com.example.game", .delete, "GET, PUT"),
                ("/v1/apps/com.example.game/webhooks/game", .post, "DELETE, GET, PUT"),
            ] {
                try await client.execute(uri: uri, method: method) { response in
                    #expect(response.status == .methodNotAllowed, "\(method) \(uri)")
                    #expect(response.headers[.allow] == allowed, "\(method) \(uri)")
                    #expect((try? code(response)) == "method_not_allowed")
                }
            }
            try await client.execute(uri: "/v1/apps/com.example.game/nothing-here", method: .delete) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test func whatNeedsTheDatabaseIsA503WithRetryAfterAndReadinessSaysSo() async throws {
        try await withRouter { client in
            try await client.execute(
                uri: "/v1/apps/com.example.game/users/alice", method: .get,
                headers: [.authorization: "Bearer lk_live_0000000000000000"]
            ) { response in
                #expect(response.status == .serviceUnavailable)
                #expect((try? code(response)) == "database_unavailable")
                #expect(response.headers[.retryAfter] != nil)
            }
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
            }
        }
    }

    /// The scheme is case-insensitive and spaces around the token do not count; anything else is
    /// refused before a key is looked up (the 503 shows the accepted ones reached the lookup).
    @Test func authorizationHeadersAreReadAsBearerTokens() async throws {
        try await withRouter { client in
            for header in ["Basic abc", "Bearer", "Bearer ", "Bearer    ", "Bearerlk_live_0", "Beare lk_live_0", "lk_live_0"] {
                try await client.execute(
                    uri: "/v1/apps/com.example.game/users/alice", method: .get,
                    headers: [.authorization: header]
                ) { response in
                    #expect(response.status == .unauthorized, "\(header)")
                    #expect((try? code(response)) == "invalid_api_key", "\(header)")
                }
            }
            for header in ["bearer lk_live_0000000000000000", "BEARER   lk_live_0000000000000000  "] {
                try await client.execute(
                    uri: "/v1/apps/com.example.game/users/alice", method: .get,
                    headers: [.authorization: header]
                ) { response in
                    #expect(response.status == .serviceUnavailable, "\(header)")
                }
            }
        }
    }
}
