import Foundation
import LedgerCore
import LedgerEventStore
import LedgerPostgres
import Logging

/// Progress of a rebuild, reported as it goes.
public struct RebuildProgress: Sendable {
    public enum Phase: String, Sendable {
        case replaying = "replaying", computing = "computing timelines", computingFinance = "computing finance rows"
        case writing = "writing", catchingUp = "catching up", switching = "switching"
    }
    public var phase: Phase
    public var events: Int
    public var totalEstimate: Int
    public var elapsed: Duration
    public var eventsPerSecond: Double {
        elapsed.seconds > 0 ? Double(events) / elapsed.seconds : 0
    }
}

public struct RebuildReport: Sendable {
    public var version: Int
    public var events: Int
    public var users: Int
    public var replaySeconds: Double
    public var totalSeconds: Double
}

/// Builds a new version of the `users` projection from position zero beside the live one, then
/// switches readers to it atomically. Safe while the server runs and events arrive: the live
/// version keeps serving and advancing until the switch, which happens under the registry lock
/// after the new version has caught up.
///
/// Fast path: the whole log is replayed in memory (`AppLedger` per app) and the result written
/// with COPY; only what arrives during the rebuild goes through the per-user incremental path.
public struct ProjectionRebuilder: Sendable {
    let connection: @Sendable () throws -> PostgresConnection
    let batchSize: Int
    let logger: Logger

    /// - Parameter connection: opens a connection as the schema owner (the rebuild creates tables).
    public init(batchSize: Int = 10_000, logger: Logger, connection: @escaping @Sendable () throws -> PostgresConnection) {
        self.connection = connection
        self.batchSize = batchSize
        self.logger = logger
    }

    public func rebuild(progress: (RebuildProgress) -> Void = { _ in }) throws -> RebuildReport {
        let clock = ContinuousClock()
        let started = clock.now
        let db = try connection()
        let version = try db.query("SELECT COALESCE(max(version), 0) + 1 AS v FROM ledger.projection_checkpoints WHERE name = $1",
                                   [UsersProjection.name])[0]["v"].int()
        try db.query("SELECT ledger.create_users_projection($1)", [version])
        let total = try db.query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
        logger.info("rebuilding projection", metadata: ["projection": "\(UsersProjection.name)", "projection.version": "\(version)"])

        // 1. Replay the whole log in memory. A second connection reads the next batch while this
        // thread decodes the current one on every core; facts are applied in log order.
        var ledgers: [String: AppLedger] = [:]
        var position = LogPosition.start
        var count = 0
        var lastReport = clock.now
        let reader = BatchPrefetcher(connection: try connection(), batchSize: batchSize)
        while let batch = try reader.next() {
            guard let last = batch.last else { break }
            reader.request(after: last.position)  // read the next batch while this one decodes
            for (bundleID, fact) in try Self.decode(batch) {
                ledgers[bundleID, default: AppLedger(bundleID: bundleID)].apply(fact)
            }
            position = last.position
            count += batch.count
            if count == batch.count || clock.now - lastReport > .milliseconds(200) {
                progress(RebuildProgress(phase: .replaying, events: count, totalEstimate: max(total, count), elapsed: clock.now - started))
                lastReport = clock.now
            }
        }
        let replaySeconds = (clock.now - started).seconds
        progress(RebuildProgress(phase: .computing, events: count, totalEstimate: max(total, count), elapsed: clock.now - started))

        // 2. Write it with COPY, and the checkpoint where the replay stopped.
        let projection = UsersProjection(version: version)
        let (owners, timelines, users) = try Self.copyRows(ledgers)
        progress(RebuildProgress(phase: .computingFinance, events: count, totalEstimate: max(total, count), elapsed: clock.now - started))
        let finance = try Self.financeCopyRows(ledgers)
        progress(RebuildProgress(phase: .writing, events: count, totalEstimate: max(total, count), elapsed: clock.now - started))
        try db.transaction { db in
            try db.copyIn("COPY \(projection.owners) (bundle_id, original_transaction_id, user_id) FROM STDIN", data: owners)
            try db.copyIn("COPY \(projection.timelines) (bundle_id, user_id, timeline) FROM STDIN", data: timelines)
            try db.copyIn("COPY \(projection.finance) (bundle_id, original_transaction_id, seq, kind, transaction_id, user_id, "
                          + "product_id, quantity, price, currency, storefront, environment, occurred_at) FROM STDIN", data: finance)
            try ProjectionRunner.advance(version: version, to: position, on: db)
        }

        // 3. Catch up with what arrived meanwhile, then switch under the registry lock. An empty
        // step may only mean the fence holds events back behind an open transaction; whatever the
        // switch leaves, the live worker applies to the new version from its exact checkpoint.
        var caughtUp = count
        while case let applied = try db.transaction({ try ProjectionRunner.step(version: version, on: $0, batchSize: 1000) }), applied > 0 {
            caughtUp += applied
            progress(RebuildProgress(phase: .catchingUp, events: caughtUp, totalEstimate: max(total, caughtUp), elapsed: clock.now - started))
        }
        progress(RebuildProgress(phase: .switching, events: caughtUp, totalEstimate: caughtUp, elapsed: clock.now - started))
        try db.transaction { db in
            try db.query("SELECT active_version FROM ledger.projections WHERE name = $1 FOR UPDATE", [UsersProjection.name])
            while try ProjectionRunner.step(version: version, on: db, batchSize: 1000) > 0 {}
            try db.query("SELECT ledger.activate_users_projection($1)", [version])
            try db.query("SELECT pg_notify($1, '*')", [TimelineCache.channel])  // every server forgets its cached timelines
        }
        try dropOldVersions(keeping: version, on: db)
        let totalSeconds = (clock.now - started).seconds
        logger.info("projection switched", metadata: ["projection.version": "\(version)", "events": "\(count)", "users": "\(users)"])
        return RebuildReport(version: version, events: count, users: users, replaySeconds: replaySeconds, totalSeconds: totalSeconds)
    }

    /// COPY text for the owner and timeline tables, users built on every core.
    static func copyRows(_ ledgers: [String: AppLedger]) throws -> (owners: [UInt8], timelines: [UInt8], users: Int) {
        let work = ledgers.sorted { $0.key < $1.key }.flatMap { bundleID, ledger in ledger.users.map { (bundleID, ledger, $0) } }
        let parts = try Parallel.chunks(of: work.count, into: decodingThreads) { _, range in
            var owners: [UInt8] = []
            var timelines: [UInt8] = []
            for (bundleID, ledger, userID) in work[range] {
                for original in ledger.transactions(everOwnedBy: userID) {
                    owners += Array("\(CopyText.escape(bundleID))\t\(CopyText.escape(original))\t\(CopyText.escape(userID))\n".utf8)
                }
                let json = String(decoding: try StorageEncoder.encode(ledger.timeline(of: userID)), as: UTF8.self)
                timelines += Array("\(CopyText.escape(bundleID))\t\(CopyText.escape(userID))\t\(CopyText.escape(json))\n".utf8)
            }
            return (owners, timelines)
        }
        return (parts.flatMap(\.0), parts.flatMap(\.1), work.count)
    }

    /// COPY text for the finance rows, per original transaction as the live worker writes them.
    static func financeCopyRows(_ ledgers: [String: AppLedger]) throws -> [UInt8] {
        let work = ledgers.sorted { $0.key < $1.key }.flatMap { bundleID, ledger in ledger.originalTransactions.map { (bundleID, ledger, $0) } }
        func field(_ value: String?) -> String { value.map(CopyText.escape) ?? "\\N" }
        return try Parallel.chunks(of: work.count, into: decodingThreads) { _, range in
            var out: [UInt8] = []
            for (bundleID, ledger, original) in work[range] {
                for (seq, row) in ledger.financeRows(ofTransaction: original).enumerated() {
                    let fields: [String?] = [bundleID, original, String(seq), row.kind.rawValue, row.transactionID, row.userID, row.productID,
                                             String(row.quantity), row.price.map(String.init), row.currency, row.storefront,
                                             row.environment.rawValue, PostgresTimestamp.format(row.occurredAt)]
                    out += Array((fields.map(field).joined(separator: "\t") + "\n").utf8)
                }
            }
            return out
        }.flatMap { $0 }
    }

    static let decodingThreads = max(1, min(4, ProcessInfo.processInfo.activeProcessorCount))

    /// Decodes a batch on every core, keeping log order.
    static func decode(_ batch: [RecordedEvent]) throws -> [(String, RecordedFact)] {
        try Parallel.chunks(of: batch.count, into: decodingThreads) { _, range in
            try batch[range].compactMap { recorded in
                UsersProjection.ignoredTypes.contains(recorded.type) ? nil : try StoredFacts.fact(from: recorded)
            }
        }.flatMap { $0 }
    }

    /// Keeps the new version and the one before it (a reader that looked up the old view a moment
    /// before the switch may still be reading it); drops anything older.
    private func dropOldVersions(keeping version: Int, on db: PostgresConnection) throws {
        let old = try db.query("SELECT version FROM ledger.projection_checkpoints WHERE name = $1 AND version < $2 - 1",
                               [UsersProjection.name, version]).map { try $0[0].int() }
        for stale in old {
            let projection = UsersProjection(version: stale)
            try db.execute(script: "DROP TABLE IF EXISTS \(projection.owners), \(projection.timelines)")
            try db.query("DELETE FROM ledger.projection_checkpoints WHERE name = $1 AND version = $2", [UsersProjection.name, stale])
        }
    }
}

/// COPY's text format: backslash, tab, newline and carriage return are escaped.
enum CopyText {
    static func escape(_ value: String) -> String {
        guard value.contains(where: { $0 == "\\" || $0 == "\t" || $0 == "\n" || $0 == "\r" }) else { return value }
        return value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\t", with: "\\t")
            .replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\r", with: "\\r")
    }
}

extension Duration {
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// Splits `count` items into `chunks` contiguous ranges and runs `body` on each on its own
/// thread (`concurrentPerform`), returning the results in range order.
enum Parallel {
    static func chunks<T>(of count: Int, into chunks: Int, _ body: (Int, Range<Int>) throws -> T) throws -> [T] {
        let chunks = max(1, chunks)
        let size = (count + chunks - 1) / chunks
        let slots = UnsafeMutablePointer<Result<T, any Error>?>.allocate(capacity: chunks)
        slots.initialize(repeating: nil, count: chunks)
        defer {
            slots.deinitialize(count: chunks)
            slots.deallocate()
        }
        // Each iteration writes only its own slot; the slots are read after all have returned.
        nonisolated(unsafe) let shared = slots
        withoutActuallyEscaping(body) { body in
            nonisolated(unsafe) let body = body
            DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                let range = min(count, chunk * size)..<min(count, (chunk + 1) * size)
                shared[chunk] = Result { try body(chunk, range) }
            }
        }
        return try (0..<chunks).map { try slots[$0]!.get() }
    }
}

/// Reads the log ahead on its own connection and thread: `next()` returns the batch requested by
/// the previous `request(after:)` (the first batch starts at the beginning of the log).
final class BatchPrefetcher: @unchecked Sendable {
    private let connection: PostgresConnection
    private let batchSize: Int
    private let queue = DispatchQueue(label: "ledger.rebuild.prefetch")
    private let ready = DispatchSemaphore(value: 0)
    private var pending: Result<[RecordedEvent], any Error>?

    init(connection: PostgresConnection, batchSize: Int) {
        self.connection = connection
        self.batchSize = batchSize
        request(after: .start)
    }

    func request(after position: LogPosition) {
        queue.async {
            self.pending = Result { try EventStore.readAll(on: self.connection, after: position, limit: self.batchSize) }
            self.ready.signal()
        }
    }

    /// The requested batch; nil once the log is exhausted.
    func next() throws -> [RecordedEvent]? {
        ready.wait()
        let batch = try pending!.get()
        return batch.isEmpty ? nil : batch
    }
}
