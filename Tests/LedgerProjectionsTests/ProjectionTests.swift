import Foundation
import LedgerCore
import LedgerDomainTestSupport
import LedgerEventStore
import LedgerFacts
import LedgerPostgres
import LedgerProjections
import LedgerTestSupport
import Testing

let bundleID = "com.example.app"

/// Appends domain facts through the event store, as the ingestion layer will.
func append(_ facts: some Sequence<RecordedFact>, to store: EventStore) async throws {
    for fact in facts {
        let (stream, event) = try StoredFacts.newEvent(
            fact.event, bundleID: bundleID, id: UUID(), occurredAt: fact.occurredAt, evidence: fact.evidence)
        try await store.append([event], to: stream)
    }
}

/// What the projection must say: the pure domain over every fact in the log.
func computed(from configuration: PostgresConfiguration) throws -> AppLedger {
    let connection = try PostgresConnection.connect(configuration)
    var ledger = AppLedger(bundleID: bundleID)
    for row in try connection.query(EventStore.selectEventsSQL + " ORDER BY e.position") {
        if let (_, fact) = try StoredFacts.fact(from: RecordedEvent(row: row)) { ledger.apply(fact) }
    }
    return ledger
}

/// Applies batches until the checkpoint has reached the end of the log. A step that applies
/// nothing does not mean "caught up": the snapshot fence holds events back while any older
/// transaction in the cluster (other tests run in parallel) is still open.
func drainLive(_ pool: PostgresPool) async throws {
    for _ in 0..<2000 {
        if try await pool.withConnection({ try ProjectionRunner.liveStep(on: $0, batchSize: 37) }) > 0 { continue }
        if try await pool.withConnection({ try ProjectionRunner.lag(on: $0) }) == 0 { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("the projection never caught up")
}

/// The finance rows as stored (through the `ledger.finance_rows` view), in FinanceView's order.
private func storedFinance(_ pool: PostgresPool) async throws -> [FinanceRow] {
    try await pool.query(
        """
        SELECT kind, transaction_id, original_transaction_id, user_id, product_id, quantity, price, currency, occurred_at,
               environment, storefront, recorded_at, offer_type, offer_id, offer_discount_type, position
          FROM ledger.finance_rows WHERE environment = 'Production'
         ORDER BY occurred_at, transaction_id, kind
        """
    ).map { row in
        FinanceRow(
            kind: FinanceRow.Kind(rawValue: try row["kind"].string())!, transactionID: try row["transaction_id"].string(),
            originalTransactionID: try row["original_transaction_id"].string(), userID: row["user_id"].optionalString(),
            productID: try row["product_id"].string(), quantity: try row["quantity"].int(),
            price: row["price"].isNull ? nil : try row["price"].int64(), currency: row["currency"].optionalString(),
            occurredAt: try row["occurred_at"].date(), environment: AppleEnvironment(rawValue: try row["environment"].string())!,
            storefront: row["storefront"].optionalString(), recordedAt: try row["recorded_at"].date(),
            offerType: row["offer_type"].isNull ? nil : try row["offer_type"].int(), offerIdentifier: row["offer_id"].optionalString(),
            offerDiscountType: row["offer_discount_type"].optionalString(),
            position: row["position"].isNull ? nil : try row["position"].int64())
    }
}

@Suite struct ProjectionTests {
    @Test(arguments: [UInt64(7), 1234, 99_999])
    func theLiveProjectionEqualsTheDomainComputation(seed: UInt64) async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 2, logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        let history = RandomHistory(seed: seed, steps: 60)
        // Applied in small batches interleaved with appends, so users are recomputed many times.
        for chunk in stride(from: 0, to: history.facts.count, by: 25) {
            try await append(history.facts[chunk..<min(chunk + 25, history.facts.count)], to: store)
            try await drainLive(pool)
        }
        let expected = try computed(from: configuration)
        let reader = UserStateReader(pool: pool)
        // "Now" after every recording: transfers take effect when recorded (today), later than
        // the history's business times.
        let now = max(history.instants.last!, Date())
        for user in RandomHistory.users {
            let stored = try await reader.timeline(bundleID: bundleID, userID: user)
            #expect(stored == expected.timeline(of: user), "seed \(seed), \(user)")
            #expect(try await reader.currentState(bundleID: bundleID, userID: user, at: now) == expected.userState(user, at: now))
        }
        #expect(try await pool.withConnection { try ProjectionRunner.lag(on: $0) } == 0)
        let finance = try await storedFinance(pool)
        #expect(!finance.isEmpty)
        #expect(finance == expected.financeRows(), "seed \(seed): stored finance rows equal the domain's")
        await pool.close()
    }

    /// A random history appended and projected live, with what the domain computes of it.
    private func projected(_ history: RandomHistory) async throws -> (pool: PostgresPool, reader: UserStateReader, expected: AppLedger) {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 2, logger: TestCluster.quietLogger)
        try await append(history.facts, to: EventStore(pool: pool, logger: TestCluster.quietLogger))
        try await drainLive(pool)
        return (pool, UserStateReader(pool: pool), try computed(from: configuration))
    }

    @Test func validTimeReadsFromTheLogEqualTheDomainComputation() async throws {
        let history = RandomHistory(seed: 4242, steps: 50)
        let (pool, reader, expected) = try await projected(history)
        for instant in history.instants.striding(5) {
            for user in RandomHistory.users {
                #expect(
                    try await reader.state(bundleID: bundleID, userID: user, at: instant, knownAt: nil)
                        == expected.userState(user, at: instant))
            }
        }
        await pool.close()
    }

    /// A store names a subscription, not a user: its owner and their facts are read in one round
    /// trip, and answer as the domain does over the whole log.
    @Test func aSubscriptionsOwnerAndTheirFactsAreReadAsTheDomainKnowsThem() async throws {
        let history = RandomHistory(seed: 77, steps: 60)
        let (pool, reader, expected) = try await projected(history)
        let originals = Set(history.facts.compactMap(\.event.originalTransactionID))
        #expect(!originals.isEmpty)
        for original in originals.sorted() {
            let read = try await reader.ledger(bundleID: bundleID, owning: original)
            #expect(read.owner == expected.owner(of: original), "\(original)")
            if let owner = read.owner {
                #expect(read.ledger.timeline(of: owner) == expected.timeline(of: owner), "\(original) of \(owner)")
            }
        }
        let nobody = try await reader.ledger(bundleID: bundleID, owning: "no-such-transaction")
        #expect(nobody.owner == nil)
        await pool.close()
    }

    /// The reads of a user's facts name the evidence they leave out in the statement itself, so
    /// that PostgreSQL may use the partial index of facts by stream: only when both lists are the
    /// same does it (with a list that differs, the read was planned as a scan of the whole log).
    @Test func theIndexOfFactsLeavesOutExactlyWhatTheReadsLeaveOut() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: configuration, size: 1, logger: TestCluster.quietLogger)
        let definition = try await pool.query(
            "SELECT pg_get_expr(indpred, indrelid) AS p FROM pg_index WHERE indexrelid = 'ledger.events_facts_by_stream_idx'::regclass"
        )[0]["p"].string()
        let named = Set(definition.split(separator: "'").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) })
        #expect(named == UsersProjection.ignoredTypes, "the index's predicate: \(definition)")
        await pool.close()
    }

    @Test func aRebuildWhileTheWorkerRunsAndEventsArriveSwitchesToAnEqualVersion() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 4, logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        let history = RandomHistory(seed: 777, steps: 160)
        let half = history.facts.count / 2
        try await append(history.facts[..<half], to: store)

        let worker = Task {
            await ProjectionWorker(
                pool: pool, store: store, batchSize: 20, pollInterval: .milliseconds(20), logger: TestCluster.quietLogger
            ).run()
        }
        let rest = Array(history.facts[half...])
        let appender = Task { try await append(rest, to: store) }
        // Readers during the rebuild always get a complete version: v1's rows, then v2's.
        let versionsSeen = Locked<Set<Int>>([])
        let reader = Task {
            while !Task.isCancelled {
                let version = try await pool.query("SELECT active_version FROM ledger.projections WHERE name = 'users'")[0][0].int()
                versionsSeen.withLock { _ = $0.insert(version) }
                _ = try await UserStateReader(pool: pool).timeline(bundleID: bundleID, userID: "u1")
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        let phases = Locked<[String]>([])
        // What another process (a server's /metrics) reads of the rebuild while it runs.
        let observer = try PostgresConnection.connect(configuration)
        let recorded = Locked<[String]>([])
        let report = try await Task.detached {
            try ProjectionRebuilder(batchSize: 50, logger: TestCluster.quietLogger) { try PostgresConnection.connect(configuration) }
                .rebuild { progress in
                    phases.withLock { if $0.last != progress.phase.rawValue { $0.append(progress.phase.rawValue) } }
                    let row = try? observer.query(
                        "SELECT progress_phase, progress_events FROM ledger.projection_checkpoints WHERE name = 'users' AND status = 'building'"
                    ).first
                    if let phase = row?["progress_phase"].optionalString(), let events = row?["progress_events"].optionalString() {
                        recorded.withLock { $0.append("\(phase) \(events)") }
                    }
                }
        }.value
        #expect(
            recorded.value.contains { $0.hasPrefix("replaying ") } && recorded.value.contains { $0.hasPrefix("switching ") },
            "\(recorded.value)")
        try await appender.value
        // Let the worker (now on v2) take in whatever the switch left for it.
        for _ in 0..<500 where try await pool.withConnection({ try ProjectionRunner.lag(on: $0) }) > 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        worker.cancel()
        reader.cancel()
        await worker.value
        _ = await reader.result

        #expect(report.version == 2)
        #expect(phases.value.contains("replaying") && phases.value.last == "switching", "\(phases.value)")
        #expect(versionsSeen.value.isSubset(of: [1, 2]))
        let expected = try computed(from: configuration)
        #expect(expected.factCount == history.facts.count + SampleCatalogue.all.count - SampleCatalogue.all.count)
        let reader2 = UserStateReader(pool: pool)
        for user in RandomHistory.users {
            #expect(try await reader2.timeline(bundleID: bundleID, userID: user) == expected.timeline(of: user), "\(user)")
        }
        #expect(try await storedFinance(pool) == expected.financeRows())
        // Both the live path and the rebuild wrote v2's rows from the same code: a second rebuild agrees.
        let again = try await offThePool {
            try ProjectionRebuilder(logger: TestCluster.quietLogger) { try PostgresConnection.connect(configuration) }.rebuild()
        }
        #expect(again.version == 3)
        for user in RandomHistory.users {
            #expect(try await reader2.timeline(bundleID: bundleID, userID: user) == expected.timeline(of: user))
        }
        let versions = try await pool.query("SELECT version FROM ledger.projection_checkpoints WHERE name = 'users' ORDER BY version").map {
            try $0[0].int()
        }
        #expect(versions == [2, 3], "the version before the active one is kept, older ones dropped")
        let tables = try await pool.query(
            """
            SELECT tablename FROM pg_tables WHERE schemaname = 'ledger'
               AND tablename ~ '^(transaction_owners|user_timelines|finance_rows)_v[0-9]+$' ORDER BY tablename
            """
        ).map { try $0[0].string() }
        #expect(
            tables == [
                "finance_rows_v2", "finance_rows_v3", "transaction_owners_v2", "transaction_owners_v3",
                "user_timelines_v2", "user_timelines_v3",
            ], "every table of a dropped version goes with it")
        #expect(try await storedFinance(pool) == expected.financeRows())
        await pool.close()
    }
}
