import LedgerCore
import LedgerEventStore
import LedgerFacts

extension LedgerError {
    /// Runs `body`, turning the event store's refusals into the caller's words
    /// (`EventStoreError.ledgerError`); a `LedgerError` (Apple's refusals included) passes through
    /// unchanged, and so does a database failure, whole: the HTTP edge answers 503 for what is
    /// transient and logs anything else as the fault it is (a schema bug must not look like an outage).
    static func mapping<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as EventStoreError {
            if case .database(let cause) = error { throw cause }
            throw error.ledgerError
        }
    }
}
