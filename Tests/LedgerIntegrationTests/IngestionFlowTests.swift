import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import Testing

/// Evidence in, state out, over HTTP: the flows a game server and Apple drive.
@Suite(.takingTurns) struct IngestionFlowTests {
    static let bundle = TestServer.bundleID
    static func subscription(
        _ id: String, product: String = "pro.monthly", days: Double = 30, startedAgo: Double = 60
    ) -> SimulatedTransaction {
        SimulatedTransaction(
            transactionID: id, productID: product, purchaseDate: Date(timeIntervalSinceNow: -startedAgo),
            expiresDate: Date(timeIntervalSinceNow: days * 86_400 - startedAgo))
    }

    func eventCount(_ server: TestServer) async throws -> Int {
        try await server.pool.query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
    }

    @Test func aSignedTransactionGrantsItsEntitlementAndPostingItAgainChangesNothing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let ingest = try await server.key([.ingest, .read])
        let purchase = Self.subscription("t-1")
        let jws = try server.app.signedTransaction(purchase)
        let first = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: ingest, json: ["user_id": "alice", "signed_transaction": jws])
        #expect(first.status == 200, "\(first.text)")
        let pro = (first.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable]
        #expect(pro?["active"] as? Bool == true)
        #expect(pro?["product_id"] as? String == "pro.monthly")
        #expect(pro?["original_transaction_id"] as? String == "t-1")
        let events = try await eventCount(server)
        let again = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: ingest, json: ["user_id": "alice", "signed_transaction": jws])
        #expect(again.status == 200)
        #expect(try await eventCount(server) == events, "the same evidence again records nothing")
        let refetched = try server.app.signedTransaction(purchase, signedDate: Date(timeIntervalSinceNow: 5))
        _ = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: ingest, json: ["user_id": "alice", "signed_transaction": refetched])
        #expect(try await eventCount(server) == events, "the same transaction signed again later restates nothing new")
        #expect((again.json["entitlements"] as? [String: any Sendable])?.keys.sorted() == ["pro"])
        let read = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/alice", key: ingest)
        #expect(read.status == 200 && read.json["user_id"] as? String == "alice")
        let stranger = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/nobody", key: ingest)
        #expect(stranger.status == 200 && (stranger.json["entitlements"] as? [String: any Sendable])?.isEmpty == true)
    }

    @Test func aLegacyReceiptFallsBackToSandboxAndCreditsCoinsThatConsumptionsSpendOnce() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let coins = SimulatedTransaction(
            transactionID: "c-1", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -10))
        let receipt = try server.apple.register(server.app.receiptAnswer([coins]), environment: .sandbox, sharedSecret: "s3cret")
        let posted = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/receipts", key: key, json: ["user_id": "bob", "receipt_data": receipt])
        #expect(posted.status == 200, "\(posted.text)")
        #expect((posted.json["balances"] as? [String: any Sendable])?["coins"] as? Int == 100)
        #expect(server.apple.calls(.production) == 1 && server.apple.calls(.sandbox) == 1)
        let events = try await eventCount(server)
        let again = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/receipts", key: key, json: ["user_id": "bob", "receipt_data": receipt])
        #expect(again.status == 200 && (again.json["balances"] as? [String: any Sendable])?["coins"] as? Int == 100)
        #expect(try await eventCount(server) == events, "the same receipt again records nothing, though Apple answered at another time")

        let path = "/v1/apps/\(Self.bundle)/users/bob/consumptions"
        let spend = try await server.send("POST", path, key: key, json: ["currency": "coins", "amount": 30, "idempotency_key": "order-1"])
        #expect(spend.status == 200 && spend.json["balance"] as? Int == 70, "\(spend.text)")
        let replay = try await server.send("POST", path, key: key, json: ["currency": "coins", "amount": 30, "idempotency_key": "order-1"])
        #expect(replay.status == 200 && replay.json["balance"] as? Int == 70 && replay.json["replayed"] as? Bool == true)
        let reused = try await server.send("POST", path, key: key, json: ["currency": "coins", "amount": 31, "idempotency_key": "order-1"])
        #expect(reused.status == 409 && reused.errorCode == "idempotency_key_reused")
        let tooMuch = try await server.send(
            "POST", path, key: key, json: ["currency": "coins", "amount": 71, "idempotency_key": "order-2"])
        #expect(tooMuch.status == 409 && tooMuch.errorCode == "insufficient_balance")
        let state = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/bob", key: key)
        #expect((state.json["balances"] as? [String: any Sendable])?["coins"] as? Int == 70)
    }

    @Test func concurrentConsumptionsNeverTakeTheBalanceBelowZero() async throws {
        let server = try await TestServer.start(poolSize: 8)
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let coins = SimulatedTransaction(
            transactionID: "c-2", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -10))
        let bought = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": "carol", "signed_transaction": try server.app.signedTransaction(coins)])
        #expect(bought.status == 200, "\(bought.text)")
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<25 {
                group.addTask {
                    try await server.send(
                        "POST", "/v1/apps/\(Self.bundle)/users/carol/consumptions", key: key,
                        json: ["currency": "coins", "amount": 7, "idempotency_key": "k\(index)"]
                    ).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 200 }.count == 14, "100 coins cover exactly 14 spends of 7: \(statuses)")
        #expect(statuses.filter { $0 == 409 }.count == 11)
        let state = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/carol", key: key)
        #expect((state.json["balances"] as? [String: any Sendable])?["coins"] as? Int == 2)
    }

    @Test func aNotificationBeforeTheClaimIsKeptAndAttachedAndALateRenewalCannotUndoARefund() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let webhook = "\(server.baseURL)/v1/apps/\(Self.bundle)/notifications/apple"
        let sender = NotificationSender()
        let purchase = Self.subscription("s-1", days: 30, startedAgo: 40 * 86_400) // expired 10 days ago
        let renewal = purchase.renewed(transactionID: "s-2", period: 30 * 86_400) // runs 20 more days
        let renewedAt = Date(timeIntervalSinceNow: -10 * 86_400)
        let renew = try server.app.notificationV2(
            "DID_RENEW", transaction: renewal,
            renewal: SimulatedRenewal(originalTransactionID: "s-1", productID: "pro.monthly"), signedDate: renewedAt)
        // Apple tells us about the renewal before the app ever posted the purchase.
        #expect(try await sender.send(renew, to: webhook) == 200)
        #expect(try await sender.send(renew, to: webhook) == 200, "a redelivery is 200 too")
        let redelivered = try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: renew)
        #expect(redelivered.json["status"] as? String == "already_recorded")

        let beforeClaim = Date()
        let claimed = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: [
                "user_id": "dave",
                "signed_transaction": try server.app.signedTransaction(purchase, signedDate: Date(timeIntervalSinceNow: -40 * 86_400)),
            ])
        let pro = (claimed.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable]
        #expect(pro?["active"] as? Bool == true, "the earlier notification's renewal is attached at the claim: \(claimed.text)")

        // A refund signed now, then the renewal notification delivered again late and re-signed earlier.
        let refund = try server.app.notificationV2(
            "REFUND", transaction: renewal.revoked(at: Date(timeIntervalSinceNow: -60)), signedDate: Date())
        let lateRenewal = try server.app.notificationV2(
            "DID_RENEW", transaction: renewal, signedDate: Date(timeIntervalSinceNow: -5 * 86_400))
        #expect(try await sender.deliver([refund, lateRenewal], to: webhook) == [200, 200])
        let after = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/dave", key: key)
        let proAfter = (after.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable]
        #expect(proAfter?["active"] as? Bool == false, "Apple's signed order decides, not arrival: \(after.text)")

        // Valid time: a day ago Dave owned it (a first claim counts from the purchase) and the
        // renewal ran until the refund of a minute ago. Knowledge time: before the claim, the
        // ledger knew no owner.
        let past = try await server.send(
            "GET", "/v1/apps/\(Self.bundle)/users/dave?at=\(RFC3339Text.string(Date(timeIntervalSinceNow: -86_400)))", key: key)
        let proPast = (past.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable]
        #expect(proPast?["active"] as? Bool == true, "\(past.text)")
        let known = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/dave?known_at=\(RFC3339Text.string(beforeClaim))", key: key)
        #expect((known.json["entitlements"] as? [String: any Sendable])?["pro"] == nil, "before the claim nobody owned it: \(known.text)")
    }

    @Test func autoRenewTurnedOffAndOnAgainIsTwoChangesNotARepeat() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let purchase = Self.subscription("r-1")
        _ = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": "lee", "signed_transaction": try server.app.signedTransaction(purchase)])
        for (offset, on) in [(1.0, true), (2.0, false), (3.0, true)] {
            let renewal = SimulatedRenewal(originalTransactionID: "r-1", productID: "pro.monthly", autoRenewStatus: on)
            let body = try server.app.notificationV2(
                "DID_CHANGE_RENEWAL_STATUS", subtype: on ? "AUTO_RENEW_ENABLED" : "AUTO_RENEW_DISABLED",
                transaction: purchase, renewal: renewal, signedDate: Date(timeIntervalSinceNow: offset))
            #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: body).status == 200)
        }
        let state = try await server.send(
            "GET", "/v1/apps/\(Self.bundle)/users/lee?at=\(RFC3339Text.string(Date(timeIntervalSinceNow: 10)))", key: key)
        let pro = (state.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable]
        #expect(pro?["will_renew"] as? Bool == true, "\(state.text)")
        let renewals = try await server.pool.query("SELECT count(*) FROM ledger.events WHERE event_type = 'AutoRenewChanged'")[0][0].int()
        #expect(renewals == 3)
    }

    @Test func aSecondUserTakesOverUnderTransferAndIsRefusedUnderKeep() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let jws = try server.app.signedTransaction(Self.subscription("o-1"))
        for user in ["erin", "frank"] {
            let answer = try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": user, "signed_transaction": jws])
            #expect(answer.status == 200)
        }
        let erin = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/erin", key: key)
        #expect(
            (erin.json["entitlements"] as? [String: any Sendable])?["pro"].flatMap { ($0 as? [String: any Sendable])?["active"] as? Bool }
                != true)
        let frank = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/frank", key: key)
        #expect(((frank.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable])?["active"] as? Bool == true)
        let trail = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/erin/events", key: key)
        let types = (trail.json["events"] as? [[String: any Sendable]])?.compactMap { $0["type"] as? String } ?? []
        #expect(types.contains("OwnershipTransferred"), "\(trail.text)")

        _ = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)", key: server.adminKey, json: ["restore_policy": "keep", "apple_app_id": 4242])
        let kept = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": "erin", "signed_transaction": jws])
        #expect(kept.status == 409 && kept.errorCode == "transaction_owned_by_another_user", "\(kept.text)")
        #expect(!kept.text.contains("frank"), "the owner's id is not disclosed")
    }

    /// Under `transfer_if_no_active` a live subscription stays with its owner, a lapsed one moves.
    @Test func transferIfNoActiveMovesOnlyALapsedSubscription() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let put = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)", key: server.adminKey, json: ["restore_policy": "transfer_if_no_active", "apple_app_id": 4242])
        #expect(put.status == 200, "\(put.text)")
        let live = try server.app.signedTransaction(Self.subscription("live-1"))
        let lapsed = try server.app.signedTransaction(Self.subscription("lapsed-1", days: 30, startedAgo: 40 * 86_400))
        for jws in [live, lapsed] {
            let bought = try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": "ida", "signed_transaction": jws])
            #expect(bought.status == 200, "\(bought.text)")
        }
        let refused = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": "jon", "signed_transaction": live])
        #expect(refused.status == 409 && refused.errorCode == "transaction_owned_by_another_user", "\(refused.text)")
        #expect(!refused.text.contains("ida"), "the owner's id is not disclosed")

        let moved = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": "jon", "signed_transaction": lapsed])
        #expect(moved.status == 200, "\(moved.text)")
        let jon = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/jon", key: key)
        let subscriptions =
            (jon.json["subscriptions"] as? [[String: any Sendable]])?.compactMap { $0["original_transaction_id"] as? String } ?? []
        #expect(subscriptions == ["lapsed-1"], "\(jon.text)")
        let ida = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/ida", key: key)
        #expect(((ida.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable])?["active"] as? Bool == true)
    }

    @Test func theAuditTrailPagesInOrderWithEvidence() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        for index in 0..<3 {
            let coins = SimulatedTransaction(
                transactionID: "a-\(index)", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -100))
            _ = try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
                json: ["user_id": "gina", "signed_transaction": try server.app.signedTransaction(coins)])
        }
        var positions: [Int] = []
        var cursor: String? = nil
        repeat {
            let page = try await server.send(
                "GET", "/v1/apps/\(Self.bundle)/users/gina/events?limit=2" + (cursor.map { "&after=\($0)" } ?? ""), key: key)
            #expect(page.status == 200)
            let events = page.json["events"] as? [[String: any Sendable]] ?? []
            #expect(events.count <= 2)
            positions += events.compactMap { $0["position"] as? Int }
            if let purchase = events.first(where: { $0["type"] as? String == "Purchased" }) {
                let digest = try #require(purchase["evidence"] as? String)
                // The reference is the SHA-256 of the raw evidence kept in ledger.evidence.
                let kept = try await server.pool.query(
                    "SELECT encode(sha256(body), 'hex') AS h FROM ledger.evidence WHERE digest = $1", [digest])
                #expect(try kept.map { "sha256:" + (try $0["h"].string()) } == [digest])
            }
            cursor = page.json["next"] as? String
        } while cursor != nil
        #expect(positions.count == 6, "3 purchases and 3 claims: \(positions)")
        #expect(positions == positions.sorted())
    }

    @Test func promotionalGrantsStartNowAndEndWhenRevoked() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let path = "/v1/apps/\(Self.bundle)/users/hank/grants"
        let granted = try await server.send(
            "POST", path, key: server.adminKey, json: ["entitlement": "vip", "duration": "P7D", "reason": "apology for outage"])
        #expect(granted.status == 201, "\(granted.text)")
        let grantID = try #require(granted.json["grant_id"] as? String)
        let state = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/hank", key: server.adminKey)
        #expect(
            ((state.json["entitlements"] as? [String: any Sendable])?["vip"] as? [String: any Sendable])?["ownership"] as? String
                == "promotional")
        let revoked = try await server.send(
            "POST", "\(path)/\(grantID)/revoke", key: server.adminKey, json: ["reason": "granted by mistake"])
        #expect(revoked.status == 200, "\(revoked.text)")
        let after = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/hank", key: server.adminKey)
        #expect(
            ((after.json["entitlements"] as? [String: any Sendable])?["vip"] as? [String: any Sendable])?["active"] as? Bool == false,
            "\(after.text)")
        let unknown = try await server.send("POST", "\(path)/nope/revoke", key: server.adminKey, json: [:])
        #expect(unknown.status == 404 && unknown.errorCode == "unknown_grant")
    }
}

enum RFC3339Text {
    static func string(_ date: Date) -> String { date.formatted(Date.ISO8601FormatStyle()) }
}

/// Two servers on one database, as deployed behind a load balancer: what one records, the other
/// answers — its cached timelines are dropped by the projection's announcements.
@Suite(.takingTurns) struct MultiServerTests {
    @Test func aSecondServersCachedStateFollowsWhatTheFirstRecords() async throws {
        let first = try await TestServer.start()
        defer { Task { await first.stop() } }
        let second = try await TestServer.start(configure: false, sharing: first, projecting: false)
        defer { Task { await second.stop() } }
        let key = try await first.key([.ingest, .read])
        let path = "/v1/apps/\(TestServer.bundleID)/users/kim"
        let before = try await second.send("GET", path, key: key)
        #expect(before.status == 200 && (before.json["entitlements"] as? [String: any Sendable])?.isEmpty == true, "\(before.text)")
        _ = try await second.send("GET", path, key: key) // now certainly cached on the second server
        let purchase = IngestionFlowTests.subscription("m-1")
        let posted = try await first.send(
            "POST", "/v1/apps/\(TestServer.bundleID)/transactions", key: key,
            json: ["user_id": "kim", "signed_transaction": try first.app.signedTransaction(purchase)])
        #expect(posted.status == 200)
        var seen = false
        for _ in 0..<100 where !seen {
            let answer = try await second.send("GET", path, key: key)
            seen = ((answer.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable])?["active"] as? Bool == true
            if !seen { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(seen, "the second server stopped answering from its stale cache")
    }
}
