import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerPostgres
import LedgerTestSupport
import Testing

/// The notifications that carry no transaction, end to end through the server: Apple's signed
/// body shapes as the simulator sends them, withdrawn consent shown on every user whose purchases
/// were made in that copy of the app (state, change feed, console), and the app-level notices on
/// the app's console page.
@Suite(.takingTurns) struct AppleBodiesTests {
    static let bundle = TestServer.bundleID

    static func purchase(_ id: String, appTransaction: String?) -> SimulatedTransaction {
        var transaction = SimulatedTransaction(
            transactionID: id, productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -3_600),
            expiresDate: Date(timeIntervalSinceNow: 30 * 86_400))
        transaction.appTransactionID = appTransaction
        return transaction
    }

    func buy(_ server: TestServer, _ user: String, _ transaction: SimulatedTransaction, key: String) async throws {
        let answer = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": user, "signed_transaction": try server.app.signedTransaction(transaction)])
        #expect(answer.status == 200, "\(answer.text)")
    }

    func state(_ server: TestServer, _ user: String, key: String, query: String = "") async throws -> [String: any Sendable] {
        try await server.send("GET", "/v1/apps/\(Self.bundle)/users/\(user)\(query)", key: key).json
    }

    @Test func withdrawnConsentShowsOnEveryHolderOfTheAppTransactionAndRevokesNothing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        try await buy(server, "alice", Self.purchase("rc-1", appTransaction: "704100"), key: key)
        try await buy(server, "bob", Self.purchase("rc-2", appTransaction: "704200"), key: key)
        #expect(try await state(server, "alice", key: key)["consent_rescinded_at"] is NSNull, "nothing withdrawn yet")

        let signed = Date(timeIntervalSinceNow: -1)
        let body = try server.app.notificationV2(
            "RESCIND_CONSENT",
            body: .appData(
                SimulatedAppTransaction(
                    appTransactionID: "704100", originalPurchaseDate: Date(timeIntervalSinceNow: -86_400))), signedDate: signed)
        let answer = try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: body)
        #expect(answer.status == 200, "\(answer.text)")

        let alice = try await state(server, "alice", key: key)
        let at = try #require(alice["consent_rescinded_at"] as? String, "\(alice)")
        #expect(at.hasPrefix(String(ISO8601DateFormatter().string(from: signed).prefix(16))), "the instant Apple signed it: \(at)")
        #expect(
            ((alice["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable])?["active"] as? Bool == true,
            "consent withdrawn revokes nothing: the app decides")
        #expect(try await state(server, "bob", key: key)["consent_rescinded_at"] is NSNull, "another copy of the app is untouched")

        // Apple delivers again: nothing new is recorded, and the answer is still 200.
        let before = try await server.eventCount()
        #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: body).status == 200)
        #expect(try await server.eventCount() == before)

        // A purchase made later in the same copy of the app, by another account of the game.
        try await buy(server, "carol", Self.purchase("rc-3", appTransaction: "704100"), key: key)
        #expect(try await state(server, "carol", key: key)["consent_rescinded_at"] as? String == at)

        // Time travel: before Apple said so, nothing was withdrawn.
        let earlier = ISO8601DateFormatter().string(from: signed.addingTimeInterval(-60))
        #expect(try await state(server, "alice", key: key, query: "?at=\(earlier)")["consent_rescinded_at"] is NSNull)

        // The change feed announces it once per user.
        var announced: [String] = []
        for _ in 0..<200 {
            let feed = try await server.send("GET", "/v1/apps/\(Self.bundle)/changes?limit=100", key: key)
            announced = (feed.json["changes"] as? [[String: any Sendable]] ?? []).filter { $0["type"] as? String == "consent.rescinded" }
                .compactMap { $0["user_id"] as? String }
            if announced.count >= 2 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(announced.sorted() == ["alice", "carol"])

        // Support sees it on the user's page.
        let reader = try await ConsoleTests.signIn(server, key: try await server.key([.read]))
        let page = try await server.send("GET", "/console/apps/\(Self.bundle)/users/alice", headers: [("Cookie", reader.cookie)])
        #expect(page.text.contains(#"id="consent""#) && page.text.contains("withdrew consent"), "\(page.text.prefix(2000))")
    }

    @Test func everyBodyShapeIsKeptAndTheAppsNoticesAreShown() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let bodies: [(String, String?, NotificationBody)] = [
            (
                "RENEWAL_EXTENSION", "SUMMARY",
                .summary(
                    productID: "pro.monthly", requestIdentifier: "req-7f1c", storefronts: ["USA", "CAN"],
                    succeeded: 12, failed: 1)
            ),
            ("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED", .externalPurchaseToken(id: "SANDBOX_b2158121-7af9", created: Date())),
            ("RESCIND_CONSENT", nil, .appData(SimulatedAppTransaction(appTransactionID: "704900", originalPurchaseDate: Date()))),
            ("SOMETHING_NEW_IN_2027", "FIRST", .future(key: "somethingNewData")),
        ]
        let stored = try await server.eventCount()
        for (type, subtype, body) in bodies {
            let signed = try server.app.notificationV2(type, subtype: subtype, body: body)
            let answer = try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: signed)
            #expect(answer.status == 200, "\(type): \(answer.text)")
            #expect(
                try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: signed).status == 200, "\(type) again")
        }
        // Each kept once (a rescission is two facts: the notification and the withdrawal).
        #expect(try await server.eventCount() == stored + bodies.count + 1)

        // Another app's body of each shape is refused, and nothing is written.
        var stranger = server.app
        stranger.bundleID = "com.example.other"
        for (type, subtype, body) in bodies {
            let answer = try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: try stranger.notificationV2(type, subtype: subtype, body: body)
            )
            #expect(answer.status == 422 && answer.errorCode == "bundle_mismatch", "\(type): \(answer.text)")
        }
        #expect(try await server.eventCount() == stored + bodies.count + 1)

        let reader = try await ConsoleTests.signIn(server, key: try await server.key([.read]))
        let page = try await server.send("GET", "/console/apps/\(Self.bundle)", headers: [("Cookie", reader.cookie)])
        #expect(page.status == 200)
        for expected in [
            "extension req-7f1c of pro.monthly in USA, CAN: 12 extended, 1 failed", "external purchase token SANDBOX_b2158121-7af9",
            "consent withdrawn for app transaction 704900", "SOMETHING_NEW_IN_2027",
        ] {
            #expect(page.text.contains(expected), "the app page shows \(expected)")
        }
    }
}
