/// A transaction sent as pipelined round trips, with one owner: the function that opened it
/// (`PostgresConnection.pipelinedTransaction`), the only one to send its BEGIN, COMMIT or
/// ROLLBACK — as postgres-nio's `withTransaction` begins, commits on return and rolls back on a
/// throw, so a body never does.
///
/// The BEGIN goes first in the transaction's first round trip and the COMMIT last in the one its
/// owner closes it with (`commit(with:)`): a transaction of N round trips costs N, not N + 2,
/// and the group commit and the live projection are measured by their round trips. Whoever else
/// writes into it is lent `roundTrips`: a participant sends its statements in a round trip and
/// reads its own results by the handles its `RoundTrip` gave, and can neither begin nor end it.
package final class PipelinedTransaction {
    private let connection: PostgresConnection
    private var state = State.notBegun

    private enum State {
        /// Nothing sent yet: the next round trip begins with BEGIN.
        case notBegun
        case open
        /// Committed or rolled back: nothing more may be sent in it.
        case ended
    }

    fileprivate init(on connection: PostgresConnection) {
        self.connection = connection
    }

    /// What the owner lends to participants: round trips in this transaction, and no way to end it.
    package var roundTrips: TransactionRoundTrips { TransactionRoundTrips(lentBy: self) }

    /// Sends BEGIN now, alone: for an owner whose body sends its statements one by one on the
    /// connection (`PostgresConnection.transaction`).
    package func begin() throws {
        guard state == .notBegun else { return }
        _ = try roundTrip(RoundTrip(), committing: [])
    }

    /// Sends `trip` in the transaction, after BEGIN when it is the transaction's first.
    package func send(_ trip: RoundTrip) throws -> RoundTripResults {
        guard !trip.isEmpty else { return RoundTripResults([]) }
        return try roundTrip(trip, committing: [])
    }

    /// Sends `trip` as the transaction's last round trip, COMMIT after it: what it wrote is kept
    /// when the call returns. `waitingForDisk: false` lets the COMMIT return before its WAL is on
    /// the disk (`SET LOCAL synchronous_commit = off` just before it): for writes whose loss in a
    /// crash is harmless or repaired (evidence an append will flush after it, a group that only
    /// stored evidence). A transaction that sent nothing and is given nothing ends without a
    /// round trip.
    @discardableResult
    package func commit(with trip: RoundTrip = RoundTrip(), waitingForDisk: Bool = true) throws -> RoundTripResults {
        guard state != .notBegun || !trip.isEmpty else {
            state = .ended
            return RoundTripResults([])
        }
        return try roundTrip(trip, committing: waitingForDisk ? [Self.commit] : [Self.commitWithoutWaitingForDisk, Self.commit])
    }

    /// COMMIT alone, for an owner that returned without closing its transaction.
    fileprivate func commitIfOpen() throws {
        if state == .open { try commit() }
        state = .ended
    }

    /// Ends the transaction keeping nothing it wrote: for an owner that caught an error and answers
    /// with something other than a throw (a group refused).
    package func rollBack() {
        if state == .open { connection.rollbackIfNeeded() }
        state = .ended
    }

    /// One round trip: BEGIN first when nothing was sent before, `committing` last. Any failure
    /// rolls the transaction back, so what its owner does next runs outside it.
    private func roundTrip(_ trip: RoundTrip, committing: [PipelinedStatement]) throws -> RoundTripResults {
        precondition(state != .ended, "a round trip in a transaction that has ended")
        let leading = state == .notBegun ? [Self.begin] : []
        state = .open
        do {
            let rows: [PostgresRows]
            if trip.isEmpty, leading.count + committing.count == 1 {
                // BEGIN or COMMIT alone: one plain statement, as before pipelining existed.
                try connection.query((leading + committing)[0].sql)
                rows = []
            } else {
                rows = try connection.pipeline(trip.statements, leading: leading, trailing: committing)
            }
            if !committing.isEmpty { state = .ended }
            return RoundTripResults(rows)
        } catch {
            rollBack()
            throw error
        }
    }

    private static let begin = PipelinedStatement("BEGIN")
    private static let commit = PipelinedStatement("COMMIT")
    private static let commitWithoutWaitingForDisk = PipelinedStatement("SELECT set_config('synchronous_commit', 'off', true)")
}

extension PostgresConnection {
    /// Runs `body` as the owner of one transaction on this connection: BEGIN with its first round
    /// trip, COMMIT with the one it closes the transaction with — or alone, when `body` returns
    /// without closing it — and ROLLBACK when `body` throws. Never hold one across a network call:
    /// a long writing transaction delays every reader behind the snapshot fence.
    package func pipelinedTransaction<T>(_ body: (PipelinedTransaction) throws -> T) throws -> T {
        let transaction = PipelinedTransaction(on: self)
        do {
            let result = try body(transaction)
            try transaction.commitIfOpen()
            return result
        } catch {
            transaction.rollBack()
            throw error
        }
    }
}
