/// Everything that can go wrong talking to PostgreSQL, as one extensible error an operator can act on.
///
/// Modelled on postgres-nio's `PSQLError`: a struct with a growable `Code` so new cases never
/// break callers. Its `description` is what an operator reads on stderr or in a log: what the
/// ledger was doing, the server's message, detail and hint, and the SQLSTATE — e.g.
/// `applying migration 0001_event_store: permission denied to create role (SQLSTATE 42501)`.
/// Server texts can quote the values a statement was given (a receipt, a key), so they are
/// redacted when the error is made (`PostgresRedaction`); no unredacted copy is kept.
package struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        package let name: String
        init(_ name: String) { self.name = name }
        package var description: String { name }

        /// No connection could be opened (server down, wrong address, authentication).
        package static let connectionFailed = Code("connection_failed")
        /// An open connection broke during a call; the server may or may not have run it.
        package static let connectionLost = Code("connection_lost")
        /// The server ran the statement and reported an error (see `sqlState`).
        package static let server = Code("server_error")
        /// The server did not answer within the connection's deadline (a lock held elsewhere, a
        /// COMMIT waiting for a synchronous standby that is gone, a server that stopped
        /// answering). The connection is dropped: what the statement did is unknown.
        package static let deadlineExceeded = Code("deadline_exceeded")
        /// The request being served reached its deadline (`RequestDeadline`) before the database
        /// answered; a connection waited on is dropped, and what its statement did is unknown.
        package static let requestDeadline = Code("request_deadline")
        /// No connection became free within the pool's wait limit.
        package static let poolTimeout = Code("pool_timeout")
        /// The pool was shut down.
        package static let poolClosed = Code("pool_closed")
        /// The server answered something this client did not expect.
        package static let protocolViolation = Code("protocol_violation")
        /// A value read back could not be decoded into the requested Swift type.
        package static let decoding = Code("decoding_failed")
        /// What a transaction relied on was changed by another before it finished: the users
        /// projection switched versions (a rebuild's switch) under a group or a batch. The work
        /// passes when tried again, so it counts as transient.
        package static let changedMeanwhile = Code("changed_meanwhile")
        /// The database lacks what the ledger needs to work: no active version of a projection,
        /// a checkpoint gone. A database not migrated, or changed by hand; not transient.
        package static let missingState = Code("missing_state")
    }

    package var code: Code
    /// The five-character SQLSTATE for `.server` errors (e.g. `23505`).
    package var sqlState: String?
    /// The server's primary message or libpq's, redacted of bound values.
    package var message: String
    package var detail: String?
    /// The server's suggestion of what to do (e.g. "Use CREATE … IF NOT EXISTS").
    package var hint: String?
    package var constraint: String?
    /// In a pipeline, the index of the statement that failed (0 = the first one the caller passed).
    package var statementIndex: Int?
    /// What the ledger was doing, outermost first ("starting the server", "applying migration …").
    package var context: [String] = []

    package init(
        code: Code, sqlState: String? = nil, message: String, detail: String? = nil, hint: String? = nil, constraint: String? = nil
    ) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
    }

    /// True when the failure says nothing about the statement and retrying later may succeed:
    /// the connection failed or broke, the server is starting or stopping, or a serialisation
    /// failure or deadlock was reported. Anything else is a fault to fix, not to wait out.
    package var isTransient: Bool {
        switch code {
        case .connectionFailed, .connectionLost, .poolTimeout, .deadlineExceeded, .requestDeadline, .changedMeanwhile: return true
        case .server:
            // 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now, 08xxx connection,
            // 53300 too many connections, 25006 read-only transaction (a primary that became a standby).
            guard let state = sqlState else { return false }
            return state.hasPrefix("08") || state.hasPrefix("57P") || ["40001", "40P01", "53300", "25006"].contains(state)
        default: return false
        }
    }

    /// The request's deadline passed while it waited on the database (or before it asked).
    package static func requestDeadlinePassed() -> PostgresError {
        PostgresError(code: .requestDeadline, message: "the request reached its deadline before PostgreSQL answered")
    }

    /// This error with `doing` as its outermost context.
    package func doing(_ doing: String) -> PostgresError {
        var copy = self
        copy.context.insert(doing, at: 0)
        return copy
    }

    package var description: String {
        var text = context.map { $0 + ": " }.joined()
        text += message.isEmpty ? "PostgreSQL \(code)" : message
        if let sqlState { text += " (SQLSTATE \(sqlState))" } else if code != .server { text += " (\(code))" }
        if let detail, !detail.isEmpty { text += "; detail: " + detail }
        if let hint, !hint.isEmpty { text += "; hint: " + hint }
        return text
    }

    package var debugDescription: String {
        description + (constraint.map { " [constraint \($0)]" } ?? "") + (statementIndex.map { " [statement \($0)]" } ?? "")
    }
}

/// Runs `body`, naming what it does in any `PostgresError` it throws: the operator then reads
/// "applying migration 0002_projections: …", not a bare SQLSTATE.
@discardableResult
package func whilePostgres<T>(_ doing: @autoclosure () -> String, _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as PostgresError {
        throw error.doing(doing())
    }
}

/// `whilePostgres` for asynchronous work.
@discardableResult
package func whilePostgres<T>(_ doing: @autoclosure () -> String, _ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as PostgresError {
        throw error.doing(doing())
    }
}
