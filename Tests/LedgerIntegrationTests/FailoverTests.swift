import AppStoreSimulator
import EmbeddedPostgres
import Foundation
import LedgerAccess
import LedgerEventStore
import LedgerPostgres
import LedgerTestSupport
import NIOHTTP1
import Testing
import WebhookReceiver

/// The primary dies: a synchronous streaming standby is promoted, as a failover manager does, and
/// the server — given both hosts in one libpq host list with `target_session_attrs=read-write` —
/// follows it. Requests get 200 or 503 with `Retry-After`, never a hang; every acknowledged
/// purchase is on the new primary; background work (projection, changes) goes on.
@Suite(.serialized, .takingTurns) struct FailoverTests {
    static let bundle = TestServer.bundleID

    /// The database on both nodes, as the server is told: every host, the primary wanted.
    static func hostList(
        _ primary: EmbeddedPostgres, _ standby: EmbeddedPostgres, database: String, user: String, deadline: Duration? = nil
    ) -> PostgresConfiguration {
        PostgresConfiguration(
            connectionString:
                "host='\(primary.socketDirectory.path),\(standby.socketDirectory.path)' port=\(primary.options.port),\(standby.options.port) "
                + "dbname='\(database)' user='\(user)' target_session_attrs=read-write",
            connectTimeoutSeconds: 2, deadline: deadline)
    }

    /// Commits wait for the standby, so an acknowledged purchase is on both nodes.
    static func makeSynchronous(_ primary: EmbeddedPostgres) throws {
        let admin = try PostgresConnection.connect(primary.configuration(database: "postgres"))
        try admin.execute(script: "ALTER SYSTEM SET synchronous_standby_names = '*'")
        try admin.query("SELECT pg_reload_conf()")
    }

    static func server(_ primary: EmbeddedPostgres, _ standby: EmbeddedPostgres) async throws -> TestServer {
        let database = PostgresConfiguration.parse(try await TestCluster.database(on: primary).connectionString)["dbname"] ?? ""
        var application = hostList(primary, standby, database: database, user: "ledger_runtime", deadline: .seconds(2))
        application.role = "ledger_app"
        return try await TestServer.start(connecting: (hostList(primary, standby, database: database, user: "ledger_owner"), application))
    }

    /// A purchase as the app posts it; a retry posts the same JWS again.
    static func purchase(_ server: TestServer, _ id: String, key: String, jws given: String? = nil) async throws -> TestServer.Answer {
        let jws = try given ?? signed(server, id)
        return try await server.send(
            "POST", "/v1/apps/\(bundle)/transactions", key: key, json: ["user_id": "user-\(id)", "signed_transaction": jws], timeout: 20)
    }

    /// The value of an unlabelled series on a `/metrics` page.
    static func sample(_ name: String, in page: String) -> Double? {
        page.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.dropFirst(name.count + 1)) }
    }

    static func signed(_ server: TestServer, _ id: String) throws -> String {
        try server.app.signedTransaction(IngestionFlowTests.subscription(id, days: 30, startedAgo: 60))
    }

    @Test func writesComeBackOnTheSameServerAfterTheStandbyIsPromoted() async throws {
        let (primary, standby) = try await TestCluster.primaryWithStandby()
        try Self.makeSynchronous(primary)
        let server = try await Self.server(primary, standby)
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        // A game server listening: its deliveries go on after the failover.
        let receiver = WebhookReceiver(secret: WebhookTests.secret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let hook = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)/webhooks/game", key: server.adminKey,
            json: ["url": receiver.url, "secret": WebhookTests.secret])
        #expect(hook.status == 201, "\(hook.text)")
        let before = try await Self.purchase(server, "f-0", key: key)
        #expect(before.status == 200, "\(before.text)")

        try await offThePool { try primary.kill() }
        let orphaned = try await Self.purchase(server, "f-1", key: key)
        #expect(
            orphaned.status == 503 && orphaned.headers.first(name: "Retry-After") != nil, "no primary: \(orphaned.status) \(orphaned.text)")
        // What an operator sees meanwhile: not ready, the database named; the time without a
        // primary counting up (the background parts wait for it, they are not stuck).
        let away = try await server.send("GET", "/readyz")
        #expect(away.status == 503 && away.text.contains(#""database":"unavailable"#), "\(away.text)")
        #expect(!away.text.contains("stuck"), "\(away.text)")
        let metricsAway = try await server.send("GET", "/metrics", key: server.adminKey).text
        #expect(Self.sample("ledger_database_unavailable_seconds", in: metricsAway).map { $0 > 0 } == true, "\(metricsAway)")

        try await offThePool { try standby.promote() }
        let promoted = ContinuousClock.now
        let retried = try Self.signed(server, "f-2")
        var answered: TestServer.Answer?
        var statuses: Set<Int> = []
        while answered == nil, ContinuousClock.now - promoted < .seconds(30) {
            let attempt = try await Self.purchase(server, "f-2", key: key, jws: retried)
            statuses.insert(attempt.status)
            if attempt.status == 200 { answered = attempt } else { try await Task.sleep(for: .milliseconds(100)) }
        }
        let resumed = ContinuousClock.now - promoted
        #expect(answered != nil, "writes came back: \(statuses)")
        #expect(statuses.isSubset(of: [200, 503]), "\(statuses)")
        #expect(resumed < .seconds(5), "writes resumed \(resumed) after the promotion")

        // Background work followed the primary: the purchase made after the failover is announced.
        let announced = try await server.waitForChange(key: key) { $0["user_id"] as? String == "user-f-2" }.found
        #expect(announced, "the change projection came back after the failover")
        for _ in 0..<300 where !receiver.accepted.contains(where: { $0.userID == "user-f-2" }) {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(receiver.accepted.contains { $0.userID == "user-f-2" && $0.signatureValid }, "webhooks are delivered after the failover")

        // The pool counted its reconnections and the time it spent without a primary; with it
        // back, the server is ready again and every background part says ok.
        let health = server.pool.health
        #expect(health.connectionsLost >= 1 && health.unavailableSince == nil && health.unavailableTotal > .zero, "\(health)")
        let parts = ["notifications", "timeline cache", "projection worker", "change projection", "webhook deliveries"]
        func allWell(_ answer: TestServer.Answer) -> Bool {
            answer.status == 200 && parts.allSatisfy { (answer.json["checks"] as? [String: any Sendable])?[$0] as? String == "ok" }
        }
        // The LISTEN connections retry with a back-off of up to 2 s.
        var ready = try await server.send("GET", "/readyz")
        for _ in 0..<100 where !allWell(ready) {
            try await Task.sleep(for: .milliseconds(100))
            ready = try await server.send("GET", "/readyz")
        }
        #expect(allWell(ready), "\(ready.text)")
        let metricsBack = try await server.send("GET", "/metrics", key: server.adminKey).text
        #expect(Self.sample("ledger_database_unavailable_seconds", in: metricsBack) == 0, "\(metricsBack)")
        #expect(Self.sample("ledger_database_unavailable_seconds_total", in: metricsBack).map { $0 > 0 } == true)
        #expect(Self.sample("ledger_database_connections_lost_total", in: metricsBack).map { $0 >= 1 } == true)

        // Every acknowledged purchase is on the new primary, and the chain holds.
        let purchased = try await server.pool.query(
            "SELECT data->>'originalTransactionID' AS id FROM ledger.events WHERE event_type = 'Purchased' ORDER BY 1")
        #expect(try purchased.map { try $0["id"].string() }.filter { $0 != "f-1" } == ["f-0", "f-2"])
        let report = try await ChainVerifier(pool: server.pool).verify()
        #expect(report.isIntact, "\(report.breaks)")
    }

    /// A planned switchover, as failover managers make one: the primary turned read-only (its
    /// open sessions too), the standby promoted. Connections to the old primary stay open and
    /// answer every write with 25006; they are dropped at the first, and the pool finds the new
    /// primary through the host list.
    @Test func connectionsToAPrimaryTurnedReadOnlyAreDroppedAndWritesFollowThePromotion() async throws {
        let (primary, standby) = try await TestCluster.primaryWithStandby()
        try Self.makeSynchronous(primary)
        let server = try await Self.server(primary, standby)
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        #expect(try await Self.purchase(server, "w-0", key: key).status == 200)

        let old = try PostgresConnection.connect(primary.configuration(database: "postgres"))
        try old.execute(script: "ALTER SYSTEM SET default_transaction_read_only = on")
        try old.query("SELECT pg_reload_conf()")
        try await offThePool { try standby.promote() }
        let promoted = ContinuousClock.now
        let jws = try Self.signed(server, "w-1")
        var statuses: [Int] = []
        while statuses.last != 200, ContinuousClock.now - promoted < .seconds(30) {
            statuses.append(try await Self.purchase(server, "w-1", key: key, jws: jws).status)
            if statuses.last != 200 { try await Task.sleep(for: .milliseconds(100)) }
        }
        let resumed = ContinuousClock.now - promoted
        #expect(statuses.last == 200 && Set(statuses).isSubset(of: [200, 503]), "\(statuses)")
        #expect(resumed < .seconds(5), "writes resumed \(resumed) after the promotion")
        // Asked of the new primary itself: the old one, read-only but up, still answers reads.
        let database = PostgresConfiguration.parse(server.configuration.connectionString)["dbname"] ?? ""
        let onNew = try PostgresConnection.connect(
            .unixSocket(
                directory: standby.socketDirectory.path, port: standby.options.port, database: database, user: EmbeddedPostgres.superuser))
        let recorded = try onNew.query(
            "SELECT count(*) AS n, bool_and(NOT pg_is_in_recovery()) AS primary FROM ledger.events WHERE data->>'originalTransactionID' = 'w-1'"
        )
        #expect(
            try recorded[0]["n"].int() == 2 && recorded[0]["primary"].optionalString() == "t",
            "the purchase and its claim, on the new primary")
    }

    /// A COMMIT waiting for a synchronous standby that is gone never ends by itself: the request
    /// answers 503 at the deadline, and the client's retry, once commits go through again, is
    /// answered with the purchase recorded once.
    @Test func aCommitWaitingForAGoneStandbyAnswers503AtTheDeadline() async throws {
        let (primary, standby) = try await TestCluster.primaryWithStandby()
        try Self.makeSynchronous(primary)
        let server = try await Self.server(primary, standby)
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        #expect(try await Self.purchase(server, "s-0", key: key).status == 200)

        try await offThePool { try standby.stop() }
        let jws = try Self.signed(server, "s-1")
        let asked = ContinuousClock.now
        let waiting = try await Self.purchase(server, "s-1", key: key, jws: jws)
        let took = ContinuousClock.now - asked
        #expect(waiting.status == 503 && waiting.headers.first(name: "Retry-After") != nil, "\(waiting.status) \(waiting.text)")
        #expect(took < .seconds(15), "answered after \(took), not left hanging")

        try await offThePool { try standby.start() }
        var retried: TestServer.Answer?
        let restarted = ContinuousClock.now
        while retried?.status != 200, ContinuousClock.now - restarted < .seconds(30) {
            retried = try await Self.purchase(server, "s-1", key: key, jws: jws)
            if retried?.status != 200 { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(retried?.status == 200, "\(retried?.text ?? "")")
        let copies = try await server.pool.query(
            "SELECT stream, version, event_id::text AS id, data::text AS data FROM ledger.events WHERE data->>'originalTransactionID' = 's-1' ORDER BY position"
        )
        let seen = try copies.map { "\(try $0["stream"].string())#\(try $0["version"].int()) \(try $0["data"].string())" }
        #expect(seen.count == 2, "one purchase and its claim, whichever attempt recorded them: \(seen)")
    }
}
