/// A refusal the API shows its caller: a stable `code`, a human sentence, and the kind of failure
/// it is, which decides the HTTP status (the HTTP edge reads `kind`, nothing else). Every module
/// that refuses something throws this one type, so a refusal is translated once, where it is made.
/// Never carries secrets or evidence.
package struct LedgerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure, and so which status the caller gets.
    package enum Kind: Sendable, Equatable {
        /// Malformed or invalid input (400).
        case invalid
        /// No API key, or one the ledger does not know (401).
        case unauthenticated
        /// The key lacks the scope or the app (403).
        case forbidden
        case notFound
        case methodNotAllowed
        /// The request contradicts what is recorded (409).
        case conflict
        /// A body over the limit (413).
        case tooLarge
        /// Too many attempts; try again after `retryAfter` seconds (429).
        case throttled
        /// Evidence that failed verification, or Apple cannot be asked as the app is set up (422).
        case unverifiable
        /// Apple or the database is unavailable; try again (503 with `Retry-After`).
        case unavailable
        /// A fault of the ledger or its database (500): the cause goes to the log, never the caller.
        case fault
    }

    package var code: Code
    package var kind: Kind
    package var message: String
    /// What caused it, for the server's log where the request ends — never for the caller: it
    /// may be the database's words about the values it was given.
    package var underlying: (any Error & Sendable)?
    /// Seconds the caller should wait before trying again, when the refusal knows.
    package var retryAfter: Int?

    /// A refusal of the code's usual kind.
    package init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil, retryAfter: Int? = nil) {
        self.init(code, message, kind: code.kind, underlying: underlying)
        self.retryAfter = retryAfter
    }

    /// A refusal whose kind is not its code's usual one (an unknown token is 404 where it is
    /// looked up, 400 where a request relies on it).
    package init(_ code: Code, _ message: String, kind: Kind, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    package var description: String { "\(code.rawValue): \(message)" + (underlying.map { " (cause: \($0))" } ?? "") }

    /// Equal when a caller could not tell them apart: kind, code and message.
    package static func == (a: LedgerError, b: LedgerError) -> Bool {
        a.kind == b.kind && a.code == b.code && a.message == b.message
    }

    package static func unknownApp(_ bundleID: String) -> LedgerError {
        LedgerError(.unknownApp, "no app \(bundleID) is configured")
    }
}
