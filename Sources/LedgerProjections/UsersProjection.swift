import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres

/// The `users` projection: who owns which transaction, and each user's timeline. Applies a batch
/// of the log to one version's tables on a connection inside the caller's transaction.
package struct UsersProjection: Sendable {
    package static let name = "users"
    /// Event types that change no one's ownership or timeline: evidence kept for the audit trail.
    /// Not decoded by this projection — in a realistic log they are half of all events.
    package static let ignoredTypes: Set<String> = [
        LedgerEventType.appleNotificationReceived.rawValue,
        LedgerEventType.consumptionInformationSent.rawValue,
        LedgerEventType.offerSigned.rawValue,
        LedgerEventType.retentionDecided.rawValue,
        LedgerEventType.renewalExtended.rawValue,
        LedgerEventType.massRenewalExtensionRequested.rawValue,
        LedgerEventType.appAccountTokenSent.rawValue,
    ]
    /// `ignoredTypes` left out, spelt as the predicate of the index of facts by stream (schema
    /// 0031): the planner uses a partial index only for a query whose condition implies its own,
    /// so the list is written into the statement, in that order, not passed as a parameter.
    static let factsOnlySQL = "e.event_type NOT IN (" + ignoredTypes.sorted().map { "'\($0)'" }.joined(separator: ", ") + ")"
    /// The events of the streams named by `names` (a text array expression, a name in it perhaps
    /// twice) that meet `condition`, in log order. Each stream is read down its own index, one
    /// after the other: a plan the planner cannot trade for a scan of the whole log, which it
    /// chose for `stream = ANY(…)` on
    /// some connections once the condition made a partial index the one to use (its estimate of
    /// an array built in the statement is blind), and for a join with the names while the log
    /// is small. `OFFSET 0` keeps the read of each stream from being merged into such a join.
    static func eventsOfStreamsSQL(_ names: String, where condition: String) -> String {
        """
        SELECT e.* FROM (SELECT DISTINCT unnest(\(names))) AS s(name),
          LATERAL (\(EventStore.selectEventsSQL) WHERE e.stream = s.name AND \(condition) OFFSET 0) AS e
         ORDER BY e.position
        """
    }

    package let version: Int

    package init(version: Int) { self.version = version }

    package var owners: String { "ledger.transaction_owners_v\(version)" }
    package var timelines: String { "ledger.user_timelines_v\(version)" }
    var finance: String { "ledger.finance_rows_v\(version)" }
    var metrics: String { "ledger.metric_contributions_v\(version)" }

    /// Records ownership from the batch, then recomputes every user the batch touched from that
    /// user's facts in the log. Recomputing (rather than patching) keeps the stored timeline
    /// exactly `AppLedger.timeline(of:)`: the same code answers live and rebuilt.
    /// Returns the users whose timeline it rewrote.
    @discardableResult
    package func apply(_ batch: [RecordedEvent], on connection: PostgresConnection) throws -> [(bundleID: String, userID: String)] {
        let changes = try changes(for: batch, in: connection)
        _ = try connection.send(RoundTrip(changes.writes))
        return changes.users
    }

    /// A decoded event with the stream it was read from.
    typealias StreamFact = (stream: String, bundleID: String, fact: RecordedFact)

    struct Changes {
        var users: [(bundleID: String, userID: String)] = []
        /// The users' new timelines, in the same order.
        var timelines: [UserTimeline] = []
        var writes: [PipelinedStatement] = []
    }

    /// What applying a batch changes: the users whose timelines it rewrites, and the statements
    /// that write them (left to the caller, so the live worker sends them with its checkpoint and
    /// commit in one round trip).
    ///
    /// Set-based and pipelined: two round trips of reads for the whole batch, whatever its size.
    /// Row by row it took eight round trips per purchase, statement by statement fifteen per batch
    /// — and writers wait for the batch to answer (read-your-writes). The reads go to `transaction`:
    /// the caller's transaction, whose end is the caller's.
    func changes(for batch: [RecordedEvent], locking: ProjectionLocks.Scope = .none, in transaction: any RoundTripSender) throws -> Changes
    {
        let (facts, moneyMoved) = try Self.decode(batch)
        return try changes(concerns: BatchConcerns(facts), moneyMoved: moneyMoved, locking: locking, in: transaction).changes
    }

    /// A batch's facts (evidence-only events skipped) and the transactions whose money they moved.
    static func decode(
        _ batch: some Sequence<RecordedEvent>
    ) throws -> (facts: [(bundleID: String, fact: RecordedFact)], moneyMoved: Set<TransactionKey>) {
        var moneyMoved: Set<TransactionKey> = []
        var decoded: [(bundleID: String, fact: RecordedFact)] = []
        for recorded in batch where !Self.ignoredTypes.contains(recorded.type) {
            guard let (bundleID, fact) = try StoredFacts.fact(from: recorded) else { continue }
            if let original = fact.event.originalTransactionID, fact.event.changesFinance {
                moneyMoved.insert(TransactionKey(bundleID: bundleID, originalTransactionID: original))
            }
            decoded.append((bundleID, fact))
        }
        return (decoded, moneyMoved)
    }

    /// `changes(for:)` on concerns the caller found. `leading` goes first in the first round trip
    /// (the inline projection's append: what it projects); the first round trip's results are
    /// returned for its slots. `locking`: the active version, which ingestion writes too
    /// (`ProjectionLocks`). `begun`: transactions among `moneyMoved` whose streams the caller knows
    /// had no events before (an ingestion group's new purchases): they have no rows to replace.
    func changes(
        concerns: BatchConcerns, moneyMoved: Set<TransactionKey>, begun: Set<TransactionKey> = [], leading: RoundTrip = RoundTrip(),
        locking: ProjectionLocks.Scope, in transaction: any RoundTripSender
    ) throws -> (changes: Changes, leading: RoundTripResults) {
        var concerns = concerns
        // Round trip 1: the owners of transactions that changed, and every user of an app whose
        // catalogue changed (it can touch any of their purchases). The users a batch names itself
        // (claimants, both sides of a transfer) are among its concerns already.
        let lookups = concerns.lookups(in: self)

        // Round trip 2: the locks; the new owners recorded; every fact of every affected user and
        // of every transaction whose money moved, in one read (a moved transaction is usually an
        // affected user's), decoded once — after the locks, so what is read is at least what any
        // earlier writer of them read. With nobody to look up (an ingestion group knows its
        // users), it rides on round trip 1.
        // The owners' insert waits for the locks too: the live worker inserted them before it took
        // the purchase streams' locks, and an ingestion group holding one of those locks, inserting
        // the same owner (it records every owner its streams name), waited for the worker while
        // the worker waited for the group's lock — a deadlock (SerializedWritesTests, 1 run in 6).
        let newOwners = concerns.newOwners
        let recordOwners =
            newOwners.isEmpty
            ? []
            : [
                PipelinedStatement(
                    """
                    INSERT INTO \(owners) (bundle_id, original_transaction_id, user_id)
                    SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING
                    """,
                    [
                        PostgresTextArray(newOwners.map(\.bundleID)), PostgresTextArray(newOwners.map(\.original)),
                        PostgresTextArray(newOwners.map(\.userID)),
                    ])
            ]
        let moved = Array(moneyMoved)
        let movedStreams = moved.map { LedgerStream.purchase($0.bundleID, originalTransactionID: $0.originalTransactionID) }
        struct Reading {
            var users: [UserKey]
            var trip = RoundTrip()
            /// The reads, and where they are in `trip`; none with nobody to read.
            var reads: (Reads, RoundTrip.Part)?
        }
        func reading(_ affected: Set<UserKey>) -> Reading {
            var reading = Reading(users: affected.sorted { ($0.bundleID, $0.userID) < ($1.bundleID, $1.userID) })
            guard !reading.users.isEmpty || !moved.isEmpty else {
                reading.trip.add(recordOwners)
                return reading
            }
            reading.trip.add(ProjectionLocks.statements(locking, users: reading.users, purchaseStreams: movedStreams) + recordOwners)
            let reads = self.reads(reading.users, alsoStreams: movedStreams)
            reading.reads = (reads, reading.trip.include(reads.trip))
            return reading
        }
        var first = leading
        let lookupsPart = first.include(lookups.trip)
        var second = lookups.isEmpty ? reading(concerns.users) : nil
        let secondPart = second.map { first.include($0.trip) }
        let firstResults = try transaction.send(first)
        let secondResults: RoundTripResults
        if let secondPart {
            secondResults = firstResults[secondPart]
        } else {
            try concerns.add(firstResults[lookupsPart], of: lookups)
            let found = reading(concerns.users)
            second = found
            secondResults = try transaction.send(found.trip)
        }
        let users = second?.users ?? []
        var facts: [StreamFact] = []
        var owned = PostgresRows()
        if let (reads, part) = second?.reads {
            let read = secondResults[part]
            owned = read[reads.owned]
            facts = try Self.facts(of: read[reads.events])
        }

        var changes = Changes(users: users.map { ($0.bundleID, $0.userID) })
        if !users.isEmpty {
            let ledgers = try Self.userLedgers(users, owned: owned, facts: facts)
            var texts: [String] = []
            for user in users {
                let timeline = (ledgers[user] ?? AppLedger(bundleID: user.bundleID)).timeline(of: user.userID)
                changes.timelines.append(timeline)
                texts.append(String(decoding: TimelineJSON.bytes(timeline), as: UTF8.self))
            }
            changes.writes.append(
                PipelinedStatement(
                    """
                    INSERT INTO \(self.timelines) (bundle_id, user_id, timeline)
                    SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
                    ON CONFLICT (bundle_id, user_id) DO UPDATE SET timeline = EXCLUDED.timeline
                    """, [PostgresTextArray(users.map(\.bundleID)), PostgresTextArray(users.map(\.userID)), PostgresTextArray(texts)]))
        }
        if !moved.isEmpty { changes.writes += financeWrites(moved, streams: movedStreams, facts: facts, begun: begun) }
        return (changes, firstResults)
    }

    /// The two reads of a batch, and where each one's rows are.
    package struct Reads: Sendable {
        package let trip: RoundTrip
        /// The transactions the users own or owned (`bundle_id`, `user_id`, `original_transaction_id`).
        package let owned: RoundTrip.Slot
        /// Every event that concerns any of the users, in log order.
        package let events: RoundTrip.Slot
    }

    /// The two reads of a batch: the transactions the users own, and every event of every stream
    /// that concerns any of them (their app's, their own, their purchases' — found through the
    /// owners table inside the statement, as `userLedger` does for one user) or is in `alsoStreams`.
    /// Evidence-only events are left out, as a rebuild leaves them out.
    package func reads(_ users: [UserKey], alsoStreams: [String]) -> Reads {
        Self.reads(users, alsoStreams: alsoStreams, owners: owners, recordedBy: nil)
    }

    /// `reads` through the owners table named, of the events recorded by `recordedBy` (nil: all).
    static func reads(_ users: [UserKey], alsoStreams: [String], owners: String, recordedBy: Date?) -> Reads {
        var streams = Set(alsoStreams)
        for user in users {
            streams.insert(LedgerStream.app(user.bundleID))
            streams.insert(LedgerStream.consent(user.bundleID))
            streams.insert(LedgerStream.user(user.bundleID, userID: user.userID))
        }
        let keys = Self.pairs(users.map { ($0.bundleID, $0.userID) })
        let owned =
            "o.bundle_id = ANY($1::text[]) AND o.user_id = ANY($2::text[]) AND o.bundle_id || chr(31) || o.user_id = ANY($3::text[])"
        var trip = RoundTrip()
        let ownedSlot = trip.add(
            PipelinedStatement("SELECT o.bundle_id, o.user_id, o.original_transaction_id FROM \(owners) o WHERE \(owned)", keys))
        let purchase = LedgerStream.purchaseSQL(bundle: "o.bundle_id", originalTransactionID: "o.original_transaction_id")
        let names = "$4::text[] || ARRAY(SELECT \(purchase) FROM \(owners) o WHERE \(owned))"
        // The projection's reads, on every ingestion, keep the plan they have without a bound on time.
        let condition = recordedBy == nil ? Self.factsOnlySQL : "e.recorded_at <= $5::timestamptz AND " + Self.factsOnlySQL
        let eventsSlot = trip.add(
            PipelinedStatement(
                Self.eventsOfStreamsSQL(names, where: condition),
                keys + [PostgresTextArray(Array(streams))] + (recordedBy.map { [$0] } ?? [])))
        return Reads(trip: trip, owned: ownedSlot, events: eventsSlot)
    }

    /// Each user's ledger, as `userLedger` reads it for one, for many users in one round trip
    /// (the app's streams read once for them all, not once a user).
    static func userLedgers(
        _ users: [UserKey], owners: String, recordedBy: Date?, on connection: PostgresConnection
    ) throws -> [UserKey: AppLedger] {
        let reads = Self.reads(users, alsoStreams: [], owners: owners, recordedBy: recordedBy)
        let results = try connection.send(reads.trip)
        return try userLedgers(users, owned: results[reads.owned], facts: facts(of: results[reads.events]))
    }

    /// The facts of the events `rows` hold (`eventsOfStreamsSQL`'s), each with its stream.
    static func facts(of rows: PostgresRows) throws -> [StreamFact] {
        var facts: [StreamFact] = []
        for row in rows {
            let recorded = try RecordedEvent(row: row)
            if let (bundleID, fact) = try StoredFacts.fact(from: recorded) { facts.append((recorded.stream, bundleID, fact)) }
        }
        return facts
    }

    /// Pairs of keys as three parameters — the distinct first parts, the distinct second parts and
    /// the pairs joined by U+001F (which neither may contain) — for `a = ANY($1) AND b = ANY($2) AND
    /// a || chr(31) || b = ANY($3)`: an index scan PostgreSQL plans in a fraction of the time of a
    /// join with `unnest(…)`, which it planned anew for every call (a fifth of its time in
    /// ingestion). Almost always one app, so the first two lists are the pairs' own.
    package static func pairs(_ pairs: [(String, String)]) -> [(any PostgresBindable)?] {
        [
            PostgresTextArray(Array(Set(pairs.map(\.0)))), PostgresTextArray(Array(Set(pairs.map(\.1)))),
            PostgresTextArray(pairs.map { $0.0 + "\u{1F}" + $0.1 }),
        ]
    }

    /// Each user's facts, each given to each user its stream concerns.
    static func userLedgers(_ users: [UserKey], owned: PostgresRows, facts: [StreamFact]) throws -> [UserKey: AppLedger] {
        let concerned = try BatchConcerns.streams(of: users, owned: owned)
        var ledgers: [UserKey: AppLedger] = [:]
        for (stream, _, fact) in facts {
            for user in concerned[stream] ?? [] {
                ledgers[user, default: AppLedger(bundleID: user.bundleID)].apply(fact)
            }
        }
        return ledgers
    }

    /// Replaces the finance rows and metric contributions of each original transaction with what
    /// its stream now says (`facts` hold every fact of those streams): a delete and an insert each
    /// for them all — no delete when every one of them is `begun` (nothing stored to replace: two
    /// statements fewer in an ingestion group of new purchases).
    func financeWrites(
        _ transactions: [TransactionKey], streams: [String], facts: [StreamFact], begun: Set<TransactionKey> = []
    ) -> [PipelinedStatement] {
        let wanted = Set(streams)
        var ledgers: [String: AppLedger] = [:]
        var own: [String: [RecordedFact]] = [:]
        for (stream, bundleID, fact) in facts where wanted.contains(stream) {
            ledgers[stream, default: AppLedger(bundleID: bundleID)].apply(fact)
            own[stream, default: []].append(fact)
        }
        let stored = transactions.filter { !begun.contains($0) }
        let keys = Self.pairs(stored.map { ($0.bundleID, $0.originalTransactionID) })
        var metrics = MetricColumns()
        for (transaction, stream) in zip(transactions, streams) {
            for contribution in SubscriptionMetrics.stored(of: own[stream] ?? [], originalTransactionID: transaction.originalTransactionID)
            {
                metrics.append(transaction, contribution)
            }
        }
        // The stored rows of the transactions that may have some, in either table.
        func deleteStored(from table: String) -> [PipelinedStatement] {
            stored.isEmpty
                ? []
                : [
                    PipelinedStatement(
                        """
                        DELETE FROM \(table) t
                         WHERE t.bundle_id = ANY($1::text[]) AND t.original_transaction_id = ANY($2::text[])
                           AND t.bundle_id || chr(31) || t.original_transaction_id = ANY($3::text[])
                        """, keys)
                ]
        }
        let metricWrites =
            deleteStored(from: self.metrics)
            + (metrics.isEmpty
                ? []
                : [
                    PipelinedStatement(
                        """
                        INSERT INTO \(self.metrics) (bundle_id, original_transaction_id, kind, environment, dimension, from_at, until_at, value)
                        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::timestamptz[], $8::bigint[])
                        """, metrics.parameters)
                ])
        var writes = metricWrites + deleteStored(from: finance)
        var columns = FinanceColumns()
        for (transaction, stream) in zip(transactions, streams) {
            guard let ledger = ledgers[stream] else { continue }
            for (seq, row) in ledger.financeRows(ofTransaction: transaction.originalTransactionID).enumerated() {
                columns.append(transaction, seq: seq, row)
            }
        }
        guard !columns.bundleIDs.isEmpty else { return writes }
        writes.append(
            PipelinedStatement(
                """
                INSERT INTO \(finance) (bundle_id, original_transaction_id, seq, kind, transaction_id, user_id, product_id, quantity, price,
                                        currency, storefront, environment, occurred_at, recorded_at, offer_type, offer_id, offer_discount_type,
                                        position)
                SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::bigint[],
                                     $10::text[], $11::text[], $12::text[], $13::timestamptz[], $14::timestamptz[], $15::int[], $16::text[], $17::text[],
                                     $18::bigint[])
                """, columns.parameters))
        return writes
    }

    /// Every fact that can concern one user — the app's, its withdrawals of consent, the user's own, and each transaction the
    /// user ever owned according to `owners` — optionally only those recorded by `recordedBy`.
    /// Evidence-only events are left out unless asked for (the audit trail shows them): they change
    /// no one's state.
    static func userLedger(
        bundleID: String, userID: String, owners: String, recordedBy: Date?, withEvidence: Bool = false,
        on connection: PostgresConnection
    ) throws -> AppLedger {
        // One round trip: the user's own streams, and the purchase streams of everything the user
        // ever owned, found through the owners table inside the same statement.
        let streams = [LedgerStream.app(bundleID), LedgerStream.consent(bundleID), LedgerStream.user(bundleID, userID: userID)]
        let purchase = LedgerStream.purchaseSQL(bundle: "o.bundle_id", originalTransactionID: "o.original_transaction_id")
        let rows = try connection.query(
            eventsOfStreamsSQL(
                "$1::text[] || ARRAY(SELECT \(purchase) FROM \(owners) o WHERE o.bundle_id = $3 AND o.user_id = $4)",
                where: "($2::timestamptz IS NULL OR e.recorded_at <= $2)" + (withEvidence ? "" : " AND " + factsOnlySQL)),
            [PostgresTextArray(streams), recordedBy, bundleID, userID])
        return try ledger(bundleID: bundleID, of: rows)
    }

    /// The ledger of the facts `rows` hold (`eventsOfStreamsSQL`'s), in their order.
    private static func ledger(bundleID: String, of rows: PostgresRows) throws -> AppLedger {
        var ledger = AppLedger(bundleID: bundleID)
        for row in rows {
            if let (_, fact) = try StoredFacts.fact(from: RecordedEvent(row: row)) { ledger.apply(fact) }
        }
        return ledger
    }

    /// Every fact about whoever ever owned `originalTransactionID` — its stream, their own streams
    /// and their other purchases — in one round trip, for a decision about a subscription a store
    /// names rather than a user: who owns it now is then told by its stream's facts, as always.
    static func subscriptionLedger(
        bundleID: String, originalTransactionID: String, owners: String, on connection: PostgresConnection
    ) throws -> AppLedger {
        let streams = [
            LedgerStream.app(bundleID), LedgerStream.consent(bundleID),
            LedgerStream.purchase(bundleID, originalTransactionID: originalTransactionID),
        ]
        let owning = "o.bundle_id = $2 AND o.original_transaction_id = $3"
        let rows = try connection.query(
            eventsOfStreamsSQL(
                """
                $1::text[] || ARRAY(SELECT \(LedgerStream.userSQL(bundle: "o.bundle_id", userID: "o.user_id")) FROM \(owners) o WHERE \(owning))
                  || ARRAY(SELECT \(LedgerStream.purchaseSQL(bundle: "p.bundle_id", originalTransactionID: "p.original_transaction_id"))
                             FROM \(owners) o JOIN \(owners) p ON p.bundle_id = o.bundle_id AND p.user_id = o.user_id WHERE \(owning))
                """, where: factsOnlySQL),
            [PostgresTextArray(streams), bundleID, originalTransactionID])
        return try ledger(bundleID: bundleID, of: rows)
    }
}

extension LedgerEvent {
    /// Facts that add, remove or re-attribute a finance row (ownership decides its user column), or
    /// change a transaction's metrics (a family-sharing revocation ends its access).
    var changesFinance: Bool {
        switch self {
        case .purchased, .restored, .renewed, .recovered, .refunded, .revoked, .refundReversed, .transactionClaimed, .ownershipTransferred:
            true
        default: false
        }
    }
}
