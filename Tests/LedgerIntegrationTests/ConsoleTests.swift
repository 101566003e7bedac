import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import NIOHTTP1
import Testing

/// The console's pages and every refusal, server side: sessions, CSRF, scopes, escaping.
@Suite(.takingTurns) struct ConsoleTests {
    static let bundle = TestServer.bundleID

    /// Signs in with `key`; the session cookie (`name=value`).
    static func signIn(
        _ server: TestServer, key: String, headers: [(String, String)] = []
    ) async throws -> (cookie: String, setCookie: String) {
        let answer = try await server.send(
            "POST", "/console/sign-in", body: Data("key=\(key)".utf8),
            headers: [("Content-Type", "application/x-www-form-urlencoded")] + headers, followingRedirects: false)
        #expect(answer.status == 303, "\(answer.text)")
        let setCookie = answer.headers["Set-Cookie"].first ?? ""
        return (String(setCookie.split(separator: ";").first ?? ""), setCookie)
    }

    static func csrf(_ html: String) -> String {
        guard let range = html.range(of: #"name="csrf" value=""#) else { return "" }
        return String(html[range.upperBound...].prefix { $0 != "\"" })
    }

    static func refundedSubscriber(_ server: TestServer, user: String) async throws {
        let key = try await server.key([.ingest])
        let bought = SimulatedTransaction(
            transactionID: "cs-\(user.utf8.count)", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -3 * 86_400),
            expiresDate: Date(timeIntervalSinceNow: 27 * 86_400))
        let posted = try await server.send(
            "POST", "/v1/apps/\(bundle)/transactions", key: key,
            json: ["user_id": user, "signed_transaction": try server.app.signedTransaction(bought)])
        #expect(posted.status == 200, "\(posted.text)")
        let refund = try server.app.notificationV2(
            "REFUND", transaction: bought.revoked(at: Date(timeIntervalSinceNow: -86_400)),
            signedDate: Date(timeIntervalSinceNow: -86_400))
        #expect(try await server.send("POST", "/v1/apps/\(bundle)/notifications/apple", body: refund).status == 200)
        // Apple's notification is answered once recorded; the projection applies it a moment later.
        let reader = try await server.key([.read])
        let path =
            "/v1/apps/\(bundle)/users/" + user.addingPercentEncoding(
                withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz"))!
        for _ in 0..<200 {
            let state = try await server.send("GET", path, key: reader)
            if ((state.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable])?["active"] as? Bool == false {
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("the refund never showed in \(user)'s state")
    }

    @Test func withoutASessionEveryPageIsTheSignInPageAndAWrongKeyIsRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for path in [
            "/console", "/console/apps/\(Self.bundle)", "/console/apps/\(Self.bundle)/users/alice", "/console/apps/\(Self.bundle)/metrics",
        ] {
            let answer = try await server.send("GET", path)
            #expect(answer.status == 401 && answer.text.contains(#"id="sign-in""#), "\(path)")
        }
        let forged = try await server.send("GET", "/console", headers: [("Cookie", "ledger_console=" + String(repeating: "a", count: 64))])
        #expect(forged.status == 401 && forged.text.contains("session ended"))
        let wrong = try await server.send(
            "POST", "/console/sign-in", body: Data("key=lk_nope".utf8), headers: [("Content-Type", "application/x-www-form-urlencoded")])
        #expect(wrong.status == 401 && wrong.text.contains("unknown, revoked, or lacks the read scope"))
        let ingestOnly = try await server.key([.ingest])
        let refused = try await server.send(
            "POST", "/console/sign-in", body: Data("key=\(ingestOnly)".utf8),
            headers: [("Content-Type", "application/x-www-form-urlencoded")])
        #expect(refused.status == 401, "a key without read cannot look")
    }

    @Test func aSessionCookieIsHttpOnlyStrictAndSecureBehindTLSAndEndsOnSignOutIdlenessAndRevocation() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let reader = try await server.keys.create(name: "console-reader", scopes: [.read], bundleID: nil).secret
        let plain = try await Self.signIn(server, key: reader)
        #expect(plain.setCookie.contains("HttpOnly") && plain.setCookie.contains("SameSite=Strict") && !plain.setCookie.contains("Secure"))
        let tls = try await Self.signIn(server, key: reader, headers: [("X-Forwarded-Proto", "https")])
        #expect(tls.setCookie.contains("; Secure"))
        let stored = try await server.pool.query(
            "SELECT count(*) AS n FROM ledger.console_sessions WHERE position($1 in encode(token_hash, 'hex')) > 0",
            [String(plain.cookie.dropFirst("ledger_console=".count))])
        #expect(try stored[0]["n"].int() == 0, "only a hash of the token is stored")

        let home = try await server.send("GET", "/console", headers: [("Cookie", plain.cookie)])
        #expect(home.status == 200 && home.text.contains(Self.bundle))
        // Sign out: the session ends for good.
        let out = try await server.send(
            "POST", "/console/sign-out", body: Data("csrf=\(Self.csrf(home.text))".utf8),
            headers: [("Cookie", plain.cookie), ("Content-Type", "application/x-www-form-urlencoded")], followingRedirects: false)
        #expect(out.status == 303 && (out.headers["Set-Cookie"].first ?? "").contains("Max-Age=0"))
        #expect(try await server.send("GET", "/console", headers: [("Cookie", plain.cookie)]).status == 401)
        // Eight hours idle: over.
        let owner = try PostgresConnection.connect(server.configuration)
        try owner.query("UPDATE ledger.console_sessions SET last_seen_at = now() - interval '8 hours 1 minute'")
        let idle = try await server.send("GET", "/console", headers: [("Cookie", tls.cookie)])
        #expect(idle.status == 401 && idle.text.contains("session ended"))
        // A revoked key's session dies with it.
        let again = try await Self.signIn(server, key: reader)
        #expect(try await server.send("GET", "/console", headers: [("Cookie", again.cookie)]).status == 200)
        _ = try await server.keys.revoke("console-reader")
        #expect(try await server.send("GET", "/console", headers: [("Cookie", again.cookie)]).status == 401)
    }

    @Test func theUserPageExplainsARefundAndOnlyAdminsActWithTheirCSRFToken() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let user = "zoë <script>alert(1)</script>"
        try await Self.refundedSubscriber(server, user: user)
        let path =
            "/console/apps/\(Self.bundle)/users/" + user.addingPercentEncoding(
                withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz"))!
        let reader = try await Self.signIn(server, key: try await server.key([.read]))
        let page = try await server.send("GET", path, headers: [("Cookie", reader.cookie)])
        #expect(page.status == 200, "\(page.text.prefix(300))")
        #expect(page.text.contains("ended ") && page.text.contains(": refunded"), "the refunded subscription is explained")
        #expect(
            !page.text.contains("<script>alert(1)</script>") && page.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "outside text is escaped")
        #expect(page.text.contains("REFUND") || page.text.contains("Refunded"), "the timeline shows the refund")
        let link = try #require(
            page.text.range(of: #"/evidence/sha256(:|%3A)[0-9a-f]{64}"#, options: .regularExpression).map { String(page.text[$0]) })
        let evidence = try await server.send(
            "GET", "/console/apps/\(Self.bundle)" + link.replacingOccurrences(of: "%3A", with: ":"), headers: [("Cookie", reader.cookie)])
        #expect(
            evidence.status == 200 && (evidence.text.contains("App Store Server Notification V2") || evidence.text.contains("JWS")),
            "its evidence decoded")
        #expect(
            try await server.send("GET", "/console/apps/\(Self.bundle)/evidence/sha256:00", headers: [("Cookie", reader.cookie)]).status
                == 404)
        #expect(!page.text.contains(#"id="grant-form""#), "a read key sees no action")
        #expect(!page.text.contains(#"<p class="error">"#), "no message unless there is one")
        let form = "csrf=\(Self.csrf(page.text))&entitlement=vip&days=7&reason=goodwill"
        let forged = try await server.send(
            "POST", path + "/grants", body: Data(form.utf8),
            headers: [("Cookie", reader.cookie), ("Content-Type", "application/x-www-form-urlencoded")], followingRedirects: false)
        #expect(forged.status == 403, "a read key's forged action is refused")

        let admin = try await Self.signIn(server, key: server.adminKey)
        let adminPage = try await server.send("GET", path, headers: [("Cookie", admin.cookie)])
        #expect(adminPage.text.contains(#"id="grant-form""#))
        let badToken = try await server.send(
            "POST", path + "/grants", body: Data("csrf=nope&entitlement=vip&days=7&reason=goodwill".utf8),
            headers: [("Cookie", admin.cookie), ("Content-Type", "application/x-www-form-urlencoded")], followingRedirects: false)
        #expect(badToken.status == 403 && badToken.text.contains("CSRF"))
        let granted = try await server.send(
            "POST", path + "/grants", body: Data("csrf=\(Self.csrf(adminPage.text))&entitlement=vip&days=7&reason=goodwill".utf8),
            headers: [("Cookie", admin.cookie), ("Content-Type", "application/x-www-form-urlencoded")], followingRedirects: false)
        #expect(granted.status == 303)
        let after = try await server.send("GET", path, headers: [("Cookie", admin.cookie)])
        #expect(
            after.text.contains("vip") && after.text.contains("goodwill") && after.text.contains("goodwill, by admin"),
            "the grant is there, recorded with the key's name")
    }

    @Test func findAppAndMetricsPages() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await Self.refundedSubscriber(server, user: "mia")
        let session = try await Self.signIn(server, key: try await server.key([.read]))
        let found = try await server.send("GET", "/console/apps/\(Self.bundle)/find?q=cs-3", headers: [("Cookie", session.cookie)])
        #expect(found.text.contains("/users/mia"), "a transaction id finds its owner")
        let byUser = try await server.send("GET", "/console/apps/\(Self.bundle)/find?q=mia", headers: [("Cookie", session.cookie)])
        #expect(byUser.text.contains("/users/mia"))
        // An appAccountToken linked to mia, and an order id from a receipt email (asked of Apple).
        let token = UUID()
        #expect(
            try await server.send("PUT", "/v1/apps/\(Self.bundle)/users/mia/app-account-tokens/\(token)", key: server.adminKey).status
                == 200)
        let byToken = try await server.send(
            "GET", "/console/apps/\(Self.bundle)/find?q=\(token.uuidString)", headers: [("Cookie", session.cookie)])
        #expect(byToken.text.contains("/users/mia") && byToken.text.contains("appAccountToken"))
        server.serverAPI.add(
            [
                SimulatedTransaction(
                    transactionID: "o-1", productID: "remove.ads", type: "Non-Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
            ],
            to: server.app)
        server.serverAPI.addOrder("MQZ8K2", transactionIDs: ["o-1"], to: server.app)
        let byOrder = try await server.send("GET", "/console/apps/\(Self.bundle)/find?q=MQZ8K2", headers: [("Cookie", session.cookie)])
        #expect(byOrder.text.contains("Order MQZ8K2: transaction o-1 (remove.ads) is owned by nobody yet"), "\(byOrder.text.suffix(600))")
        let unknownOrder = try await server.send(
            "GET", "/console/apps/\(Self.bundle)/find?q=MQNONE1", headers: [("Cookie", session.cookie)])
        #expect(
            unknownOrder.text.contains("Apple&#39;s order lookup") || unknownOrder.text.contains("Apple's order lookup"),
            "\(unknownOrder.text.suffix(600))")
        let app = try await server.send("GET", "/console/apps/\(Self.bundle)", headers: [("Cookie", session.cookie)])
        #expect(
            app.status == 200 && app.text.contains("pro.monthly") && app.text.contains("configured (never shown)")
                && !app.text.contains("s3cret"))
        let metrics = try await server.send(
            "GET", "/console/apps/\(Self.bundle)/metrics?environment=Sandbox", headers: [("Cookie", session.cookie)])
        #expect(metrics.status == 200 && metrics.text.components(separatedBy: "<svg").count - 1 == 7, "seven charts")
        #expect(metrics.text.contains("pro.monthly") && metrics.text.contains("Refunds"))
        let csv = try await server.send(
            "GET", "/console/apps/\(Self.bundle)/metrics.csv?kind=refunds&environment=Sandbox", headers: [("Cookie", session.cookie)])
        #expect(
            csv.status == 200 && csv.text.hasPrefix("day,environment,metric,dimension,value\n")
                && csv.text.contains(",Sandbox,refunds,USD,1"), "\(csv.text)")
        #expect(try await server.send("GET", "/console/apps/\(Self.bundle)/metrics.csv").status == 401)
    }
}
