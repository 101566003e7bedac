/// The round trips of a transaction another function owns (`PipelinedTransaction.roundTrips`):
/// a participant — the projection in an ingestion group's transaction, the reads of a batch —
/// sends its statements in them and reads its own results by handle. It cannot begin the
/// transaction, commit it or roll it back: that stays with the owner, so a transaction written by
/// several modules still has one place where it ends.
package struct TransactionRoundTrips: RoundTripSender {
    private let transaction: PipelinedTransaction

    init(lentBy transaction: PipelinedTransaction) {
        self.transaction = transaction
    }

    /// Sends `trip` in the transaction (after its BEGIN, when it is the first round trip).
    package func send(_ trip: RoundTrip) throws -> RoundTripResults {
        try transaction.send(trip)
    }
}
