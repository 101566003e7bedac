import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerPostgres
import LedgerTestSupport
import Testing

/// `POST …/users/{u}/merge`: a player who bought while anonymous signs in, and everything the
/// anonymous account held moves to the signed-in one as recorded facts.
@Suite(.takingTurns) struct MergeTests {
    static let bundle = TestServer.bundleID

    static func entitlement(_ state: [String: any Sendable], _ name: String) -> Bool? {
        ((state["entitlements"] as? [String: any Sendable])?[name] as? [String: any Sendable])?["active"] as? Bool
    }

    static func balance(_ state: [String: any Sendable], _ currency: String) -> Int? {
        (state["balances"] as? [String: any Sendable])?[currency] as? Int
    }

    @Test func everythingTheOtherAccountHoldsMovesAndAskingAgainRecordsNothing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let b = Self.bundle
        let key = try await server.key([.ingest, .read])
        let token = UUID()
        #expect(try await server.send("PUT", "/v1/apps/\(b)/users/anon-7/app-account-tokens/\(token)", key: key).status == 200)
        var subscription = SimulatedTransaction(
            transactionID: "m-1", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -60),
            expiresDate: Date(timeIntervalSinceNow: 86_400))
        subscription.appAccountToken = token
        let coins = SimulatedTransaction(
            transactionID: "m-2", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
        for transaction in [subscription, coins] {
            let bought = try await server.send(
                "POST", "/v1/apps/\(b)/transactions", key: key,
                json: ["user_id": "anon-7", "signed_transaction": try server.app.signedTransaction(transaction)])
            #expect(bought.status == 200, "\(bought.text)")
        }
        let spent = try await server.send(
            "POST", "/v1/apps/\(b)/users/anon-7/consumptions", key: key,
            json: ["currency": "coins", "amount": 30, "idempotency_key": "spend-1"])
        #expect(spent.status == 200, "\(spent.text)")
        let granted = try await server.send(
            "POST", "/v1/apps/\(b)/users/anon-7/grants", key: server.adminKey,
            json: ["entitlement": "vip", "duration": "P7D", "reason": "welcome"])
        #expect(granted.status == 201, "\(granted.text)")
        // The signed-in account has a balance of its own already.
        let own = SimulatedTransaction(
            transactionID: "m-3", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
        _ = try await server.send(
            "POST", "/v1/apps/\(b)/transactions", key: key,
            json: ["user_id": "sam", "signed_transaction": try server.app.signedTransaction(own)])
        // An instant between everything above and the merge, in whole seconds as `at` is given.
        try await Task.sleep(for: .seconds(1.1))
        let beforeMerge = Date()

        let merged = try await server.send("POST", "/v1/apps/\(b)/users/sam/merge", key: key, json: ["from": "anon-7"])
        #expect(merged.status == 200, "\(merged.text)")
        #expect(merged.json["user_id"] as? String == "sam")
        #expect(Self.entitlement(merged.json, "pro") == true, "the subscription moved: \(merged.text)")
        #expect(Self.entitlement(merged.json, "vip") == true, "the grant moved: \(merged.text)")
        #expect(
            Self.balance(merged.json, "coins") == 170,
            "100 of sam's own, and what was left of anon-7's 100 after spending 30: \(merged.text)")

        let anon = try await server.send("GET", "/v1/apps/\(b)/users/anon-7", key: key)
        #expect(Self.entitlement(anon.json, "pro") != true && Self.entitlement(anon.json, "vip") != true, "\(anon.text)")
        #expect((Self.balance(anon.json, "coins") ?? 0) == 0, "\(anon.text)")
        #expect((anon.json["subscriptions"] as? [Any])?.isEmpty == true, "\(anon.text)")
        let holder = try await server.send("GET", "/v1/apps/\(b)/app-account-tokens/\(token)", key: key)
        #expect(holder.json["user_id"] as? String == "sam", "the token's link moved: \(holder.text)")

        // Asked about an instant before the merge, each account answers as it did then.
        let at = RFC3339Text.string(beforeMerge)
        let anonThen = try await server.send("GET", "/v1/apps/\(b)/users/anon-7?at=\(at)", key: key)
        #expect(Self.entitlement(anonThen.json, "pro") == true && Self.balance(anonThen.json, "coins") == 70, "\(anonThen.text)")
        let samThen = try await server.send("GET", "/v1/apps/\(b)/users/sam?at=\(at)", key: key)
        #expect(Self.entitlement(samThen.json, "pro") != true && Self.balance(samThen.json, "coins") == 100, "\(samThen.text)")

        // The trail says why: recorded facts with the reason `merged`.
        let trail = try await server.send("GET", "/v1/apps/\(b)/users/sam/events", key: key)
        let reasons = (trail.json["events"] as? [[String: any Sendable]] ?? []).compactMap { event -> String? in
            guard ["OwnershipTransferred", "BalanceMoved"].contains(event["type"] as? String) else { return nil }
            return (event["data"] as? [String: any Sendable])?["reason"] as? String
        }
        #expect(reasons.count == 3 && reasons.allSatisfy { $0 == "merged" }, "two purchases and the coins: \(reasons)")

        let events = try await server.pool.query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
        let again = try await server.send("POST", "/v1/apps/\(b)/users/sam/merge", key: key, json: ["from": "anon-7"])
        #expect(again.status == 200 && Self.balance(again.json, "coins") == 170, "\(again.text)")
        #expect(
            try await server.pool.query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int() == events, "a second merge records nothing"
        )

        let itself = try await server.send("POST", "/v1/apps/\(b)/users/sam/merge", key: key, json: ["from": "sam"])
        #expect(itself.status == 400 && itself.errorCode == "invalid_merge", "\(itself.text)")
        let readOnly = try await server.key([.read])
        #expect(try await server.send("POST", "/v1/apps/\(b)/users/sam/merge", key: readOnly, json: ["from": "x"]).status == 403)
    }

    /// A debt moves as a credit does: the account that spent currency later refunded by Apple owes
    /// it, and so does the account it was merged into.
    @Test func aDebtMovesWithTheAccount() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let b = Self.bundle
        let key = try await server.key([.ingest, .read])
        let coins = SimulatedTransaction(
            transactionID: "d-9", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -600))
        _ = try await server.send(
            "POST", "/v1/apps/\(b)/transactions", key: key,
            json: ["user_id": "guest", "signed_transaction": try server.app.signedTransaction(coins)])
        _ = try await server.send(
            "POST", "/v1/apps/\(b)/users/guest/consumptions", key: key, json: ["currency": "coins", "amount": 80, "idempotency_key": "k"])
        let refund = try server.app.notificationV2("REFUND", transaction: coins.revoked(at: Date(timeIntervalSinceNow: -60)))
        #expect(try await NotificationSender().send(refund, to: "\(server.baseURL)/v1/apps/\(b)/notifications/apple") == 200)
        let guest = try await server.send("GET", "/v1/apps/\(b)/users/guest", key: key)
        #expect(Self.balance(guest.json, "coins") == -80, "the refund left a debt: \(guest.text)")

        let merged = try await server.send("POST", "/v1/apps/\(b)/users/player/merge", key: key, json: ["from": "guest"])
        #expect(merged.status == 200 && Self.balance(merged.json, "coins") == -80, "\(merged.text)")
        let after = try await server.send("GET", "/v1/apps/\(b)/users/guest", key: key)
        #expect((Self.balance(after.json, "coins") ?? 0) == 0, "\(after.text)")
    }
}
