import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerFormats
import LedgerPostgres
import Logging

/// Progress of a rebuild, reported as it goes.
package struct RebuildProgress: Sendable {
    package enum Phase: String, Sendable {
        case replaying = "replaying", computing = "computing timelines", computingFinance = "computing finance rows"
        case writing = "writing", catchingUp = "catching up", switching = "switching"
    }
    package var phase: Phase
    package var events: Int
    package var totalEstimate: Int
    package var elapsed: Duration
    package var eventsPerSecond: Double {
        elapsed.seconds > 0 ? Double(events) / elapsed.seconds : 0
    }
}

package struct RebuildReport: Sendable {
    package var version: Int
    /// Events of the log the new version covers (counted at the start, plus those caught up).
    package var events: Int
    /// Of those, the events decoded and applied: the server leaves out the types the
    /// projection ignores (Apple's notification records, kept as evidence).
    package var replayed: Int
    package var users: Int
    package var replaySeconds: Double
    package var totalSeconds: Double
}

/// Builds a new version of the `users` projection from position zero beside the live one, then
/// switches readers to it atomically. Safe while the server runs and events arrive: the live
/// version keeps serving and advancing until the switch, which happens under the registry lock
/// after the new version has caught up.
///
/// Fast path: the whole log is replayed in memory (`AppLedger` per app) and the result written
/// with COPY; only what arrives during the rebuild goes through the per-user incremental path.
package struct ProjectionRebuilder: Sendable {
    let connection: @Sendable () throws -> PostgresConnection
    let batchSize: Int
    let logger: Logger
    /// False only to measure what the metrics cost a rebuild (`ledger-bench rebuild`): the version
    /// is then built without them.
    let computingMetrics: Bool

    /// - Parameter connection: opens a connection as the schema owner (the rebuild creates tables).
    package init(
        batchSize: Int = 10_000, computingMetrics: Bool = true, logger: Logger,
        connection: @escaping @Sendable () throws -> PostgresConnection
    ) {
        self.connection = connection
        self.batchSize = batchSize
        self.computingMetrics = computingMetrics
        self.logger = logger
    }

    package func rebuild(progress reportProgress: (RebuildProgress) -> Void = { _ in }) throws -> RebuildReport {
        let clock = ContinuousClock()
        let started = clock.now
        let db = try connection()
        let version = try db.query(
            "SELECT COALESCE(max(version), 0) + 1 AS v FROM ledger.projection_checkpoints WHERE name = $1",
            [UsersProjection.name])[0]["v"].int()
        try db.query("SELECT ledger.create_users_projection_tables($1)", [version])
        let total = try EventStore.count(on: db)
        logger.info("rebuilding projection", metadata: ["projection": "\(UsersProjection.name)", "projection.version": "\(version)"])
        let recorder = RebuildProgressRecorder(version: version, connection: try connection(), logger: logger)
        func progress(_ update: RebuildProgress) {
            recorder.record(update)
            reportProgress(update)
        }

        // 1. Replay the whole log in memory. A second connection streams it with COPY (the
        // events this projection ignores are left out by the server) while this thread decodes
        // each batch on every core; facts are applied in log order.
        var ledgers: [String: AppLedger] = [:]
        var position = LogPosition.start
        var replayed = 0
        var lastReport = clock.now
        let reader = LogReader(connection: try connection(), batchSize: batchSize, excludingTypes: UsersProjection.ignoredTypes)
        defer { reader.cancel() }
        while let batch = try reader.next() {
            let (parts, last) = try Self.decode(batch)
            for facts in parts {
                for (bundleID, fact) in facts { ledgers[bundleID, default: AppLedger(bundleID: bundleID)].apply(fact) }
            }
            position = last ?? position
            replayed += batch.count
            if replayed == batch.count || clock.now - lastReport > .milliseconds(200) {
                // Positions are dense enough to say how far through the log the replay is.
                progress(
                    RebuildProgress(
                        phase: .replaying, events: min(Int(position.position), total), totalEstimate: total, elapsed: clock.now - started))
                lastReport = clock.now
            }
        }
        let count = total
        let replaySeconds = (clock.now - started).seconds

        // 2. Write it with COPY: each table loaded before it has indexes, then indexed, each part
        // on a connection of its own (nothing reads a version before the switch, so they need
        // not share a transaction). The finance rows first: their load and two indexes are the
        // longest job PostgreSQL has, and it runs while the timelines are computed here.
        let projection = UsersProjection(version: version)
        func session() throws -> PostgresConnection {
            let connection = try self.connection()
            try connection.execute(script: "SET maintenance_work_mem = '256MB'")
            return connection
        }
        func load(_ sql: String, _ parts: [[UInt8]]) throws {
            try Parallel.start(parts.map { part in { try session().copyIn(sql, data: part) } }).wait()
        }
        func index(_ parts: String...) throws {
            try Parallel.start(
                parts.map { part in { try session().query("SELECT ledger.index_users_projection($1, $2)", [version, part]) } }
            ).wait()
        }
        progress(RebuildProgress(phase: .computingFinance, events: count, totalEstimate: max(total, count), elapsed: clock.now - started))
        let finance = try Self.financeCopyRows(ledgers)
        let metrics = computingMetrics ? try Self.metricCopyRows(ledgers) : []
        // The metrics load beside it, on connections of their own (PostgreSQL's side of a COPY and
        // an index build is one core each; chained after the finance rows they doubled the rebuild).
        let financeLoad = Parallel.start([
            {
                try load(
                    "COPY \(projection.finance) (bundle_id, original_transaction_id, seq, kind, transaction_id, user_id, "
                        + "product_id, quantity, price, currency, storefront, environment, occurred_at, recorded_at, offer_type, offer_id, "
                        + "offer_discount_type, position) FROM STDIN", finance)
                try index("finance", "finance_time")
            },
            {
                try load(
                    "COPY \(projection.metrics) (bundle_id, original_transaction_id, kind, environment, dimension, from_at, until_at, value) FROM STDIN",
                    metrics)
                try index("metrics")
            },
        ])
        progress(RebuildProgress(phase: .computing, events: count, totalEstimate: max(total, count), elapsed: clock.now - started))
        let (owners, timelines, users) = try Self.copyRows(ledgers)
        progress(RebuildProgress(phase: .writing, events: count, totalEstimate: max(total, count), elapsed: clock.now - started))
        let ownersLoad = Parallel.start([
            {
                try load("COPY \(projection.owners) (bundle_id, original_transaction_id, user_id) FROM STDIN", [owners])
                try index("owners")
            }
        ])
        try load("COPY \(projection.timelines) (bundle_id, user_id, timeline) FROM STDIN", timelines)
        try index("timelines")
        try ownersLoad.wait()
        try financeLoad.wait()
        try db.transaction { try ProjectionRunner.advance(version: version, to: position, on: $0) }

        // 3. Catch up with what arrived meanwhile, then switch under the registry lock. An empty
        // step may only mean the fence holds events back behind an open transaction; whatever the
        // switch leaves, the live worker applies to the new version from its exact checkpoint.
        var caughtUp = count
        while case let applied = try db.transaction({ try ProjectionRunner.step(version: version, on: $0, batchSize: 1000) }), applied > 0 {
            caughtUp += applied
            progress(
                RebuildProgress(phase: .catchingUp, events: caughtUp, totalEstimate: max(total, caughtUp), elapsed: clock.now - started))
        }
        progress(RebuildProgress(phase: .switching, events: caughtUp, totalEstimate: caughtUp, elapsed: clock.now - started))
        try db.transaction { db in
            try db.query("SELECT active_version FROM ledger.projections WHERE name = $1 FOR UPDATE", [UsersProjection.name])
            while try ProjectionRunner.step(version: version, on: db, batchSize: 1000) > 0 {}
            try db.query("SELECT ledger.activate_users_projection($1)", [version])
            try db.query("SELECT pg_notify($1, '*')", [TimelineCache.channel]) // every server forgets its cached timelines
        }
        try dropOldVersions(keeping: version, on: db)
        let totalSeconds = (clock.now - started).seconds
        logger.info("projection switched", metadata: ["projection.version": "\(version)", "events": "\(count)", "users": "\(users)"])
        return RebuildReport(
            version: version, events: caughtUp, replayed: replayed, users: users, replaySeconds: replaySeconds, totalSeconds: totalSeconds)
    }

    /// COPY text for the owner and timeline tables, users built on every core.
    static func copyRows(_ ledgers: [String: AppLedger]) throws -> (owners: [UInt8], timelines: [[UInt8]], users: Int) {
        let work = ledgers.sorted { $0.key < $1.key }.flatMap { bundleID, ledger in ledger.users.map { (bundleID, ledger, $0) } }
        let parts = try Parallel.chunks(of: work.count, into: decodingThreads) { _, range in
            var owners = CopyTextWriter()
            var timelines = CopyTextWriter()
            var json: [UInt8] = []
            for (bundleID, ledger, userID) in work[range] {
                for original in ledger.transactions(everOwnedBy: userID) {
                    owners.row {
                        $0.field(bundleID); $0.field(original); $0.field(userID)
                    }
                }
                json.removeAll(keepingCapacity: true)
                TimelineJSON.write(ledger.timeline(of: userID), into: &json)
                timelines.row {
                    $0.field(bundleID); $0.field(userID); $0.field(bytes: json)
                }
            }
            return (owners.bytes, timelines.bytes)
        }
        return (parts.flatMap(\.0), parts.map(\.1), work.count)
    }

    /// COPY text for the finance rows, per original transaction as the live worker writes them,
    /// in one part per core (loaded on as many connections).
    static func financeCopyRows(_ ledgers: [String: AppLedger]) throws -> [[UInt8]] {
        try perTransactionCopyRows(ledgers) { out, bundleID, ledger, original in
            for (seq, row) in ledger.financeRows(ofTransaction: original).enumerated() {
                out.row {
                    $0.field(bundleID); $0.field(original); $0.field(Int64(seq)); $0.field(row.kind.rawValue);
                    $0.field(row.transactionID)
                    $0.field(row.userID); $0.field(row.productID); $0.field(Int64(row.quantity)); $0.field(row.price);
                    $0.field(row.currency)
                    $0.field(row.storefront); $0.field(row.environment.rawValue); $0.field(PostgresTimestamp.format(row.occurredAt))
                    $0.field(PostgresTimestamp.format(row.recordedAt)); $0.field(row.offerType.map(Int64.init));
                    $0.field(row.offerIdentifier)
                    $0.field(row.offerDiscountType)
                    $0.field(row.position)
                }
            }
        }
    }

    /// COPY text for the metric contributions, per original transaction as the live worker writes
    /// them, one part per core.
    static func metricCopyRows(_ ledgers: [String: AppLedger]) throws -> [[UInt8]] {
        try perTransactionCopyRows(ledgers) { out, bundleID, ledger, original in
            for c in SubscriptionMetrics.stored(of: ledger.facts(ofTransaction: original), originalTransactionID: original) {
                out.row {
                    $0.field(bundleID); $0.field(original); $0.field(c.kind.rawValue); $0.field(c.environment.rawValue);
                    $0.field(c.dimension)
                    $0.field(PostgresTimestamp.format(c.from)); $0.field(c.until.map(PostgresTimestamp.format)); $0.field(c.value)
                }
            }
        }
    }

    /// COPY text written by `rows` for each original transaction of every app (apps in name
    /// order), the transactions shared out in one part per core.
    static func perTransactionCopyRows(
        _ ledgers: [String: AppLedger],
        _ rows: (_ out: inout CopyTextWriter, _ bundleID: String, _ ledger: AppLedger, _ original: String) -> Void
    ) throws -> [[UInt8]] {
        let work = ledgers.sorted { $0.key < $1.key }.flatMap { bundleID, ledger in
            ledger.originalTransactions.map { (bundleID, ledger, $0) }
        }
        return try Parallel.chunks(of: work.count, into: decodingThreads) { _, range in
            var out = CopyTextWriter()
            for (bundleID, ledger, original) in work[range] { rows(&out, bundleID, ledger, original) }
            return out.bytes
        }
    }

    static let decodingThreads = max(1, min(4, sysconf(Int32(_SC_NPROCESSORS_ONLN))))

    /// Decodes a batch on every core, in log order (one part per core, in order); also the
    /// position of its last event.
    static func decode(_ batch: LogRows) throws -> (parts: [[(String, RecordedFact)]], last: LogPosition?) {
        let parts = try Parallel.chunks(of: batch.count, into: decodingThreads) { _, range in
            var facts: [(String, RecordedFact)] = []
            facts.reserveCapacity(range.count)
            var last: LogPosition?
            for index in range {
                let streamed = try batch.event(at: index)
                last = streamed.position
                if let fact = try StoredFacts.fact(from: streamed) { facts.append(fact) }
            }
            return (facts, last)
        }
        return (parts.map(\.0), parts.compactMap(\.1).last)
    }

    /// Keeps the new version and the one before it (a reader that looked up the old view a moment
    /// before the switch may still be reading it); drops anything older.
    private func dropOldVersions(keeping version: Int, on db: PostgresConnection) throws {
        let old = try db.query(
            "SELECT version FROM ledger.projection_checkpoints WHERE name = $1 AND version < $2 - 1",
            [UsersProjection.name, version]
        ).map { try $0[0].int() }
        for stale in old {
            let projection = UsersProjection(version: stale)
            try db.execute(
                script: "DROP TABLE IF EXISTS \(projection.owners), \(projection.timelines), \(projection.finance), \(projection.metrics)")
            try db.query("DELETE FROM ledger.projection_checkpoints WHERE name = $1 AND version = $2", [UsersProjection.name, stale])
        }
    }
}

/// The rebuild's progress written to its checkpoint row (at most once a second, and at each new
/// phase), on a connection of its own outside the rebuild's transactions: servers read it into
/// their metrics while the rebuild runs in another process. A failed write costs the rebuild
/// nothing but the row's freshness.
final class RebuildProgressRecorder {
    let version: Int
    let connection: PostgresConnection
    let logger: Logger
    private var written: (phase: RebuildProgress.Phase, at: ContinuousClock.Instant)?

    init(version: Int, connection: PostgresConnection, logger: Logger) {
        self.version = version
        self.connection = connection
        self.logger = logger
    }

    func record(_ progress: RebuildProgress) {
        let now = ContinuousClock.now
        if let written, written.phase == progress.phase, now - written.at < .seconds(1) { return }
        written = (progress.phase, now)
        do {
            try connection.query(
                """
                UPDATE ledger.projection_checkpoints SET progress_phase = $1, progress_events = $2, progress_total = $3, updated_at = now()
                 WHERE name = $4 AND version = $5
                """, [progress.phase.rawValue, progress.events, progress.totalEstimate, UsersProjection.name, version])
        } catch {
            logger.debug("could not record the rebuild's progress", metadata: ["error": "\(error)"])
        }
    }
}
