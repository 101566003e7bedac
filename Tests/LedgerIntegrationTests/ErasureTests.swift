import AppStoreSimulator
import EmbeddedPostgres
import Foundation
import LedgerAccess
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres
import LedgerProjections
import LedgerServer
import LedgerTestSupport
import NIOHTTP1
import Testing

/// `DELETE /v1/apps/{b}/users/{u}`: a user with a subscription bought under an appAccountToken,
/// coins bought, spent and refunded, a grant, changes announced and a webhook failing — erased.
/// Then a `pg_dump` of the whole database is searched for the id and the token (as text, as JSON,
/// inside the raw evidence decoded layer by layer); the finance export is compared row by row;
/// the chain is verified; the projection rebuilt from zero answers the same; another account
/// presents the purchase and gets it.
@Suite(.serialized, .takingTurns) struct ErasureTests {
    static let bundle = TestServer.bundleID
    static let user = "ada.lovelace+games@example.com"

    @Test func anErasedUserIsNowhereWhileTheBooksBalanceAndTheChainHolds() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let b = Self.bundle, user = Self.user
        let path = user.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let key = try await server.key([.ingest, .read])
        let finance = try await server.key([.finance])
        let token = UUID()

        // A webhook that never answers: its queue and its failures name the user too.
        let hook = try await server.send(
            "PUT", "/v1/apps/\(b)/webhooks/dead", key: server.adminKey,
            json: ["url": "http://127.0.0.1:9/hook", "secret": "whsec_0123456789abcdef0123456789"])
        #expect(hook.status == 201, "\(hook.text)")
        #expect(try await server.send("PUT", "/v1/apps/\(b)/users/\(path)/app-account-tokens/\(token)", key: key).status == 200)
        var subscription = SimulatedTransaction(
            transactionID: "e-1", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -3_600),
            expiresDate: Date(timeIntervalSinceNow: 86_400))
        subscription.appAccountToken = token
        let coins = SimulatedTransaction(
            transactionID: "e-2", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -600))
        let subscriptionJWS = try server.app.signedTransaction(subscription)
        for jws in [subscriptionJWS, try server.app.signedTransaction(coins)] {
            let bought = try await server.send(
                "POST", "/v1/apps/\(b)/transactions", key: key, json: ["user_id": user, "signed_transaction": jws])
            #expect(bought.status == 200, "\(bought.text)")
        }
        // Apple's notification about the subscription carries the token inside a nested JWS.
        let renewed = try server.app.notificationV2("DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transaction: subscription)
        #expect(try await NotificationSender().send(renewed, to: "\(server.baseURL)/v1/apps/\(b)/notifications/apple") == 200)
        let spent = try await server.send(
            "POST", "/v1/apps/\(b)/users/\(path)/consumptions", key: key,
            json: ["currency": "coins", "amount": 30, "idempotency_key": "spend-1"])
        #expect(spent.status == 200, "\(spent.text)")
        let refund = try server.app.notificationV2("REFUND", transaction: coins.revoked(at: Date(timeIntervalSinceNow: -60)))
        #expect(try await NotificationSender().send(refund, to: "\(server.baseURL)/v1/apps/\(b)/notifications/apple") == 200)
        let granted = try await server.send(
            "POST", "/v1/apps/\(b)/users/\(path)/grants", key: server.adminKey,
            json: ["entitlement": "vip", "duration": "P7D", "reason": "welcome", "grant_id": "welcome-1"])
        #expect(granted.status == 201, "\(granted.text)")
        // Someone else, whose answers must not move.
        let bobCoins = SimulatedTransaction(
            transactionID: "e-3", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -600))
        _ = try await server.send(
            "POST", "/v1/apps/\(b)/transactions", key: key,
            json: ["user_id": "bob", "signed_transaction": try server.app.signedTransaction(bobCoins)])
        let ada = try await server.send("GET", "/v1/apps/\(b)/users/\(path)", key: key)
        #expect(MergeTests.entitlement(ada.json, "pro") == true && MergeTests.balance(ada.json, "coins") == -30, "\(ada.text)")
        // The changes were announced (and the webhook failed on them).
        #expect(
            try await server.waitForChange(key: key) { $0["user_id"] as? String == user && $0["type"] as? String == "entitlement.granted" }
                .found)
        let bobBefore = try await Self.state(server, "bob", key: key)
        let financeBefore = try await Self.financeRows(server, key: finance)
        let metricsBefore = try await Self.metricRows(server)
        #expect(!metricsBefore.isEmpty)
        #expect(financeBefore.contains { $0["user_id"] == user }, "\(financeBefore)")
        // The search finds them before: the token also inside the evidence, decoded.
        let before = Self.traces(of: [user], tokens: [token], in: try await Self.dump(server))
        #expect(before.contains { $0.layer == 0 && $0.needle == user }, "\(before)")
        #expect(before.contains { $0.layer >= 2 && $0.needle.lowercased() == token.uuidString.lowercased() }, "in a JWS payload: \(before)")

        try await Task.sleep(for: .seconds(1.1)) // `at` and `known_at` are read to the second
        let beforeErasure = RFC3339Text.string(Date())
        let erased = try await server.send("DELETE", "/v1/apps/\(b)/users/\(path)", key: server.adminKey)
        #expect(erased.status == 200, "\(erased.text)")
        let pseudonym = try #require(erased.json["pseudonym"] as? String)
        #expect(pseudonym.hasPrefix("erased:") && erased.json["app_account_tokens"] as? Int == 1, "\(erased.text)")
        #expect((erased.json["evidence_shredded"] as? Int ?? 0) >= 2, "the JWS and the notification carried the token: \(erased.text)")
        #expect(erased.headers.first(name: "Ledger-Position") != nil)

        // Nowhere: not in the dump, whatever the layer.
        let afterErasure = Self.traces(of: [user], tokens: [token], in: try await Self.dump(server))
        #expect(afterErasure.isEmpty, "after the erasure: \(afterErasure)")
        // The id names a new, empty account; the audit trail and the export of it are empty.
        let now = try await server.send("GET", "/v1/apps/\(b)/users/\(path)", key: key)
        #expect(MergeTests.entitlement(now.json, "pro") != true && (MergeTests.balance(now.json, "coins") ?? 0) == 0, "\(now.text)")
        // Time travel too: asked about before the erasure, on either axis, the id names nothing.
        for query in ["at=\(beforeErasure)", "known_at=\(beforeErasure)"] {
            let then = try await server.send("GET", "/v1/apps/\(b)/users/\(path)?\(query)", key: key)
            #expect(then.status == 200 && MergeTests.entitlement(then.json, "pro") != true, "\(query): \(then.text)")
        }
        let trail = try await server.send("GET", "/v1/apps/\(b)/users/\(path)/events", key: key)
        #expect((trail.json["events"] as? [Any])?.isEmpty == true, "\(trail.text)")
        // Game servers hear of it, under the pseudonym.
        #expect(
            try await server.waitForChange(key: key) { $0["user_id"] as? String == pseudonym && $0["type"] as? String == "user.erased" }
                .found)

        // The books: the same rows, amounts and dates, the pseudonym in the user column.
        let financeAfter = try await Self.financeRows(server, key: finance)
        let renamed = financeBefore.map { row in row.mapValues { $0 == user ? pseudonym : $0 } }
        #expect(financeAfter == renamed, "before \(financeBefore)\nafter \(financeAfter)")
        #expect(try await Self.metricRows(server) == metricsBefore, "the daily metrics are the same")
        let report = try await ChainVerifier(pool: server.pool).verify()
        #expect(report.isIntact, "\(report.breaks)")
        #expect(try await Self.state(server, "bob", key: key) == bobBefore)

        // A rebuild from zero answers the same and brings nothing back.
        let rebuilt = try await offThePool {
            try ProjectionRebuilder(batchSize: 50, logger: TestCluster.quietLogger) { try PostgresConnection.connect(server.configuration) }
                .rebuild()
        }
        #expect(rebuilt.events > 0)
        #expect(try await Self.financeRows(server, key: finance) == financeAfter)
        #expect(try await Self.metricRows(server) == metricsBefore, "and derived again the same")
        #expect(try await Self.state(server, "bob", key: key) == bobBefore)
        let afterRebuild = Self.traces(of: [user], tokens: [token], in: try await Self.dump(server))
        #expect(afterRebuild.isEmpty, "after the rebuild: \(afterRebuild)")

        // The purchase goes to whoever presents it next.
        let restored = try await server.send(
            "POST", "/v1/apps/\(b)/transactions", key: key, json: ["user_id": "ada-again", "signed_transaction": subscriptionJWS])
        #expect(restored.status == 200 && MergeTests.entitlement(restored.json, "pro") == true, "\(restored.text)")

        // The id starts afresh: the same grant id and the same token are new facts of a new account.
        let regranted = try await server.send(
            "POST", "/v1/apps/\(b)/users/\(path)/grants", key: server.adminKey,
            json: ["entitlement": "vip", "duration": "P7D", "reason": "welcome", "grant_id": "welcome-1"])
        #expect(regranted.status == 201 && regranted.json["user_id"] as? String == user, "\(regranted.text)")
        let revoked = try await server.send("POST", "/v1/apps/\(b)/users/\(path)/grants/welcome-1/revoke", key: server.adminKey, json: [:])
        #expect(revoked.status == 200, "\(revoked.text)")
        #expect(try await server.send("PUT", "/v1/apps/\(b)/users/ada-again/app-account-tokens/\(token)", key: key).status == 200)
        let holder = try await server.send("GET", "/v1/apps/\(b)/app-account-tokens/\(token)", key: key)
        #expect(holder.json["user_id"] as? String == "ada-again", "\(holder.text)")
        #expect(try await server.send("DELETE", "/v1/apps/\(b)/users/ada-again", key: server.adminKey).status == 200)
        #expect(try await server.send("DELETE", "/v1/apps/\(b)/users/\(path)", key: server.adminKey).status == 200)

        // Asking again: the id names nothing the log knows.
        let again = try await server.send("DELETE", "/v1/apps/\(b)/users/\(path)", key: server.adminKey)
        #expect(again.status == 404 && again.errorCode == "unknown_user", "\(again.text)")
        let never = try await server.send("DELETE", "/v1/apps/\(b)/users/nobody", key: server.adminKey)
        #expect(never.status == 404 && never.errorCode == "unknown_user", "\(never.text)")
        #expect(try await server.send("DELETE", "/v1/apps/\(b)/users/bob", key: key).status == 403, "admin only")
    }

    /// Read-your-writes holds for an erasure: another server reading a replica, given the answer's
    /// position, no longer shows the user — though it had the user's timeline in its cache.
    @Test func anotherServerReadingAReplicaSeesTheErasureAtOnce() async throws {
        let (primary, standby) = try await TestCluster.primaryWithStandby()
        let writer = try await TestServer.start(cluster: primary, replicas: [standby])
        let reader = try await TestServer.start(
            configure: false, sharing: writer, projecting: false, replicas: [standby], replicaWait: .milliseconds(100))
        defer {
            Task {
                await reader.stop(); await writer.stop()
            }
        }
        let key = try await writer.key([.ingest, .read])
        let granted = try await writer.send(
            "POST", "/v1/apps/\(Self.bundle)/users/rita/grants", key: writer.adminKey,
            json: ["entitlement": "vip", "duration": "P7D", "reason": "welcome"])
        let position = try #require(granted.headers.first(name: "Ledger-Position"))
        let cached = try await reader.send(
            "GET", "/v1/apps/\(Self.bundle)/users/rita", key: key, headers: [("Ledger-Read-After", position)])
        #expect(MergeTests.entitlement(cached.json, "vip") == true, "\(cached.text)")

        let erased = try await writer.send("DELETE", "/v1/apps/\(Self.bundle)/users/rita", key: writer.adminKey)
        let after = try #require(erased.headers.first(name: "Ledger-Position"), "\(erased.text)")
        let read = try await reader.send("GET", "/v1/apps/\(Self.bundle)/users/rita", key: key, headers: [("Ledger-Read-After", after)])
        #expect(read.status == 200 && MergeTests.entitlement(read.json, "vip") != true, "\(read.text)")
        #expect(reader.services.reads.sources.replica > 0, "the replica answered")
    }

    /// A user id that equals another value (here a product id) is replaced only where it names a
    /// user; and the function that rewrites the log takes nothing but an erasure, whoever calls it.
    @Test func onlyUsersAreRewrittenAndNothingButAnErasureCanBe() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let b = Self.bundle
        let key = try await server.key([.ingest, .read])
        let finance = try await server.key([.finance])
        for (user, id) in [("pro.monthly", "p-1"), ("someone", "p-2")] {
            let purchase = SimulatedTransaction(
                transactionID: id, productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -60),
                expiresDate: Date(timeIntervalSinceNow: 86_400))
            let bought = try await server.send(
                "POST", "/v1/apps/\(b)/transactions", key: key,
                json: ["user_id": user, "signed_transaction": try server.app.signedTransaction(purchase)])
            #expect(bought.status == 200, "\(bought.text)")
        }
        let erased = try await server.send("DELETE", "/v1/apps/\(b)/users/pro.monthly", key: server.adminKey)
        let pseudonym = try #require(erased.json["pseudonym"] as? String, "\(erased.text)")
        let rows = try await Self.financeRows(server, key: finance)
        #expect(rows.count == 2 && rows.allSatisfy { $0["product_id"] == "pro.monthly" }, "\(rows)")
        #expect(Set(rows.map { $0["user_id"] ?? "" }) == [pseudonym, "someone"], "\(rows)")
        let someone = try await server.send("GET", "/v1/apps/\(b)/users/someone", key: key)
        #expect(
            (someone.json["subscriptions"] as? [[String: any Sendable]])?.first?["product_id"] as? String == "pro.monthly",
            "\(someone.text)")
        let products = try await server.pool.query("SELECT count(*) AS n FROM ledger.events WHERE data->>'productID' = 'pro.monthly'")
        #expect(try products[0]["n"].int() >= 2)

        // The application role calls it as the server does; a product renamed is refused.
        await #expect(throws: PostgresError.self) {
            try await server.pool.query(
                "SELECT * FROM ledger.erase($1, $2, $3, $4::text[], $5::text[], $6::text[])",
                [b, "someone", "pro.yearly", PostgresTextArray([]), PostgresTextArray([]), PostgresTextArray([])])
        }
        await #expect(throws: PostgresError.self) {
            try await server.pool.query(
                "SELECT * FROM ledger.erase($1, $2, $3, $4::text[], $5::text[], $6::text[])",
                [
                    b, "someone", ErasedUser.makePseudonym(), PostgresTextArray(["pro.monthly"]), PostgresTextArray(["pro.yearly"]),
                    PostgresTextArray([]),
                ])
        }
        // And the log stays closed to it otherwise.
        await #expect(throws: PostgresError.self) { try await server.pool.query("UPDATE ledger.events SET data = '{}' WHERE false") }
    }

    /// A database filled before erasure existed: its facts were written under the schema before
    /// `ledger.erase`; the upgrade adds it, and an erasure then finds and rewrites them as any.
    @Test func aUserRecordedBeforeTheUpgradeIsErasedAfterIt() async throws {
        let owner = try await TestCluster.database(migrations: 23)
        let store = EventStore(
            pool: PostgresPool(configuration: TestCluster.applicationRole(owner), size: 2, logger: TestCluster.quietLogger),
            logger: TestCluster.quietLogger)
        let user = "veteran@example.com", b = Self.bundle
        let facts: [LedgerEvent] = [
            .promotionalGranted(
                PromotionalGrant(grantID: "g-1", userID: user, entitlement: "vip", startsAt: Date(), expiresAt: nil, reason: "founder")),
            .consumed(Consumption(userID: user, currency: "coins", amount: 5, idempotencyKey: "k-1")),
        ]
        for (index, fact) in facts.enumerated() {
            let (stream, event) = try StoredFacts.newEvent(
                fact, bundleID: b, id: UUID(), occurredAt: Date(timeIntervalSinceNow: Double(index - 10)))
            _ = try await store.append([event], to: stream)
        }
        let claim = try StoredFacts.newEvent(
            .transactionClaimed(Claim(originalTransactionID: "900", userID: user)), bundleID: b, id: UUID(), occurredAt: Date())
        _ = try await store.append([claim.event], to: claim.stream)

        // The upgrade (0024 and on), then the server as usual.
        let server = try await TestServer.start(connecting: (owner, TestCluster.applicationRole(owner)))
        defer { Task { await server.stop() } }
        let erased = try await server.send("DELETE", "/v1/apps/\(b)/users/veteran%40example.com", key: server.adminKey)
        #expect(erased.status == 200 && erased.json["events_rewritten"] as? Int == 3, "\(erased.text)")
        let report = try await ChainVerifier(pool: server.pool).verify()
        #expect(report.isIntact, "\(report.breaks)")
        let traces = Self.traces(of: [user], tokens: [], in: try await Self.dump(server))
        #expect(traces.isEmpty, "\(traces)")
    }

    /// A user's state as JSON text, without the instants it was asked and answered at.
    static func state(_ server: TestServer, _ user: String, key: String) async throws -> String {
        var state = try await server.send("GET", "/v1/apps/\(bundle)/users/\(user)", key: key).json
        state["as_of"] = nil
        state["known_at"] = nil
        return String(decoding: try JSONSerialization.data(withJSONObject: state, options: [.sortedKeys]), as: UTF8.self)
    }

    /// The finance export (CSV), each row as a dictionary by column.
    static func financeRows(_ server: TestServer, key: String) async throws -> [[String: String]] {
        let answer = try await server.send("GET", "/v1/apps/\(bundle)/exports/transactions?format=csv&environment=Sandbox", key: key)
        let lines = answer.text.components(separatedBy: "\r\n").filter { !$0.isEmpty }.map {
            $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        guard let header = lines.first else { return [] }
        return lines.dropFirst().map { Dictionary(uniqueKeysWithValues: zip(header, $0)) }
    }

    /// What the daily metrics (active subscriptions, revenue, …) are computed from, in the
    /// active version of the projection, one line a row.
    static func metricRows(_ server: TestServer) async throws -> [String] {
        let version = try await server.pool.query("SELECT active_version FROM ledger.projections WHERE name = 'users'")[0]["active_version"]
            .int()
        return try await server.pool.query(
            """
            SELECT concat_ws('|', bundle_id, original_transaction_id, kind, environment, dimension, from_at, until_at, value) AS r
              FROM ledger.metric_contributions_v\(version) ORDER BY 1
            """
        ).map { try $0["r"].string() }
    }

    /// The whole database as `pg_dump` writes it.
    static func dump(_ server: TestServer) async throws -> String {
        let binaries = try PostgresBinaries.locate()
        let dump = try await ChildProcess.run(
            binaries.directory.appendingPathComponent("pg_dump").path, ["--dbname", server.configuration.connectionString])
        try #require(dump.status == 0 && dump.output.contains("ledger.events"), "\(dump.output.prefix(500))")
        return dump.output
    }

    /// Where the ids are in a dump: as text, as JSON escapes them, and as they may sit in raw
    /// evidence — bytea is dumped as hex (layer 1), evidence is base64 (a JWS is base64url, its
    /// payload may hold another JWS: each decoding is a layer deeper).
    static func traces(of ids: [String], tokens: [UUID], in dump: String) -> [(layer: Int, needle: String)] {
        var needles = ids.flatMap { id -> [String] in
            let json = String(decoding: try! JSONSerialization.data(withJSONObject: [id]), as: UTF8.self)
            return [id, String(json.dropFirst(2).dropLast(2))]
        }
        needles += tokens.flatMap { [$0.uuidString, $0.uuidString.lowercased()] }
        var byteNeedles = needles.map { (Array($0.utf8), $0) }
        byteNeedles += tokens.map { token in (withUnsafeBytes(of: token.uuid) { Array($0) }, "\(token) as 16 bytes") }
        var found: [(layer: Int, needle: String)] = []
        var layers: [[UInt8]] = [Array(dump.utf8)]
        var hexLayer: [[UInt8]] = []
        for match in dump.matches(of: /\\x([0-9a-f]{40,})/) {
            let hex = Array(match.1.utf8)
            hexLayer.append(
                stride(from: 0, to: hex.count - 1, by: 2).compactMap { UInt8(String(decoding: hex[$0...$0 + 1], as: UTF8.self), radix: 16) }
            )
        }
        for depth in 0..<6 where !layers.isEmpty {
            var next: [[UInt8]] = depth == 0 ? hexLayer : []
            for layer in layers {
                for (bytes, name) in byteNeedles where layer.firstRange(of: bytes) != nil { found.append((depth, name)) }
                let text = String(decoding: layer, as: UTF8.self)
                for run in text.matches(of: /[A-Za-z0-9+\/_=-]{24,}/) {
                    var base64 = String(run.0).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                    base64 = base64.trimmingCharacters(in: CharacterSet(charactersIn: "="))
                    base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
                    if let decoded = Data(base64Encoded: base64), decoded.count >= 16 { next.append(Array(decoded)) }
                }
            }
            layers = next
        }
        return found
    }
}
