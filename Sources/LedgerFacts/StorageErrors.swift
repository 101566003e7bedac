import LedgerCore
import LedgerEventStore
import LedgerPostgres

/// A database failure, as the caller is told of it (declared here, in the bridge between storage
/// and domain, because neither side imports the other): 503 only for what passes (the database away
/// or starting, a pool full, a serialisation failure); anything else is a fault — logged where
/// the request ends with PostgreSQL's words (redacted of the statement's values), and a 500
/// without them: no database text reaches a client.
extension PostgresError: LedgerErrorConvertible {
    package var ledgerError: LedgerError {
        if code == .changedMeanwhile {
            return LedgerError(
                .databaseUnavailable, "the ledger was switching to a rebuilt projection; try again shortly", underlying: self)
        }
        if code == .requestDeadline {
            return LedgerError(
                .databaseUnavailable,
                "the database did not answer within the request's deadline; try again shortly (a request sent again is recorded once)",
                underlying: self)
        }
        if isTransient { return LedgerError(.databaseUnavailable, "the database is unavailable; try again shortly", underlying: self) }
        // Text PostgreSQL cannot store (U+0000 in text or jsonb; a character outside the
        // database's encoding) came from the request: the caller's to fix, whatever field it was
        // in. The fields are checked where they enter; this is the net under a free-text one.
        if let state = sqlState, ["22P05", "22021"].contains(state) {
            return LedgerError(
                .invalidRequest, "a text in the request holds a character the ledger cannot store (such as U+0000)", underlying: self)
        }
        return LedgerError(.internalError, "the ledger failed unexpectedly; the server's log has the cause", underlying: self)
    }
}

/// The store's failures that reach a caller unmapped: its database's, as the database's.
extension EventStoreError: LedgerErrorConvertible {
    package var ledgerError: LedgerError {
        switch self {
        case .database(let cause): cause.ledgerError
        case .invalidEvents:
            LedgerError(.invalidRequest, "a value in the request is not accepted by the ledger's storage", underlying: self)
        case .wrongExpectedVersion, .idempotencyConflict:
            LedgerError(.conflict, "what this request would record contradicts what is recorded", underlying: self)
        }
    }
}
