import AppStore
import LedgerEventStore
import LedgerPostgres

/// A refusal the API shows its caller: a stable snake_case `code`, a human sentence, and what
/// kind of failure it is (the HTTP edge maps `kind` to a status). Never carries secrets or evidence.
public struct LedgerError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
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

    public var kind: Kind
    public var code: String
    public var message: String

    public init(_ kind: Kind, _ code: String, _ message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    public static func unknownApp(_ bundleID: String) -> LedgerError {
        LedgerError(.notFound, "unknown_app", "no app \(bundleID) is configured")
    }

    /// Apple's refusals: malformed input is the caller's, Apple's outage is transient, and
    /// everything else is evidence that did not verify.
    public init(_ error: AppStoreError) {
        switch error.code {
        case .malformed: self.init(.invalid, error.code.rawValue, error.message)
        case .appleUnavailable: self.init(.unavailable, error.code.rawValue, error.message)
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
            if case .database(let cause) = error { throw cause }
            throw LedgerError(.conflict, "conflict", "\(error)")
        }
    }
}
