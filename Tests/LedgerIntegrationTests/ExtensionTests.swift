import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerPostgres
import LedgerTestSupport
import Testing

/// Support extends subscriptions at Apple through the ledger, with Apple's limits answered before
/// asking; and a user's appAccountToken is set at Apple on the purchases Apple knows without it.
@Suite(.takingTurns) struct ExtensionTests {
    static let bundle = TestServer.bundleID
    static let day: TimeInterval = 86_400

    static func subscription(_ id: String, expiresIn days: Double = 20) -> SimulatedTransaction {
        SimulatedTransaction(
            transactionID: id, productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -10 * day),
            expiresDate: Date(timeIntervalSinceNow: days * day))
    }

    func buy(_ server: TestServer, _ user: String, _ transaction: SimulatedTransaction, key: String) async throws {
        server.serverAPI.add([transaction], to: server.app)
        let answer = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": user, "signed_transaction": try server.app.signedTransaction(transaction)])
        #expect(answer.status == 200, "\(answer.text)")
    }

    func expiry(_ server: TestServer, _ user: String, key: String) async throws -> String? {
        let state = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/\(user)", key: key)
        return ((state.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable])?["expires_at"] as? String
    }

    func extend(
        _ server: TestServer, _ original: String, days: Int = 30, reason: Int = 3, request: String = UUID().uuidString
    ) async throws -> TestServer.Answer {
        try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/subscriptions/\(original)/extend", key: server.adminKey,
            json: ["days": days, "reason_code": reason, "request_id": request])
    }

    @Test func oneSubscriptionIsExtendedTwiceAYearAtMostAndTheStateFollowsAtOnce() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        try await buy(server, "alice", Self.subscription("ex-1"), key: key)
        let before = try #require(try await expiry(server, "alice", key: key))

        let request = UUID().uuidString
        let first = try await extend(server, "ex-1", request: request)
        #expect(first.status == 200 && first.json["original_transaction_id"] as? String == "ex-1", "\(first.text)")
        let after = try #require(try await expiry(server, "alice", key: key))
        let moved = try #require(RFC3339Reader.date(after)).timeIntervalSince(try #require(RFC3339Reader.date(before)))
        #expect(abs(moved - 30 * Self.day) < 1, "the entitlement now ends 30 days later: \(before) → \(after)")
        // The same request again is the same extension (Apple answers as before; nothing counted twice).
        #expect(try await extend(server, "ex-1", request: request).status == 200)
        #expect(try await expiry(server, "alice", key: key) == after)
        let second = try await extend(server, "ex-1")
        #expect(second.status == 200, "\(second.text)")
        let third = try await extend(server, "ex-1")
        #expect(third.status == 409 && third.errorCode == "extension_limit_reached", "\(third.text)")

        // Apple's limits, before asking Apple.
        let asked = server.serverAPI.seen().count
        #expect(try await extend(server, "ex-1", days: 91).errorCode == "invalid_days")
        #expect(try await extend(server, "ex-1", reason: 7).errorCode == "invalid_reason_code")
        #expect(try await extend(server, "ex-1", request: "not a request id!").errorCode == "invalid_request_id")
        #expect(try await extend(server, "nope").errorCode == "unknown_transaction")
        #expect(server.serverAPI.seen().count == asked, "none of these reached Apple")
        let reader = try await server.key([.read])
        #expect(
            try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/subscriptions/ex-1/extend", key: reader,
                json: ["days": 1, "reason_code": 1, "request_id": "r"]
            ).status == 403)

        // Family-shared: refused by the ledger; a subscription Apple says it cannot extend: Apple's refusal, by its code.
        var shared = Self.subscription("ex-2")
        shared.ownership = "FAMILY_SHARED"
        try await buy(server, "bob", shared, key: key)
        #expect(try await extend(server, "ex-2").errorCode == "family_shared_not_supported")
        let revokedAtApple = Self.subscription("ex-3")
        try await buy(server, "carol", revokedAtApple, key: key)
        server.serverAPI.add([revokedAtApple.revoked(at: Date())], to: server.app)
        let ineligible = try await extend(server, "ex-3")
        #expect(ineligible.status == 409 && ineligible.errorCode == "subscription_extension_ineligible", "\(ineligible.text)")

        // Who extended what is kept.
        let kept = try await server.eventCount(ofType: "RenewalExtendedAtApple")
        #expect(kept == 2)
    }

    @Test func supportExtendsFromTheUsersConsolePageAndTheTimelineSaysWho() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        try await buy(server, "hana", Self.subscription("cx-1"), key: key)
        let before = try #require(try await expiry(server, "hana", key: key))
        let admin = try await ConsoleTests.signIn(server, key: server.adminKey)
        let page = try await server.send("GET", "/console/apps/\(Self.bundle)/users/hana", headers: [("Cookie", admin.cookie)]).text
        let requestID = try #require(
            page.range(of: #"name="request_id" value="[0-9a-f-]+""#, options: .regularExpression)
                .map { String(page[$0].dropFirst(#"name="request_id" value=""#.count).dropLast()) })
        let form = "csrf=\(ConsoleTests.csrf(page))&request_id=\(requestID)&days=5&reason=3"
        for _ in 0..<2 { // sent twice (a double click): extended once
            let sent = try await server.send(
                "POST", "/console/apps/\(Self.bundle)/users/hana/subscriptions/cx-1/extend", body: Data(form.utf8),
                headers: [("Cookie", admin.cookie), ("Content-Type", "application/x-www-form-urlencoded")], followingRedirects: false)
            #expect(sent.status == 303, "\(sent.text)")
        }
        let after = try #require(try await expiry(server, "hana", key: key))
        let moved = try #require(RFC3339Reader.date(after)).timeIntervalSince(try #require(RFC3339Reader.date(before)))
        #expect(abs(moved - 5 * Self.day) < 1, "\(before) → \(after)")
        let shown = try await server.send("GET", "/console/apps/\(Self.bundle)/users/hana", headers: [("Cookie", admin.cookie)]).text
        #expect(shown.contains("renewal date of cx-1 extended at Apple by 5 days (reason 3), by admin"), "\(shown.suffix(3000))")
        #expect(shown.components(separatedBy: "extended at Apple by 5 days").count == 2, "once, though the form was sent twice")
        // A read-only key sees no form.
        let reader = try await ConsoleTests.signIn(server, key: try await server.key([.read]))
        #expect(
            !(try await server.send("GET", "/console/apps/\(Self.bundle)/users/hana", headers: [("Cookie", reader.cookie)]).text.contains(
                "class=\"inline extend\"")))
    }

    @Test func everyActiveSubscriberOfAProductIsExtendedAndItsProgressRead() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        try await buy(server, "dana", Self.subscription("mx-1"), key: key)
        try await buy(server, "erin", Self.subscription("mx-2"), key: key)
        try await buy(server, "finn", Self.subscription("mx-3", expiresIn: -2), key: key) // lapsed: not extended
        let request = UUID().uuidString
        let accepted = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/products/pro.monthly/extend", key: server.adminKey,
            json: ["days": 7, "reason_code": 3, "request_id": request, "storefronts": ["USA"], "environment": "Sandbox"])
        #expect(accepted.status == 202 && accepted.json["request_id"] as? String == request, "\(accepted.text)")
        let status = try await server.send(
            "GET", "/v1/apps/\(Self.bundle)/products/pro.monthly/extend/\(request)?environment=Sandbox", key: server.adminKey)
        #expect(status.status == 200, "\(status.text)")
        #expect(status.json["complete"] as? Bool == true && status.json["succeeded"] as? Int == 2 && status.json["failed"] as? Int == 0)
        #expect(status.json["completed_at"] is String)
        for (body, code) in [
            (["days": 7, "reason_code": 3, "request_id": "r", "storefronts": ["usa"]] as [String: Any], "invalid_storefront"),
            (["days": 0, "reason_code": 3, "request_id": "r"], "invalid_days"),
        ] {
            #expect(
                try await server.send("POST", "/v1/apps/\(Self.bundle)/products/pro.monthly/extend", key: server.adminKey, json: body)
                    .errorCode == code)
        }
        #expect(
            try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/products/coins.100/extend", key: server.adminKey,
                json: ["days": 7, "reason_code": 3, "request_id": "r"]
            ).errorCode == "not_a_subscription")
        // Apple's summary arrives as a notification and is listed on the app's console page.
        let reader = try await ConsoleTests.signIn(server, key: try await server.key([.read]))
        var page = ""
        for _ in 0..<100 {
            page = try await server.send("GET", "/console/apps/\(Self.bundle)", headers: [("Cookie", reader.cookie)]).text
            if page.contains("extension \(request.lowercased())") || page.contains("extension \(request)") { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(page.contains("extension \(request)") && page.contains("2 extended, 0 failed"), "\(page.prefix(2000))")
        #expect(
            page.contains("every active subscriber of pro.monthly extended by 7 days (request \(request)), by admin"), "who asked is shown")
    }

    @Test func aLinkedTokenIsSetAtAppleOnThePurchasesAppleKnowsWithoutIt() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        try await buy(server, "gail", Self.subscription("tk-1"), key: key)
        var shared = Self.subscription("tk-2")
        shared.ownership = "FAMILY_SHARED"
        try await buy(server, "gail", shared, key: key)
        let token = UUID()
        let linked = try await server.send("PUT", "/v1/apps/\(Self.bundle)/users/gail/app-account-tokens/\(token)", key: key)
        #expect(linked.status == 200, "\(linked.text)")
        let apple = (linked.json["apple"] as? [[String: any Sendable]] ?? []).reduce(into: [String: String]()) {
            $0[$1["original_transaction_id"] as? String ?? ""] = $1["status"] as? String
        }
        #expect(apple == ["tk-1": "sent", "tk-2": "family_shared"], "\(linked.text)")
        // Apple now keeps it: a restore pulls the transaction back carrying the token.
        let synced = try await server.send("POST", "/v1/apps/\(Self.bundle)/users/gail/sync", key: key, json: ["transaction_id": "tk-1"])
        #expect(synced.status == 200, "\(synced.text)")
        let again = try await server.send("PUT", "/v1/apps/\(Self.bundle)/users/gail/app-account-tokens/\(token)", key: key)
        let second = (again.json["apple"] as? [[String: any Sendable]] ?? []).first { $0["original_transaction_id"] as? String == "tk-1" }
        #expect(second?["status"] as? String == "already_at_apple", "\(again.text)")
        let sent = try await server.eventCount(ofType: "AppAccountTokenSentToApple")
        #expect(sent == 1)
    }
}

/// RFC 3339 as the API writes it, read back for arithmetic in tests.
enum RFC3339Reader {
    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }
}
