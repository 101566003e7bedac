import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerFormats
import LedgerPostgres
import LedgerProjections

/// Derives changes from the log a batch at a time and announces them: rows in `ledger.changes`,
/// the followers told (each webhook's queue: the user has more), a NOTIFY for every server's feed
/// and dispatcher.
///
/// A projection of its own, with its own checkpoint (the `changes` row of the checkpoints), that
/// follows the `users` projection: it reads the log only up to where `users` has applied it, so
/// the owners it looks users up by are known. Ingestion never waits for it, and a rebuild of
/// `users` leaves it alone — which is why a rebuild announces nothing.
///
/// One writer at a time across servers: a batch (and a clock sweep) holds an advisory lock until it
/// commits, and hands out positions under it, so positions appear in commit order and a cursor
/// never skips one. A server that finds the lock held leaves the work to the holder.
package struct ChangeProjection: Sendable {
    package static let name = "changes"
    /// Its checkpoint and the `users` projection's, from the registry (LedgerProjections').
    static let checkpoint = ProjectionRegistry.checkpointSQL(of: name, version: 1)
    static let users = ProjectionRegistry.activeCheckpointRelation(of: UsersProjection.name)
    /// The advisory lock (transaction-scoped) a batch or sweep holds: hashtext('ledger.changes').
    static let lockKey = "hashtext('ledger.changes')"
    package let batchSize: Int
    /// Whoever else learns of new changes in the statement that writes them.
    let followers: [ChangeFollower]

    package struct Outcome: Sendable {
        /// Events of the log this batch covered (0: nothing new, or another server is at it).
        package var events = 0
        /// Changes written (a change derived again is not written twice).
        package var announced = 0
        /// The highest position handed out, if any.
        package var position: Int64?
    }

    /// One batch of the log after the checkpoint, in one transaction.
    package func step(on connection: PostgresConnection, now: Date = Date()) throws -> Outcome {
        try connection.pipelinedTransaction { transaction in
            // Nothing opened (another server is at it) or nothing new: the transaction commits,
            // alone, as the body returns.
            guard let opened = try open(transaction.roundTrips, readingEvents: true) else { return Outcome() }
            let batch = try opened.events.map(RecordedEvent.init(row:))
            guard let last = batch.last?.position else { return Outcome() }
            let facts = try batch.compactMap { event -> (bundleID: String, fact: RecordedFact)? in
                UsersProjection.ignoredTypes.contains(event.type) ? nil : try StoredFacts.fact(from: event)
            }
            // Whom the batch concerns, found as the `users` projection finds them.
            var concerns = BatchConcerns(facts)
            let lookups = concerns.lookups(in: UsersProjection(version: opened.version))
            if !lookups.isEmpty { try concerns.add(try transaction.send(lookups.trip), of: lookups) }
            let users = concerns.users.sorted { ($0.bundleID, $0.userID) < ($1.bundleID, $1.userID) }
            var derived: [Derived] = []
            var clocks: [(UserKey, ChangeLog)] = []
            for (user, history) in try histories(of: users, version: opened.version, in: transaction.roundTrips) {
                var log = ChangeLog(bundleID: user.bundleID, userID: user.userID)
                for (position, fact) in history where position <= last {
                    if position <= opened.after {
                        log.prime(fact)
                    } else {
                        derived += log.apply(fact).map {
                            Derived(bundleID: user.bundleID, change: $0, traceparent: opened.traces[position.position])
                        }
                    }
                }
                clocks.append((user, log))
            }
            derived += try retentionChanges(in: batch, version: opened.version, traces: opened.traces, transaction.roundTrips)
            var closing = writes(derived, after: opened.maxPosition)
            closing.trip.add([clockStatement(clocks)])
            if !opened.traces.isEmpty { closing.trip.add([EventTraces.forget(upTo: last)]) }
            closing.trip.add([ProjectionRegistry.advance(Self.name, version: 1, to: last)])
            return try close(closing, derived: derived.count, after: opened.maxPosition, events: batch.count, in: transaction)
        }
    }

    /// Announces entitlements that ran out since their users were last looked at, for users whose
    /// next expiry is before `now`: an expiry has no event behind it, so only the clock finds it.
    package func sweep(on connection: PostgresConnection, now: Date = Date(), limit: Int = 500) throws -> Outcome {
        try connection.pipelinedTransaction { transaction in
            // Nothing opened or nothing due: the transaction commits, alone, as the body returns.
            guard let opened = try open(transaction.roundTrips, readingEvents: false) else { return Outcome() }
            var reading = RoundTrip()
            let dueSlot = reading.add(
                PipelinedStatement(
                    """
                    SELECT k.bundle_id, k.user_id, k.checked_until, t.timeline FROM ledger.change_clock k
                      LEFT JOIN \(UsersProjection(version: opened.version).timelines) t ON t.bundle_id = k.bundle_id AND t.user_id = k.user_id
                     WHERE k.next_expiry < $1 ORDER BY k.next_expiry LIMIT $2
                    """, [now, limit]))
            let due = try transaction.send(reading)[dueSlot]
            guard due.count > 0 else { return Outcome() }
            var derived: [Derived] = []
            var keys: [UserKey] = [], checked: [Date] = [], next: [Date?] = []
            for row in due {
                let user = UserKey(bundleID: try row["bundle_id"].string(), userID: try row["user_id"].string())
                let timeline =
                    try row["timeline"].optionalString().map { try StorageDecoder.decode(UserTimeline.self, from: $0) }
                    ?? UserTimeline(userID: user.userID)
                derived += ChangeLog.expiries(userID: user.userID, timeline: timeline, from: try row["checked_until"].date(), until: now)
                    .map { Derived(bundleID: user.bundleID, change: $0) }
                keys.append(user)
                checked.append(now)
                next.append(ChangeLog.nextExpiry(of: timeline, after: now))
            }
            var closing = writes(derived, after: opened.maxPosition)
            closing.trip.add([clockStatement(keys, checked: checked, next: next)])
            return try close(closing, derived: derived.count, after: opened.maxPosition, events: 0, in: transaction)
        }
    }

    // MARK: The transaction

    struct Opened {
        var after: LogPosition
        var version: Int
        var maxPosition: Int64
        var events: PostgresRows
        /// The trace each event of the batch was recorded in, by position, for those traced.
        var traces: [Int64: String] = [:]
    }

    /// A change derived, with the trace its deliveries continue.
    struct Derived {
        var bundleID: String
        var change: Change
        var traceparent: String? = nil
    }

    /// The transaction's first round trip (its BEGIN goes with it): takes the checkpoint row (nil:
    /// another server holds it), reads the active `users` version, the last position handed out
    /// and, when asked, the batch.
    private func open(_ transaction: TransactionRoundTrips, readingEvents: Bool) throws -> Opened? {
        var trip = RoundTrip()
        // Derived and re-derivable: no waiting for the disk, however the transaction ends.
        trip.add([PipelinedStatement("SET LOCAL synchronous_commit = off")])
        // One writer at a time: a transaction-scoped advisory lock, not FOR UPDATE on the
        // checkpoint row. A row lock takes a transaction id at once, and an open transaction
        // with an id holds back every reader behind the snapshot fence — the live projection
        // stalled behind each batch. The id now comes with the first write, one round trip
        // before the commit.
        let mine = trip.add(PipelinedStatement("SELECT pg_try_advisory_xact_lock(\(Self.lockKey)) AS mine"))
        let checkpoint = trip.add(PipelinedStatement(Self.checkpoint.replacingOccurrences(of: "tx_id,", with: "tx_id::text AS tx_id,")))
        // The registry row FOR SHARE: a rebuild's switch waits, so the version read stays.
        let version = trip.add(PipelinedStatement("SELECT p.active_version FROM \(Self.users) FOR SHARE OF p"))
        let position = trip.add(PipelinedStatement("SELECT coalesce(max(position), 0) AS position FROM ledger.changes"))
        var reads: (events: RoundTrip.Slot, traces: RoundTrip.Slot)?
        if readingEvents {
            let events = trip.add(
                PipelinedStatement(
                    EventStore.selectEventsSQL + """
                         WHERE (e.tx_id, e.position) > (\(Self.checkpoint))
                           AND (e.tx_id, e.position) <= (SELECT c.tx_id, c.position FROM \(Self.users))
                         ORDER BY e.tx_id, e.position LIMIT $1
                        """, [batchSize]))
            // The traces its events were recorded in: few rows (kept only until read here).
            let traces = trip.add(
                PipelinedStatement(
                    EventTraces.tracesSQL(after: "(\(Self.checkpoint))", upTo: "(SELECT c.tx_id, c.position FROM \(Self.users))")))
            reads = (events, traces)
            // The step's reads of owners and histories after it find rows by `= ANY`, as the
            // `users` projection's do: generic plans (`PipelinedStatement.genericPlans`). Not for
            // the clock sweep (`next_expiry < $1 … LIMIT $2` is where a custom plan can matter).
            trip.add([.genericPlans])
        }
        let results = try transaction.send(trip)
        guard try results[mine][0]["mine"].bool(), let row = results[checkpoint].first else { return nil }
        guard let active = try results[version].first?["active_version"].int() else {
            throw PostgresError(code: .missingState, message: "projection users has no active version")
        }
        var opened = Opened(
            after: LogPosition(transactionID: try row["tx_id"].uint64(), position: try row["position"].int64()),
            version: active, maxPosition: try results[position][0]["position"].int64(),
            events: reads.map { results[$0.events] } ?? PostgresRows())
        if let reads {
            for trace in results[reads.traces] { opened.traces[try trace["position"].int64()] = try trace["traceparent"].string() }
        }
        return opened
    }

    /// The transaction's last round trip: the closing writes, the feed's NOTIFY when there are
    /// changes, and the COMMIT.
    private func close(_ closing: Writes, derived: Int, after: Int64, events: Int, in transaction: PipelinedTransaction) throws -> Outcome {
        var trip = closing.trip
        if derived > 0 {
            trip.add([PipelinedStatement("SELECT pg_notify('\(ChangeNotifications.channel)', $1)", [String(after + Int64(derived))])])
        }
        let results = try transaction.commit(with: trip)
        let announced = derived > 0 ? try results[closing.inserted][0]["inserted"].int() : 0
        return Outcome(events: events, announced: announced, position: derived > 0 ? after + Int64(derived) : nil)
    }

    // MARK: Reading

    /// Every fact that can concern each user (the `users` projection's own read), in log order.
    private func histories(
        of users: [UserKey], version: Int, in transaction: TransactionRoundTrips
    ) throws -> [(UserKey, [(LogPosition, RecordedFact)])] {
        guard !users.isEmpty else { return [] }
        let reads = UsersProjection(version: version).reads(users, alsoStreams: [])
        let results = try transaction.send(reads.trip)
        let concerned = try BatchConcerns.streams(of: users, owned: results[reads.owned])
        var histories: [UserKey: [(LogPosition, RecordedFact)]] = [:]
        for row in results[reads.events] {
            let event = try RecordedEvent(row: row)
            guard let (_, fact) = try StoredFacts.fact(from: event) else { continue }
            for user in concerned[event.stream] ?? [] { histories[user, default: []].append((event.position, fact)) }
        }
        return users.map { user in (user, (histories[user] ?? []).sorted { $0.0 < $1.0 }) }
    }

    /// The batch's retention decisions, each announced with its user's state as the `users`
    /// projection stores it: a decision changes no state, and replaying a user's history for it
    /// (Apple may ask about one subscriber many times a second) is the cost the users projection
    /// also skips.
    private func retentionChanges(
        in batch: [RecordedEvent], version: Int, traces: [Int64: String], _ transaction: TransactionRoundTrips
    ) throws -> [Derived] {
        var decisions: [(bundleID: String, decision: RetentionDecision, fact: RecordedFact, position: Int64)] = []
        for event in batch where event.type == LedgerEventType.retentionDecided.rawValue {
            guard let (bundleID, fact) = try StoredFacts.fact(from: event), case .retentionDecided(let decision) = fact.event else {
                continue
            }
            decisions.append((bundleID, decision, fact, event.position.position))
        }
        guard !decisions.isEmpty else { return [] }
        var trip = RoundTrip()
        let slot = trip.add(
            PipelinedStatement(
                """
                SELECT bundle_id, user_id, timeline FROM \(UsersProjection(version: version).timelines)
                 WHERE bundle_id = ANY($1::text[]) AND user_id = ANY($2::text[]) AND bundle_id || chr(31) || user_id = ANY($3::text[])
                """, UsersProjection.pairs(decisions.map { ($0.bundleID, $0.decision.userID) })))
        var timelines: [String: UserTimeline] = [:]
        for row in try transaction.send(trip)[slot] {
            let key = try row["bundle_id"].string() + "\u{1F}" + row["user_id"].string()
            timelines[key] = try StorageDecoder.decode(UserTimeline.self, from: try row["timeline"].string())
        }
        return decisions.map { item in
            let timeline = timelines[item.bundleID + "\u{1F}" + item.decision.userID] ?? UserTimeline(userID: item.decision.userID)
            let change = ChangeLog.retentionOffered(item.decision, fact: item.fact, state: timeline.state(at: item.fact.recordedAt))
            return Derived(bundleID: item.bundleID, change: change, traceparent: traces[item.position])
        }
    }

    // MARK: Writing

    /// The closing round trip, begun with the changes' insert, and where that insert's count is.
    struct Writes {
        var trip: RoundTrip
        let inserted: RoundTrip.Slot

        init(_ statement: PipelinedStatement) {
            var trip = RoundTrip()
            inserted = trip.add(statement)
            self.trip = trip
        }
    }

    /// The changes, numbered after `position` in derivation order, and the followers told of them
    /// in the same statement.
    private func writes(_ derived: [Derived], after position: Int64) -> Writes {
        guard !derived.isEmpty else { return Writes(PipelinedStatement("SELECT 0 AS inserted")) }
        var columns = (
            positions: [String](), ids: [String](), apps: [String](), users: [String](), types: [String](),
            occurred: [String](), recorded: [String](), bodies: [String](), traces: [String?]()
        )
        for (index, item) in derived.enumerated() {
            let (bundleID, change) = (item.bundleID, item.change)
            columns.traces.append(item.traceparent)
            let number = position + Int64(index) + 1
            let id = StableID.make(bundleID, change.userID, change.kind.rawValue, change.identity).uuidString.lowercased()
            columns.positions.append(String(number))
            columns.ids.append(id)
            columns.apps.append(bundleID)
            columns.users.append(change.userID)
            columns.types.append(change.kind.rawValue)
            columns.occurred.append(PostgresTimestamp.format(change.occurredAt))
            columns.recorded.append(PostgresTimestamp.format(change.recordedAt))
            columns.bodies.append(String(decoding: ChangeJSON.bytes(change, id: id, app: bundleID, position: number), as: UTF8.self))
        }
        return Writes(
            PipelinedStatement(
                """
                WITH inserted AS (
                    INSERT INTO ledger.changes (position, id, bundle_id, user_id, type, occurred_at, recorded_at, body, traceparent)
                    SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::timestamptz[], $8::text[], $9::text[])
                    ON CONFLICT (id) DO NOTHING
                    RETURNING bundle_id, user_id, position)\(followers.indices.map { ",\n    follower\($0) AS (\(followers[$0].statement("inserted")))" }.joined())
                SELECT count(*) AS inserted FROM inserted
                """,
                [
                    PostgresTextArray(columns.positions), PostgresTextArray(columns.ids), PostgresTextArray(columns.apps),
                    PostgresTextArray(columns.users), PostgresTextArray(columns.types), PostgresTextArray(columns.occurred),
                    PostgresTextArray(columns.recorded), PostgresTextArray(columns.bodies), PostgresNullableTextArray(columns.traces),
                ]))
    }

    private func clockStatement(_ logs: [(UserKey, ChangeLog)]) -> PipelinedStatement {
        var keys: [UserKey] = [], checked: [Date] = [], next: [Date?] = []
        for (user, log) in logs {
            guard let until = log.checkedUntil else { continue }
            var log = log
            keys.append(user)
            checked.append(until)
            next.append(log.nextExpiry())
        }
        return clockStatement(keys, checked: checked, next: next)
    }

    /// Where each user's expiries have been derived up to, and when the next one is due.
    private func clockStatement(_ keys: [UserKey], checked: [Date], next: [Date?]) -> PipelinedStatement {
        PipelinedStatement(
            """
            INSERT INTO ledger.change_clock AS k (bundle_id, user_id, checked_until, next_expiry)
            SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[])
            ON CONFLICT (bundle_id, user_id) DO UPDATE
               SET checked_until = greatest(k.checked_until, EXCLUDED.checked_until), next_expiry = EXCLUDED.next_expiry
            """,
            [
                PostgresTextArray(keys.map(\.bundleID)), PostgresTextArray(keys.map(\.userID)),
                PostgresTextArray(checked.map(PostgresTimestamp.format)),
                PostgresNullableTextArray(next.map { $0.map(PostgresTimestamp.format) }),
            ])
    }
}
