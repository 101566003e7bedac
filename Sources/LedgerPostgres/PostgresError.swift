/// Everything that can go wrong talking to PostgreSQL, as one extensible, redacted error.
///
/// Modelled on postgres-nio's `PSQLError`: a struct with a growable `Code` so new cases never
/// break callers, and a `description` that is redacted on purpose. Server messages can quote
/// the values that were bound (a receipt, a key), so only `debugDescription` carries them.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        init(_ name: String) { self.name = name }
        public var description: String { name }

        /// No connection could be opened (server down, wrong address, authentication).
        public static let connectionFailed = Code("connection_failed")
        /// An open connection broke during a call; the server may or may not have run it.
        public static let connectionLost = Code("connection_lost")
        /// The server ran the statement and reported an error (see `sqlState`).
        public static let server = Code("server_error")
        /// No connection became free within the pool's wait limit.
        public static let poolTimeout = Code("pool_timeout")
        /// The pool was shut down.
        public static let poolClosed = Code("pool_closed")
        /// The server answered something this client did not expect.
        public static let protocolViolation = Code("protocol_violation")
        /// A value read back could not be decoded into the requested Swift type.
        public static let decoding = Code("decoding_failed")
    }

    public var code: Code
    /// The five-character SQLSTATE for `.server` errors (e.g. `23505`).
    public var sqlState: String?
    /// The server's or libpq's message. May quote bound values: never log it at info level.
    public var message: String
    public var detail: String?
    public var constraint: String?
    /// In a pipeline, the index of the statement that failed (0 = the first one the caller passed).
    public var statementIndex: Int?

    public init(code: Code, sqlState: String? = nil, message: String, detail: String? = nil, constraint: String? = nil) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.constraint = constraint
    }

    /// True when the failure says nothing about the statement and retrying later may succeed.
    public var isTransient: Bool {
        switch code {
        case .connectionFailed, .connectionLost, .poolTimeout: return true
        case .server:
            // 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now, 08xxx connection.
            guard let state = sqlState else { return false }
            return state.hasPrefix("08") || state.hasPrefix("57P") || state == "40001" || state == "40P01"
        default: return false
        }
    }

    public var description: String {
        var text = "PostgreSQL \(code)"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let constraint { text += " on \(constraint)" }
        // libpq's own connection messages name hosts and reasons, never bound values: keep them.
        if sqlState == nil, code == .connectionFailed || code == .connectionLost, !message.isEmpty { text += ": \(message)" }
        return text
    }

    public var debugDescription: String {
        var text = description + ": " + message
        if let detail { text += " — " + detail }
        return text
    }
}
