import AppStore
import LedgerEventStore
import LedgerPostgres

/// A refusal the API shows its caller: a stable snake_case `code`, a human sentence, and what
/// kind of failure it is (the HTTP edge maps `kind` to a status). Never carries secrets or evidence.
package struct LedgerError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// Malformed or invalid input (400).
        case invalid
        case notFound
        /// The request contradicts what is recorded (409).
        case conflict
        /// Evidence that failed verification (422).
        case unverifiable
        /// Apple or the database is unavailable; try again (503).
        case unavailable
    }

    package var kind: Kind
    package var code: String
    package var message: String
    /// What caused it, for the server's log where the request ends — never for the caller: it
    /// may be the database's words about the values it was given.
    package var underlying: (any Error & Sendable)?

    package init(_ kind: Kind, _ code: String, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    package var description: String { "\(code): \(message)" + (underlying.map { " (cause: \($0))" } ?? "") }

    /// Equal when a caller could not tell them apart: kind, code and message.
    package static func == (a: LedgerError, b: LedgerError) -> Bool {
        a.kind == b.kind && a.code == b.code && a.message == b.message
    }

    package static func unknownApp(_ bundleID: String) -> LedgerError {
        LedgerError(.notFound, "unknown_app", "no app \(bundleID) is configured")
    }

    /// Apple's refusals: malformed input is the caller's, Apple's outage is transient, a
    /// transaction Apple does not know is not found, and everything else — evidence that did not
    /// verify, a key Apple refused or none configured — cannot be processed as the app is set up.
    package init(_ error: AppStoreError) {
        switch error.code {
        case .malformed: self.init(.invalid, error.code.rawValue, error.message)
        case .appleUnavailable: self.init(.unavailable, error.code.rawValue, error.message)
        case .appleTransactionNotFound, .appleAppTransactionNotFound: self.init(.notFound, error.code.rawValue, error.message)
        case .extensionIneligible, .extensionLimitReached, .familySharedNotSupported: self.init(.conflict, error.code.rawValue, error.message)
        case .invalidAppAccountToken, .notOriginalTransactionID: self.init(.invalid, error.code.rawValue, error.message)
        default: self.init(.unverifiable, error.code.rawValue, error.message)
        }
    }

}

extension LedgerError {
    /// Runs `body`, turning Apple's refusals into their codes; a `LedgerError` passes through
    /// unchanged, and so does a database failure, whole: the HTTP edge answers 503 for what is
    /// transient and logs anything else as the fault it is (a schema bug must not look like an outage).
    static func mapping<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as LedgerError {
            throw error
        } catch let error as AppStoreError {
            throw LedgerError(error)
        } catch let error as EventStoreError {
            // The caller reads a sentence of ours; the store's own words (a stream, ids, the
            // database's text about an invalid value) go to the log as the cause.
            switch error {
            case .database(let cause): throw cause
            case .invalidEvents:
                throw LedgerError(.invalid, "invalid_request", "a value in the request is not accepted by the ledger's storage", underlying: error)
            case .wrongExpectedVersion, .idempotencyConflict:
                throw LedgerError(.conflict, "conflict", "what this request would record contradicts what is recorded", underlying: error)
            }
        }
    }
}
