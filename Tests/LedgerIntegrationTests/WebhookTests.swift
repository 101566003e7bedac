import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import LedgerWebhooks
import Testing
import WebhookReceiver

/// Webhooks and the change feed over HTTP: definitions and their refusals, signed deliveries of
/// what a purchase, a refund and a spend changed, the feed, long polls, parking and replay.
@Suite(.takingTurns) struct WebhookTests {
    static let bundle = TestServer.bundleID
    static let secret = "whsec_0123456789abcdef0123456789abcdef"

    /// A server and a listening receiver (`behaviour`: how it answers each attempt).
    func started(
        _ policy: WebhookPolicy = TestServer.quickWebhooks,
        behaviour: @escaping @Sendable (Int, String) -> WebhookReceiver.Answer = { _, _ in .accept }
    ) async throws -> (TestServer, WebhookReceiver) {
        let server = try await TestServer.start(webhooks: policy)
        let receiver = WebhookReceiver(secret: Self.secret, behaviour: behaviour)
        try await receiver.start()
        return (server, receiver)
    }

    func subscribe(
        _ server: TestServer, _ receiver: WebhookReceiver, name: String = "game", types: [String]? = nil
    ) async throws -> TestServer.Answer {
        var body: [String: Any] = ["url": receiver.url, "secret": Self.secret]
        if let types { body["types"] = types }
        return try await server.send("PUT", "/v1/apps/\(Self.bundle)/webhooks/\(name)", key: server.adminKey, json: body)
    }

    func buy(_ server: TestServer, _ id: String, user: String, product: String = "pro.monthly", key: String) async throws {
        let type = product == "coins.100" ? "Consumable" : "Auto-Renewable Subscription"
        let transaction = SimulatedTransaction(
            transactionID: id, productID: product, type: type, purchaseDate: Date(timeIntervalSinceNow: -60),
            expiresDate: type == "Consumable" ? nil : Date(timeIntervalSinceNow: 30 * 86_400))
        let answer = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": user, "signed_transaction": try server.app.signedTransaction(transaction)])
        #expect(answer.status == 200, "\(answer.text)")
    }

    @Test func definitionsAreCheckedAndTheSecretIsNeverShown() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let receiver = WebhookReceiver(secret: Self.secret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let created = try await subscribe(server, receiver, types: ["entitlement.granted", "balance.credited"])
        #expect(created.status == 201, "\(created.text)")
        let aliased = try await server.send("GET", "/v1/apps/\(Self.bundle)/webhooks", key: server.adminKey)
        #expect(aliased.text.contains("balance.credited") && aliased.text.contains("currency.granted"), "both names kept: \(aliased.text)")
        #expect(try await subscribe(server, receiver, types: ["entitlement.granted"]).status == 200, "a second PUT replaces it")
        let listed = try await server.send("GET", "/v1/apps/\(Self.bundle)/webhooks", key: server.adminKey)
        #expect(listed.status == 200 && listed.text.contains(receiver.url) && listed.text.contains("entitlement.granted"))
        #expect(!listed.text.contains(Self.secret) && !created.text.contains(Self.secret), "the secret is never echoed")

        let path = "/v1/apps/\(Self.bundle)/webhooks/other"
        for (body, problem) in [
            (["url": "ftp://x", "secret": Self.secret], "url"), (["url": "http://127.0.0.1/x", "secret": "short"], "secret"),
            (["url": "http://127.0.0.1/x", "secret": Self.secret, "types": ["entitlement.teleported"]], "types"),
        ] as [([String: Any], String)] {
            let refused = try await server.send("PUT", path, key: server.adminKey, json: body)
            #expect(refused.status == 400 && refused.errorCode == "invalid_webhook" && refused.text.contains(problem), "\(refused.text)")
        }
        let malformed = try await server.send("PUT", path, key: server.adminKey, body: Data("{".utf8))
        #expect(malformed.status == 400)
        let reader = try await server.key([.read])
        #expect(try await server.send("GET", "/v1/apps/\(Self.bundle)/webhooks", key: reader).status == 403, "webhooks are admin's")
        #expect(
            try await server.send(
                "PUT", "/v1/apps/com.unknown/webhooks/x", key: server.adminKey,
                json: ["url": receiver.url, "secret": Self.secret]
            ).status == 404)
        #expect(try await server.send("DELETE", "/v1/apps/\(Self.bundle)/webhooks/game", key: server.adminKey).status == 204)
        #expect(
            try await server.send("DELETE", "/v1/apps/\(Self.bundle)/webhooks/game", key: server.adminKey).errorCode == "unknown_webhook")
        #expect(try await server.send("GET", "/v1/apps/\(Self.bundle)/changes?wait=31", key: reader).errorCode == "invalid_wait")
        #expect(try await server.send("GET", "/v1/apps/\(Self.bundle)/changes?after=x", key: reader).errorCode == "invalid_cursor")
    }

    /// A receiver that authenticates by a token in its URL gets the token with every delivery, and
    /// no one else sees it: the definition's answers and the audit log show the query's names with
    /// their values hidden.
    @Test func aTokenInTheURLGoesWithEveryDeliveryAndIsNeverShown() async throws {
        let (server, receiver) = try await started()
        defer {
            Task {
                await server.stop(); await receiver.stop()
            }
        }
        let token = "tok-5f1c2e9a7b31"
        let created = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)/webhooks/game", key: server.adminKey,
            json: ["url": receiver.url + "?token=\(token)&v=2", "secret": Self.secret])
        #expect(created.status == 201, "\(created.text)")
        let shown = try await server.send("GET", "/v1/apps/\(Self.bundle)/webhooks/game", key: server.adminKey)
        #expect(shown.json["url"] as? String == receiver.url + "?token=***&v=***", "\(shown.text)")
        let audit = try await server.send("GET", "/v1/audit-log?limit=1000", key: server.adminKey)
        #expect(audit.status == 200 && audit.text.contains("webhook.defined"), "\(audit.text)")
        for answer in [created, shown, audit] { #expect(!answer.text.contains(token), "the token is never shown: \(answer.text)") }

        try await buy(server, "tok-1", user: "alice", key: try await server.key([.ingest]))
        #expect(try await eventually { !receiver.accepted.isEmpty }, "the purchase is delivered")
        #expect(receiver.accepted.allSatisfy { $0.query == "token=\(token)&v=2" }, "\(receiver.accepted.map(\.query))")
    }

    @Test func aPurchaseASpendAndARefundArriveSignedInOrderAndTheFeedListsTheSame() async throws {
        let (server, receiver) = try await started()
        defer {
            Task {
                await server.stop(); await receiver.stop()
            }
        }
        #expect(try await subscribe(server, receiver).status == 201)
        let key = try await server.key([.ingest, .read])
        try await buy(server, "w-1", user: "alice", key: key)
        try await buy(server, "w-2", user: "alice", product: "coins.100", key: key)
        let spent = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/users/alice/consumptions", key: key,
            json: ["currency": "coins", "amount": 30, "idempotency_key": "k-1"])
        #expect(spent.status == 200, "\(spent.text)")
        let refunded = SimulatedTransaction(
            transactionID: "w-1", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -60),
            expiresDate: Date(timeIntervalSinceNow: 30 * 86_400))
        var revoked = refunded
        revoked.revocationDate = Date()
        revoked.revocationReason = 0
        let refund = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/notifications/apple",
            body: try server.app.notificationV2("REFUND", transaction: revoked, signedDate: Date(timeIntervalSinceNow: 1)))
        #expect(refund.status == 200, "\(refund.text)")

        let expected = ["entitlement.granted", "currency.granted", "currency.spent", "purchase.refunded", "entitlement.revoked"]
        try await waitUntil { receiver.accepted.count >= expected.count }
        let delivered = receiver.accepted
        #expect(delivered.map(\.type) == expected)
        #expect(delivered.allSatisfy { $0.signatureValid && $0.userID == "alice" })
        #expect(delivered.map(\.position) == delivered.map(\.position).sorted())
        #expect(delivered.last?.body.contains(#""reason":"refund""#) == true && delivered.last?.body.contains(#""active":false"#) == true)

        let feed = try await server.send("GET", "/v1/apps/\(Self.bundle)/changes?limit=3", key: key)
        let changes = feed.json["changes"] as? [[String: any Sendable]] ?? []
        #expect(changes.compactMap { $0["id"] as? String } == delivered.prefix(3).map(\.id), "the feed lists what was delivered, in order")
        let next = try #require(feed.json["next_after"] as? Int)
        let rest = try await server.send("GET", "/v1/apps/\(Self.bundle)/changes?after=\(next)", key: key)
        #expect((rest.json["changes"] as? [[String: any Sendable]])?.compactMap { $0["type"] as? String } == Array(expected.suffix(2)))

        // A long poll waiting after the last change answers with the next one, whenever it comes.
        let last = try #require(rest.json["next_after"] as? Int)
        async let polled = server.send("GET", "/v1/apps/\(Self.bundle)/changes?after=\(last)&wait=20", key: key)
        try await Task.sleep(for: .milliseconds(300))
        try await buy(server, "w-3", user: "bob", product: "coins.100", key: key)
        let answer = try await polled
        let arrived = answer.json["changes"] as? [[String: any Sendable]] ?? []
        #expect(arrived.first?["user_id"] as? String == "bob" && arrived.first?["type"] as? String == "currency.granted", "\(answer.text)")
        let empty = try await server.send("GET", "/v1/apps/\(Self.bundle)/changes?after=\(last + 1_000)&wait=1", key: key)
        #expect(empty.status == 200 && (empty.json["changes"] as? [Any])?.isEmpty == true, "a long poll with nothing new ends empty")
    }

    @Test func aChangeFailingForTheWholeWindowIsParkedTheUsersNextGoesAndAReplaySendsItAgain() async throws {
        var policy = TestServer.quickWebhooks
        policy.retryWindow = .milliseconds(400)
        let refusing = Locked(true)
        let (server, receiver) = try await started(policy) { _, _ in refusing.value ? .fail(status: 500) : .accept }
        defer {
            Task {
                await server.stop(); await receiver.stop()
            }
        }
        // A filter written before 0.10 names the currency's changes by their old name, and still gets them.
        #expect(try await subscribe(server, receiver, types: ["entitlement.granted", "balance.credited"]).status == 201)
        let key = try await server.key([.ingest, .read])
        try await buy(server, "p-1", user: "carol", key: key)
        let failures = "/v1/apps/\(Self.bundle)/webhooks/game/failures"
        var parked: [[String: any Sendable]] = []
        for _ in 0..<100 where parked.isEmpty {
            try await Task.sleep(for: .milliseconds(100))
            parked = try await server.send("GET", failures, key: server.adminKey).json["failures"] as? [[String: any Sendable]] ?? []
        }
        #expect(parked.count == 1 && parked.first?["user_id"] as? String == "carol", "\(parked)")
        #expect((parked.first?["last_error"] as? String)?.contains("HTTP 500") == true)
        #expect((parked.first?["attempts"] as? Int ?? 0) >= 2, "retried before it was parked")

        refusing.withLock { $0 = false }
        try await buy(server, "p-2", user: "carol", product: "coins.100", key: key)
        try await waitUntil { receiver.accepted.count == 1 }
        #expect(receiver.accepted.map(\.type) == ["currency.granted"], "the user's next change went on")

        let position = try #require(parked.first?["position"] as? Int)
        // A position far past any change (and past 2³¹) replays nothing, and is no error.
        let far = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/webhooks/game/replay", key: server.adminKey,
            json: ["from_position": 100_007_148_459.0])
        #expect(far.status == 202 && far.json["users"] as? Int == 0, "\(far.text)")
        let replay = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/webhooks/game/replay", key: server.adminKey, json: ["from_position": position])
        #expect(replay.status == 202 && replay.json["users"] as? Int == 1, "\(replay.text)")
        try await waitUntil { receiver.accepted.count == 3 }
        #expect(
            receiver.accepted.map(\.type) == ["currency.granted", "entitlement.granted", "currency.granted"],
            "replayed from the parked one, in order")
        let after = try await server.send("GET", failures, key: server.adminKey)
        #expect((after.json["failures"] as? [Any])?.isEmpty == true, "a replayed change is no longer parked")
    }

    /// Nothing is recorded when access runs out: the clock finds it, and says when it ended.
    @Test func anExpiryWithNoEventBehindItIsFoundByTheClock() async throws {
        let (server, receiver) = try await started()
        defer {
            Task {
                await server.stop(); await receiver.stop()
            }
        }
        #expect(try await subscribe(server, receiver).status == 201)
        let key = try await server.key([.ingest, .read])
        let ends = Date(timeIntervalSinceNow: 1.5)
        let short = SimulatedTransaction(
            transactionID: "e-1", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -60), expiresDate: ends)
        let posted = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": "dave", "signed_transaction": try server.app.signedTransaction(short)])
        #expect(posted.status == 200, "\(posted.text)")
        // Longer than the default: the clock sweep is a background loop, and the whole suite at
        // once on two cores once kept it from both deliveries for 20 s.
        try await waitUntil(seconds: 60) { receiver.accepted.count >= 2 }
        #expect(receiver.accepted.map(\.type) == ["entitlement.granted", "entitlement.expired"])
        let expired = try #require(receiver.accepted.last)
        let fields = try JSONSerialization.jsonObject(with: Data(expired.body.utf8)) as? [String: Any] ?? [:]
        let occurred = try #require((fields["occurred_at"] as? String).flatMap(RFC3339.parseInstant))
        #expect(abs(occurred.timeIntervalSince(ends)) < 0.002, "occurred_at is when access ended, not when it was noticed")
        #expect(expired.body.contains(#""active":false"#))
    }

    @Test func whatIsLeftOfALotWhenItExpiresIsAnnouncedByTheClock() async throws {
        let (server, receiver) = try await started()
        defer {
            Task {
                await server.stop(); await receiver.stop()
            }
        }
        #expect(try await subscribe(server, receiver).status == 201)
        let app = "/v1/apps/\(Self.bundle)"
        let set = try await server.send(
            "PUT", app + "/currencies/tickets", key: server.adminKey, json: ["name": "Tickets", "expires_after": "PT2S"])
        #expect(set.status == 200, "\(set.text)")
        let granted = try await server.send(
            "POST", app + "/users/erin/currencies/tickets/grants", key: server.adminKey, json: ["amount": 10, "reason": "flash event"])
        #expect(granted.status == 201, "\(granted.text)")
        let key = try await server.key([.ingest, .read])
        let spent = try await server.send(
            "POST", app + "/users/erin/consumptions", key: key, json: ["currency": "tickets", "amount": 4, "idempotency_key": "k"])
        #expect(spent.status == 200, "\(spent.text)")
        try await waitUntil(seconds: 60) { receiver.accepted.count >= 3 }
        #expect(receiver.accepted.map(\.type) == ["currency.granted", "currency.spent", "currency.expired"])
        let expired = try #require(receiver.accepted.last)
        let fields = try JSONSerialization.jsonObject(with: Data(expired.body.utf8)) as? [String: Any] ?? [:]
        let change = fields["change"] as? [String: Any] ?? [:]
        #expect(change["amount"] as? Int == 6 && change["from"] as? Int == 6 && change["to"] as? Int == 0, "\(expired.body)")
        #expect(expired.body.contains(#""balances":{"tickets":0}"#), "\(expired.body)")
    }
}
