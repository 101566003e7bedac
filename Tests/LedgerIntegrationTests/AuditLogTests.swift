import Foundation
import LedgerAccess
import LedgerPostgres
import LedgerTestSupport
import NIOHTTP1
import Testing

/// Every admin action is recorded with who made it, the request, the target, and the resource
/// before and after — secrets never — in a table nobody can rewrite; listed to admin keys and on
/// the console.
@Suite(.takingTurns) struct AuditLogTests {
    static let bundle = TestServer.bundleID
    static let secret = "whsec_0123456789abcdef0123456789abcdef"

    static func entries(_ server: TestServer, key: String, after: Int = 0) async throws -> [[String: any Sendable]] {
        let page = try await server.send("GET", "/v1/audit-log?after=\(after)&limit=1000", key: key)
        #expect(page.status == 200, "\(page.text)")
        return page.json["entries"] as? [[String: any Sendable]] ?? []
    }

    @Test func everyAdminActionIsRecordedWithItsActorRequestAndChange() async throws {
        let server = try await TestServer.start() // configures the app and five products
        defer { Task { await server.stop() } }
        let configured = try await Self.entries(server, key: server.adminKey)
        #expect(
            configured.map { $0["action"] as? String } == ["app.configured"] + Array(repeating: "product.defined", count: 5),
            "\(configured)")
        #expect(configured.allSatisfy { $0["actor"] as? String == "admin" && ($0["request_id"] as? String)?.isEmpty == false })
        #expect((configured.first?["after"] as? String)?.contains("Sandbox") == true && configured.first?["before"] == nil)

        // A change shows both sides; the response's request id is the one recorded.
        let changed = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)/products/remove.ads", key: server.adminKey,
            json: ["type": "non_consumable", "entitlements": ["no_ads", "vip"]],
            headers: [("X-Request-Id", "support-ticket-4711")])
        #expect(changed.status == 200 && changed.headers.first(name: "X-Request-Id") == "support-ticket-4711")
        let hook = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)/webhooks/game", key: server.adminKey,
            json: ["url": "http://127.0.0.1:9/hook", "secret": Self.secret])
        #expect(hook.status == 201, "\(hook.text)")
        #expect(try await server.send("DELETE", "/v1/apps/\(Self.bundle)/webhooks/game", key: server.adminKey).status == 204)
        let grant = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/users/dana/grants", key: server.adminKey,
            json: ["entitlement": "pro", "duration": "P7D", "reason": "outage"])
        let grantID = grant.json["grant_id"] as? String ?? ""
        #expect(
            try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/users/dana/grants/\(grantID)/revoke", key: server.adminKey, json: ["reason": "mistake"]
            ).status == 200)
        // Refused requests changed nothing and are not actions.
        #expect(
            try await server.send("PUT", "/v1/apps/\(Self.bundle)/products/x", key: server.adminKey, json: ["type": "nonsense"]).status
                == 400)

        let all = try await Self.entries(server, key: server.adminKey)
        let recent = Array(all.dropFirst(configured.count))
        #expect(
            recent.map { $0["action"] as? String } == [
                "product.defined", "webhook.defined", "webhook.deleted", "grant.created", "grant.revoked",
            ],
            "\(recent)")
        let product = try #require(recent.first)
        #expect(
            product["request_id"] as? String == "support-ticket-4711"
                && product["target"] as? String == "\(Self.bundle)/products/remove.ads")
        #expect((product["before"] as? String)?.contains("vip") == false && (product["after"] as? String)?.contains("vip") == true)
        #expect(recent[2]["before"] as? String != nil && recent[2]["after"] == nil, "a deletion keeps what was deleted")

        // Secrets are never recorded: the app's shared secret and In-App Purchase key, the webhook's secret.
        let text = try await server.send("GET", "/v1/audit-log?limit=1000", key: server.adminKey).text
        for secret in ["s3cret", "PRIVATE KEY", Self.secret] { #expect(!text.contains(secret), "\(secret) is in the audit log") }

        // Paged by position, admin only, an app's key sees its app's.
        let second = try await Self.entries(server, key: server.adminKey, after: (all[0]["position"] as? Int) ?? 0)
        #expect(second.count == all.count - 1)
        #expect(try await server.send("GET", "/v1/audit-log", key: try await server.key([.read, .ingest, .finance])).status == 403)
        #expect(try await Self.entries(server, key: try await server.key([.admin], app: "com.example.other")).isEmpty)
        #expect(try await server.send("GET", "/v1/audit-log?after=-1", key: server.adminKey).errorCode == "invalid_cursor")
    }

    @Test func theLogIsAppendOnlyAndShownOnTheConsole() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let owner = try PostgresConnection.connect(TestCluster.superuser(server.configuration))
        #expect(throws: PostgresError.self) { try owner.query("UPDATE ledger.audit_log SET actor = 'someone else'") }
        #expect(throws: PostgresError.self) { try owner.query("DELETE FROM ledger.audit_log") }
        let runtime = try PostgresConnection.connect(TestCluster.applicationRole(server.configuration))
        #expect(throws: PostgresError.self) { try runtime.query("DELETE FROM ledger.audit_log") }

        let (cookie, _) = try await ConsoleTests.signIn(server, key: server.adminKey)
        let page = try await server.send("GET", "/console/audit", headers: [("Cookie", cookie)])
        #expect(
            page.status == 200 && page.text.contains("app.configured") && page.text.contains("product.defined"),
            "\(page.status) \(page.text.prefix(500))")
        let reader = try await server.key([.read])
        let (readCookie, _) = try await ConsoleTests.signIn(server, key: reader)
        #expect(try await server.send("GET", "/console/audit", headers: [("Cookie", readCookie)]).status == 403)
    }
}
