import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import Testing

/// appAccountToken: the UUID an app hands StoreKit names the user in what Apple signs, so a
/// transaction without user_id and a notification nobody claimed still reach their user.
@Suite(.takingTurns) struct AppAccountTokenTests {
    static let bundle = TestServer.bundleID

    static func purchase(_ id: String, token: UUID?) -> SimulatedTransaction {
        var transaction = IngestionFlowTests.subscription(id)
        transaction.appAccountToken = token
        return transaction
    }

    func proActive(_ server: TestServer, _ user: String, key: String) async throws -> Bool {
        let state = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/\(user)", key: key)
        return ((state.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable])?["active"] as? Bool == true
    }

    @Test func aLinkedTokenNamesTheUserOfATransactionAndOfANotificationNobodyClaimed() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let token = UUID()
        let link = "/v1/apps/\(Self.bundle)/users/ann/app-account-tokens/\(token.uuidString)"
        let first = try await server.send("PUT", link, key: key)
        #expect(first.status == 200 && first.json["status"] as? String == "linked", "\(first.text)")
        #expect(try await server.send("PUT", link, key: key).json["status"] as? String == "already_linked")
        let stolen = try await server.send("PUT", "/v1/apps/\(Self.bundle)/users/bob/app-account-tokens/\(token.uuidString)", key: key)
        #expect(stolen.status == 409 && stolen.errorCode == "app_account_token_linked_to_another_user", "\(stolen.text)")
        let holder = try await server.send("GET", "/v1/apps/\(Self.bundle)/app-account-tokens/\(token.uuidString.lowercased())", key: key)
        #expect(holder.status == 200 && holder.json["user_id"] as? String == "ann", "the first link stays: \(holder.text)")

        // The app posts the transaction without naming the user.
        let jws = try server.app.signedTransaction(Self.purchase("tok-1", token: token))
        let posted = try await server.send("POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["signed_transaction": jws])
        #expect(posted.status == 200 && posted.json["user_id"] as? String == "ann", "\(posted.text)")
        #expect(try await proActive(server, "ann", key: key))

        // A purchase made elsewhere: Apple's notification alone attributes it.
        let elsewhere = Self.purchase("tok-2", token: token)
        let body = try server.app.notificationV2(
            "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: elsewhere,
            renewal: SimulatedRenewal(originalTransactionID: "tok-2", productID: "pro.monthly"), signedDate: Date())
        #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: body).status == 200)
        let owners = try await server.pool.query("SELECT user_id FROM ledger.transaction_owners WHERE original_transaction_id = 'tok-2'")
        #expect(try owners.map { try $0[0].string() } == ["ann"])
    }

    @Test func aTokenIsLearntFromTheFirstUserWhoPresentsItAndNeverMovesAPurchaseByNotification() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let token = UUID()
        let jws = try server.app.signedTransaction(Self.purchase("learn-1", token: token))
        #expect(
            try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
                json: ["user_id": "cleo", "signed_transaction": jws]
            ).status == 200)
        let holder = try await server.send("GET", "/v1/apps/\(Self.bundle)/app-account-tokens/\(token.uuidString)", key: key)
        #expect(holder.json["user_id"] as? String == "cleo", "\(holder.text)")

        // dan restores it (transfer policy): the purchase moves, the token does not.
        #expect(
            try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
                json: ["user_id": "dan", "signed_transaction": jws]
            ).status == 200)
        #expect(
            try await server.send("GET", "/v1/apps/\(Self.bundle)/app-account-tokens/\(token.uuidString)", key: key).json["user_id"]
                as? String == "cleo")
        // A renewal notification carrying cleo's token leaves the purchase with dan.
        let renewal = Self.purchase("learn-1", token: token).renewed(transactionID: "learn-1-r", period: 30 * 86_400)
        let body = try server.app.notificationV2("DID_RENEW", transaction: renewal, signedDate: Date())
        #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: body).status == 200)
        #expect(try await proActive(server, "dan", key: key))
        #expect(try await !proActive(server, "cleo", key: key))
    }

    @Test func withoutUserIDTheTokenMustBeThereAndLinked() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let path = "/v1/apps/\(Self.bundle)/transactions"
        let noToken = try await server.send(
            "POST", path, key: key, json: ["signed_transaction": try server.app.signedTransaction(Self.purchase("n-1", token: nil))])
        #expect(noToken.status == 400 && noToken.errorCode == "missing_user_id", "\(noToken.text)")
        let unknown = try await server.send(
            "POST", path, key: key, json: ["signed_transaction": try server.app.signedTransaction(Self.purchase("n-2", token: UUID()))])
        #expect(unknown.status == 400 && unknown.errorCode == "unknown_app_account_token", "\(unknown.text)")
        #expect(
            try await server.pool.query("SELECT count(*) FROM ledger.events WHERE event_type = 'Purchased'")[0][0].int() == 0,
            "nothing is recorded for evidence nobody can own")
        let badToken = try await server.send("GET", "/v1/apps/\(Self.bundle)/app-account-tokens/not-a-uuid", key: key)
        #expect(badToken.status == 400 && badToken.errorCode == "invalid_app_account_token")
        let unlinked = try await server.send("GET", "/v1/apps/\(Self.bundle)/app-account-tokens/\(UUID().uuidString)", key: key)
        #expect(unlinked.status == 404 && unlinked.errorCode == "unknown_app_account_token")
        let reader = try await server.key([.read])
        let forbidden = try await server.send("PUT", "/v1/apps/\(Self.bundle)/users/x/app-account-tokens/\(UUID().uuidString)", key: reader)
        #expect(forbidden.status == 403)
        let otherApp = try await server.send(
            "PUT", "/v1/apps/com.example.unknown/users/x/app-account-tokens/\(UUID().uuidString)", key: key)
        #expect(otherApp.status == 404)
    }
}
