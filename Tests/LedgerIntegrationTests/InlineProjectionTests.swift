import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerFormats
import LedgerHTTP
import LedgerPostgres
import LedgerProjections
import LedgerTestSupport
import NIOHTTP1
import Testing

/// An ingestion group applies its own appends to the `users` projection in its transaction
/// (`InlineProjection`): the answer and every later read, on any server, hold the purchase at
/// commit, with no projection worker involved — and the worker, which passes those events later,
/// and concurrent writers of the same users never leave an older timeline behind.
@Suite(.takingTurns) struct InlineProjectionTests {
    static let bundle = TestServer.bundleID

    static func coins(_ id: String) -> SimulatedTransaction {
        SimulatedTransaction(transactionID: id, productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -30))
    }

    static func entitlement(_ answer: TestServer.Answer, _ name: String) -> Bool {
        ((answer.json["entitlements"] as? [String: any Sendable])?[name] as? [String: any Sendable])?["active"] as? Bool == true
    }

    static func coinBalance(_ answer: TestServer.Answer) -> Int? {
        (answer.json["balances"] as? [String: any Sendable])?["coins"] as? Int
    }

    /// The live timeline as stored, against one computed now from every fact in the log.
    static func storedAndFromLog(_ user: String, pool: PostgresPool) async throws -> (stored: UserTimeline?, fromLog: UserTimeline) {
        let text = try await pool.query(
            "SELECT timeline AS t FROM ledger.user_timelines WHERE bundle_id = $1 AND user_id = $2", [bundle, user]
        ).first?["t"]
        .text
        let stored = try text.map { try StorageDecoder.decode(UserTimeline.self, from: $0) }
        let fromLog = try await UserStateReader(pool: pool).ledger(bundleID: bundle, userID: user).timeline(of: user)
        return (stored, fromLog)
    }

    @Test func aPurchaseIsAnsweredAndReadOnAnotherServerWithNoProjectionWorkerAnywhere() async throws {
        // The app configured by a server with a worker (configuration waits for it), then stopped.
        let setup = try await TestServer.start()
        await setup.stop()
        let server = try await TestServer.start(configure: false, sharing: setup, projecting: false)
        let other = try await TestServer.start(configure: false, sharing: setup, projecting: false)
        defer {
            Task {
                await other.stop(); await server.stop()
            }
        }
        let key = try await server.key([.ingest, .read])
        let clock = ContinuousClock()
        let started = clock.now
        let posted = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": "ines", "signed_transaction": try server.app.signedTransaction(IngestionFlowTests.subscription("in-1"))])
        #expect(posted.status == 200 && Self.entitlement(posted, "pro"), "\(posted.text)")
        // Not the read-your-writes wait running out (5 s) and answering without it.
        #expect(clock.now - started < .seconds(4))
        let elsewhere = try await other.send("GET", "/v1/apps/\(Self.bundle)/users/ines", key: key)
        #expect(Self.entitlement(elsewhere, "pro"), "the other server reads it: \(elsewhere.text)")
        let checkpoint = try await server.pool.withConnection(ProjectionRunner.activeCheckpoint)
        let position = try #require(posted.headers["Ledger-Position"].first.flatMap(LogPosition.init))
        #expect(checkpoint < position, "no worker moved the checkpoint: the group's transaction projected it")

        // The worker, when it comes, passes the events without recomputing the user again, and
        // what it leaves is what a computation from the log gives.
        let before = try await Self.storedAndFromLog("ines", pool: server.pool)
        // Steps until the checkpoint passes the purchase: a step passes nothing while a transaction
        // of another test on the cluster is open below it (the snapshot fence is cluster-wide),
        // so an empty step is not the end. Bounded for a hang.
        let deadline = ContinuousClock.now + .seconds(120)
        while try await server.pool.withConnection(ProjectionRunner.activeCheckpoint) < position, ContinuousClock.now < deadline {
            if try await server.pool.withConnection({ try ProjectionRunner.liveStep(on: $0, batchSize: 100) }) == 0 {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        let after = try await Self.storedAndFromLog("ines", pool: server.pool)
        #expect(before.stored == before.fromLog && after.stored == before.stored)
        #expect(try await server.pool.withConnection(ProjectionRunner.activeCheckpoint) >= position)
    }

    /// A group that takes its purchase streams to be new (`NewStreamGuess`) takes the `users`
    /// version to be the one the group before wrote, and checks it in the round trip that reads
    /// with it: after a rebuild switched versions the group is written again on the new one, so
    /// the next read holds the purchase with no worker running anywhere.
    @Test func aGroupAfterARebuildSwitchedVersionsProjectsIntoTheNewOne() async throws {
        let setup = try await TestServer.start()
        await setup.stop()
        let server = try await TestServer.start(configure: false, sharing: setup, projecting: false)
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        func buy(_ user: String, _ transactionID: String) async throws -> TestServer.Answer {
            try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
                json: [
                    "user_id": user, "signed_transaction": try server.app.signedTransaction(IngestionFlowTests.subscription(transactionID)),
                ])
        }
        let first = try await buy("before-switch", "sw-1")
        #expect(first.status == 200 && Self.entitlement(first, "pro"), "\(first.text)")
        let owner = server.configuration
        let report = try await offThePool {
            try ProjectionRebuilder(batchSize: 20, logger: TestCluster.quietLogger) { try PostgresConnection.connect(owner) }.rebuild()
        }
        #expect(report.version == 2)

        let second = try await buy("after-switch", "sw-2")
        #expect(second.status == 200 && Self.entitlement(second, "pro"), "\(second.text)")
        let (stored, fromLog) = try await Self.storedAndFromLog("after-switch", pool: server.pool)
        #expect(stored != nil && stored == fromLog, "the active version holds the purchase: \(stored?.purchases.count ?? -1) stored")
    }

    /// A group's new purchase writes its finance rows and metrics without deleting any first (its
    /// stream had none); a later group on the same purchase replaces them. With no projection
    /// worker anywhere, what is stored is only what the groups wrote, and it is what the log says.
    @Test func financeRowsOfNewAndRenewedPurchasesAreWhatTheLogSays() async throws {
        let setup = try await TestServer.start()
        await setup.stop()
        let server = try await TestServer.start(configure: false, sharing: setup, projecting: false)
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let first = IngestionFlowTests.subscription("fin-1", days: 30, startedAgo: 40 * 86_400)
        let coins = ["fin-c1", "fin-c2", "fin-c3"].map(Self.coins)
        // The subscription and three coin packs at once: groups of new purchase streams.
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for transaction in [first] + coins {
                let jws = try server.app.signedTransaction(transaction)
                group.addTask {
                    try await server.send(
                        "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": "fina", "signed_transaction": jws]
                    ).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == [200, 200, 200, 200])
        // The renewal: a stream with rows already, whose rows are replaced.
        let renewal = try server.app.signedTransaction(first.renewed(transactionID: "fin-2", period: 30 * 86_400))
        let renewed = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": "fina", "signed_transaction": renewal])
        #expect(renewed.status == 200, "\(renewed.text)")

        let ledger = try await UserStateReader(pool: server.pool).ledger(bundleID: Self.bundle, userID: "fina")
        for original in ["fin-1", "fin-c1", "fin-c2", "fin-c3"] {
            let stored = try await server.pool.query(
                """
                SELECT seq, kind, transaction_id, user_id FROM ledger.finance_rows WHERE bundle_id = $1 AND original_transaction_id = $2 ORDER BY seq
                """, [Self.bundle, original]
            ).map {
                "\(try $0["seq"].int()) \(try $0["kind"].string()) \(try $0["transaction_id"].string()) \($0["user_id"].optionalString() ?? "-")"
            }
            let fromLog = ledger.financeRows(ofTransaction: original).enumerated().map {
                "\($0) \($1.kind.rawValue) \($1.transactionID) \($1.userID ?? "-")"
            }
            #expect(stored == fromLog, "\(original): stored \(stored), the log \(fromLog)")
        }
        #expect(ledger.financeRows(ofTransaction: "fin-1").map(\.transactionID) == ["fin-1", "fin-2"])
        let stream = try await server.pool.query(
            EventStore.selectEventsSQL + " WHERE e.stream = $1 ORDER BY e.version", ["purchase:\(Self.bundle):fin-1"])
        let facts = try stream.compactMap { try StoredFacts.fact(from: RecordedEvent(row: $0))?.fact }
        let expected = SubscriptionMetrics.stored(of: facts, originalTransactionID: "fin-1")
        let metrics = try await server.pool.query(
            """
            SELECT count(*) AS n FROM ledger.metric_contributions WHERE bundle_id = $1 AND original_transaction_id = 'fin-1'
            """, [Self.bundle])[0]["n"].int()
        #expect(
            !expected.isEmpty && metrics == expected.count,
            "the renewal replaced the subscription's metrics, it did not add to them: \(metrics) stored, \(expected.count) from the log")
    }

    @Test func concurrentWritersOfOneUserOnTwoServersLeaveEveryTimelineAsTheLogSaysIt() async throws {
        let server = try await TestServer.start(poolSize: 8)
        let other = try await TestServer.start(poolSize: 8, configure: false, sharing: server)
        defer {
            Task {
                await other.stop(); await server.stop()
            }
        }
        let key = try await server.key([.ingest, .read])
        let webhook = "\(other.baseURL)/v1/apps/\(Self.bundle)/notifications/apple"
        let sender = NotificationSender()
        let users = (0..<16).map { "many-\($0)" }
        // Each user: six coin purchases posted at once to both servers (six purchase streams, one
        // timeline), a subscription, and Apple's renewal of it delivered meanwhile (recorded
        // alone, projected by whichever worker comes first).
        struct Outcome: Sendable { var user: String; var coins: Int?; var status: Int; var text: String }
        let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group in
            for user in users {
                for index in 0..<6 {
                    let target = index % 2 == 0 ? server : other
                    let jws = try server.app.signedTransaction(Self.coins("\(user)-c\(index)"))
                    group.addTask {
                        let answer = try await target.send(
                            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": user, "signed_transaction": jws])
                        return Outcome(user: user, coins: Self.coinBalance(answer), status: answer.status, text: answer.text)
                    }
                }
                let purchase = IngestionFlowTests.subscription("\(user)-s", days: 30, startedAgo: 40 * 86_400)
                let jws = try server.app.signedTransaction(purchase)
                let renewal = try server.app.notificationV2(
                    "DID_RENEW", transaction: purchase.renewed(transactionID: "\(user)-s2", period: 30 * 86_400),
                    renewal: SimulatedRenewal(originalTransactionID: "\(user)-s", productID: "pro.monthly"))
                group.addTask {
                    let answer = try await server.send(
                        "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": user, "signed_transaction": jws])
                    return Outcome(user: user, coins: nil, status: answer.status, text: answer.text)
                }
                group.addTask { Outcome(user: user, coins: nil, status: try await sender.send(renewal, to: webhook), text: "renewal") }
            }
            return try await group.reduce(into: [Outcome]()) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0.status == 200 }, "\(outcomes.filter { $0.status != 200 })")
        // Read-your-writes: each coin purchase's answer counts at least its own 100.
        #expect(outcomes.filter { $0.text != "renewal" && $0.coins != nil }.allSatisfy { $0.coins! >= 100 })
        // Every request answered, so every event is projected (inline or by a worker): what is
        // stored must be exactly what the log says, never a recomputation that read less.
        for user in users {
            let (stored, fromLog) = try await Self.storedAndFromLog(user, pool: server.pool)
            #expect(
                stored == fromLog,
                "\(user): stored \(stored?.purchases.count ?? 0) purchases, \(stored?.periods.count ?? 0) periods; the log \(fromLog.purchases.count), \(fromLog.periods.count)"
            )
            let state = fromLog.state(at: Date())
            #expect(state.balances["coins"] == 600, "\(user): \(state.balances)")
            #expect(state.entitlements["pro"]?.active == true, "\(user): renewed")
        }
        #expect(try await server.pool.query("SELECT count(*) AS n FROM ledger.events WHERE event_type = 'Purchased'")[0]["n"].int() == 112)
    }

    @Test func aRebuildSwitchingWhileGroupsProjectTheirAppendsLeavesEveryUserAsTheLogSaysIt() async throws {
        let server = try await TestServer.start(poolSize: 8)
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let owner = server.configuration
        let users = (0..<12).map { "rebuilt-\($0)" }
        var bodies: [(user: String, jws: String)] = []
        for (index, user) in users.enumerated() {
            for purchase in 0..<8 { bodies.append((user, try server.app.signedTransaction(Self.coins("\(user)-\(purchase)")))) }
            bodies.append((user, try server.app.signedTransaction(IngestionFlowTests.subscription("\(user)-s\(index)"))))
        }
        // Eight clients post everything while a rebuild builds, catches up and switches versions;
        // a client that has posted its share goes on with more coin packs until the rebuild has
        // switched, and one more after: the switch comes while groups write, however the machine's
        // speed shares itself between the two (an event, not a race against the clock).
        let answered = Locked(0)
        let switched = Locked(false)
        let extra = Locked([String: Int]()) // coin packs posted beyond the 8 each, by user
        let rebuild = Task.detached {
            while answered.value < 20 { try await Task.sleep(for: .milliseconds(2)) }
            let report = try await offThePool {
                try ProjectionRebuilder(batchSize: 20, logger: TestCluster.quietLogger) { try PostgresConnection.connect(owner) }.rebuild()
            }
            let at = answered.value
            switched.withLock { $0 = true }
            return (report, at)
        }
        let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
            for client in 0..<8 {
                let mine = bodies.enumerated().filter { $0.offset % 8 == client }.map(\.element)
                group.addTask {
                    var statuses: [Int] = []
                    func post(_ user: String, _ jws: String) async throws {
                        let answer = try await server.send(
                            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": user, "signed_transaction": jws])
                        statuses.append(answer.status)
                        answered.withLock { $0 += 1 }
                        if answer.status == 200 && Self.coinBalance(answer) == nil && !Self.entitlement(answer, "pro") {
                            statuses.append(-1) // an answer without its own purchase
                        }
                    }
                    for (user, jws) in mine { try await post(user, jws) }
                    var more = 0
                    var last = false
                    while !last {
                        last = switched.value
                        let user = users[(client + more) % users.count]
                        try await post(user, try server.app.signedTransaction(Self.coins("\(user)-more-\(client)-\(more)")))
                        extra.withLock { $0[user, default: 0] += 1 }
                        more += 1
                    }
                    return statuses
                }
            }
            return try await group.reduce(into: [Int]()) { $0 += $1 }
        }
        let (report, answeredAtSwitch) = try await rebuild.value
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses.filter { $0 != 200 })")
        #expect(report.version == 2)
        #expect(
            answeredAtSwitch < answered.value,
            "the switch came while groups were still writing (\(answeredAtSwitch) of \(answered.value) answered)")
        // The live worker, now on the new version, takes in whatever the switch left.
        for _ in 0..<500 where try await server.pool.withConnection({ try ProjectionRunner.lag(on: $0) }) > 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        for user in users {
            let (stored, fromLog) = try await Self.storedAndFromLog(user, pool: server.pool)
            #expect(stored == fromLog, "\(user): stored \(stored?.purchases.count ?? 0) purchases; the log \(fromLog.purchases.count)")
            #expect(fromLog.state(at: Date()).balances["coins"] == Int64(800 + 100 * (extra.value[user] ?? 0)))
        }
    }
}
