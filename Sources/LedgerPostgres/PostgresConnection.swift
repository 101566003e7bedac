import CLibPQ
import LedgerTracing
import Tracing

#if canImport(Glibc)
    import Glibc
#endif

/// One libpq connection. Every method blocks its calling thread.
///
/// Never call it from Swift's cooperative pool: it has one thread per core, and a blocked
/// query there freezes every task. `PostgresPool` runs these calls on a
/// dedicated thread pool sized to its connection count.
///
/// `@unchecked Sendable` because a connection moves between threads, but it is never *shared*:
/// the pool lends it to exactly one caller at a time, and the listener owns its own.
package final class PostgresConnection: @unchecked Sendable {
    let handle: OpaquePointer
    /// Statement text → prepared statement name and the summary its spans are named by. SQL text
    /// is always a constant in this code base, so this stays small; preparing once saves a parse
    /// and plan per call on the hot path.
    private var prepared: [String: (name: String, summary: String)] = [:]
    /// Set once a call failed below the SQL level: libpq may still report CONNECTION_OK after a
    /// failed send on a reset socket, but such a connection must never be handed out again.
    private var broken = false
    /// `PostgresConfiguration.deadline`, per call.
    let deadline: Duration?

    private init(handle: OpaquePointer, deadline: Duration?) {
        self.handle = handle
        self.deadline = deadline
    }

    deinit { PQfinish(handle) }

    /// Opens a connection with UTC timestamps, ISO dates and a 60 s limit on idle open transactions
    /// (one left open would hold back every reader behind the snapshot fence), then switches to
    /// `configuration.role`.
    package static func connect(_ configuration: PostgresConfiguration) throws -> PostgresConnection {
        let keywords = ["dbname", "application_name", "connect_timeout", "options"]
        let values = [
            configuration.connectionString, configuration.applicationName,
            String(configuration.connectTimeoutSeconds), "-c TimeZone=UTC -c DateStyle=ISO -c idle_in_transaction_session_timeout=60000",
        ]
        let handle = withCStringArray(keywords) { keywordPointers in
            withCStringArray(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1) // 1: expand a URL given as dbname
            }
        }
        guard let handle else {
            throw PostgresError(code: .connectionFailed, message: "libpq could not allocate a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(handle))
            PQfinish(handle)
            throw PostgresError(code: .connectionFailed, message: message.trimmingTrailingWhitespace())
        }
        let connection = PostgresConnection(handle: handle, deadline: configuration.deadline)
        if let role = configuration.role {
            // set_config keeps the role name a parameter rather than spliced SQL text.
            try connection.query("SELECT set_config('role', $1, false)", [role])
        }
        return connection
    }

    /// False once libpq has seen the connection break; the pool then replaces it.
    package var isHealthy: Bool { !broken && PQstatus(handle) == CONNECTION_OK }

    /// A cheap check before reuse, for an idle pooled connection: one `poll(2)`. Such a connection
    /// has nothing to say unless the server is leaving: a restart, an immediate shutdown or an
    /// administrator's kill first sends a FATAL message, then closes the socket. Reading that
    /// message alone left the connection looking fine (the end of file comes on the next read),
    /// and the next statement on it failed with "server closed the connection unexpectedly" — a
    /// readiness probe after the primary returned said `read_only`. So anything to read on an idle
    /// connection retires it; at worst that costs one reconnection.
    package func checkAlive() -> Bool {
        guard isHealthy else { return false }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, 0) != 0 { broken = true }
        return !broken
    }

    /// True while a transaction is open (or aborted) on this connection.
    package var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// Runs one parameterised statement (prepared on first use) and returns its rows.
    @discardableResult
    package func query(_ sql: String, _ parameters: [(any PostgresBindable)?] = []) throws -> PostgresRows {
        try Spans.child(summary(of: sql), kind: .client) { span in
            do {
                let name = try statementName(for: sql, parameterCount: parameters.count)
                let sent = withParameters(parameters) { values, count in
                    PQsendQueryPrepared(handle, name, count, values, nil, nil, 0)
                }
                guard sent == 1 else { throw connectionError() }
                let rows = try consume(awaitResult(by: callDeadline()))
                span?.describeRoundTrip(summaries: [summary(of: sql)], rows: rows.count)
                return rows
            } catch let error as PostgresError {
                throw PostgresRedaction.redact(error, parameters: parameters.map { $0?.postgresText })
            }
        }
    }

    /// Runs a script of one or more statements with no parameters (migrations, DDL).
    package func execute(script: String) throws {
        _ = try consume(PQexec(handle, script))
    }

    /// BEGIN; body; COMMIT — or ROLLBACK when the body throws: `pipelinedTransaction` for a body
    /// that sends its statements one by one on the connection, so BEGIN goes at once, alone.
    package func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try pipelinedTransaction { transaction in
            try transaction.begin()
            return try body(self)
        }
    }

    /// Rolls back an open or aborted transaction, ignoring errors (the connection may be gone).
    func rollbackIfNeeded() {
        guard isHealthy, isInTransaction else { return }
        if let result = PQexec(handle, "ROLLBACK") { PQclear(result) }
    }

    // MARK: - Internals shared with the pipeline, COPY and LISTEN code

    func statementName(for sql: String, parameterCount: Int) throws -> String {
        if let known = prepared[sql] { return known.name }
        let name = "ledger_\(prepared.count + 1)"
        guard PQsendPrepare(handle, name, sql, Int32(parameterCount), nil) == 1 else { throw connectionError() }
        try consume(awaitResult(by: callDeadline()))
        prepared[sql] = (name, StatementSummary.of(sql))
        return name
    }

    /// What spans call the statement (`StatementSummary`), worked out once per connection.
    func summary(of sql: String) -> String {
        prepared[sql]?.summary ?? StatementSummary.of(sql)
    }

    /// When a call starting now must have its answer: its own deadline, or the request's if sooner.
    func callDeadline() -> ContinuousClock.Instant? { RequestDeadline.capping(deadline.map { ContinuousClock.now + $0 }) }

    /// The result of the statement sent last, as `PQexec` would return it (its last result, or
    /// its first error), read without blocking past `deadline`.
    func awaitResult(by deadline: ContinuousClock.Instant?) throws -> OpaquePointer? {
        var kept: OpaquePointer?
        while true {
            try awaitInput(by: deadline)
            guard let result = PQgetResult(handle) else { return kept }
            if let earlier = kept {
                // An error stays the answer; otherwise the later result replaces the earlier.
                if PQresultStatus(earlier) == PGRES_FATAL_ERROR {
                    PQclear(result)
                    continue
                }
                PQclear(earlier)
            }
            kept = result
        }
    }

    /// Waits until libpq can hand out the next result without blocking. Past the deadline the
    /// connection is dropped — the server may still be running the statement, or have committed
    /// it — and the call fails as `deadlineExceeded`.
    func awaitInput(by deadline: ContinuousClock.Instant?) throws {
        while PQisBusy(handle) == 1 {
            var timeout: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw deadlineExceeded() }
                let (seconds, attoseconds) = left.components
                timeout = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            }
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, timeout)
            if ready < 0, errno == EINTR { continue }
            guard ready >= 0 else { throw connectionError() }
            if ready == 0 { throw deadlineExceeded() }
            guard PQconsumeInput(handle) == 1 else { throw connectionError() }
        }
    }

    private func deadlineExceeded() -> PostgresError {
        broken = true
        if RequestDeadline.hasPassed { return PostgresError.requestDeadlinePassed() }
        let limit = deadline.map { " within \($0)" } ?? ""
        return PostgresError(
            code: .deadlineExceeded,
            message: "PostgreSQL did not answer\(limit); the connection was dropped, and whether the statement took effect is unknown")
    }

    /// Turns a `PGresult` into rows or a typed error, and frees it.
    @discardableResult
    func consume(_ result: OpaquePointer?) throws -> PostgresRows {
        guard let result else { throw connectionError() }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_SINGLE_TUPLE, PGRES_EMPTY_QUERY, PGRES_COPY_IN, PGRES_PIPELINE_SYNC:
            return Self.rows(of: result)
        case PGRES_PIPELINE_ABORTED:
            throw PostgresError(code: .server, sqlState: "25P02", message: "skipped: an earlier statement in the pipeline failed")
        default:
            throw error(from: result)
        }
    }

    func error(from result: OpaquePointer) -> PostgresError {
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        let message = field(Int32(UInt8(ascii: "M"))) ?? String(cString: PQresultErrorMessage(result))
        guard let sqlState = field(Int32(UInt8(ascii: "C"))) else { return connectionError() }
        if Self.retires(sqlState) { broken = true }
        return PostgresRedaction.redact(
            PostgresError(
                code: .server, sqlState: sqlState, message: message, detail: field(Int32(UInt8(ascii: "D"))),
                hint: field(Int32(UInt8(ascii: "H"))), constraint: field(Int32(UInt8(ascii: "n")))
            ))
    }

    /// Errors after which this connection is worth nothing, though libpq still calls it open:
    /// its server became a standby (25006, read-only: a failover demoted it, or the host list led
    /// to it) or is going away (57P01–57P03, 08xxx). The pool then connects afresh, through the
    /// configured host list, to whichever server is the primary now.
    static func retires(_ sqlState: String) -> Bool {
        sqlState == "25006" || sqlState.hasPrefix("57P") || sqlState.hasPrefix("08")
    }

    /// A failure with no SQLSTATE: the statement may or may not have reached the server, and the
    /// connection is not trusted again.
    func connectionError() -> PostgresError {
        broken = true
        let message = String(cString: PQerrorMessage(handle)).trimmingTrailingWhitespace()
        return PostgresError(code: .connectionLost, message: message)
    }

    static func rows(of result: OpaquePointer) -> PostgresRows {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        var cells: [String?] = []
        cells.reserveCapacity(rowCount * columnCount)
        for row in 0..<Int32(rowCount) {
            for column in 0..<Int32(columnCount) {
                if PQgetisnull(result, row, column) == 1 {
                    cells.append(nil)
                } else {
                    cells.append(String(cString: PQgetvalue(result, row, column)))
                }
            }
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        return PostgresRows(columns: columns, cells: cells, affectedRows: affected)
    }

    func withParameters<R>(
        _ parameters: [(any PostgresBindable)?],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, Int32) -> R
    ) -> R {
        withOptionalCStringArray(parameters.map { $0?.postgresText }) { pointers in
            body(pointers, Int32(parameters.count))
        }
    }
}

// MARK: - C string arrays

func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    withOptionalCStringArray(strings) { pointers in body(pointers!) }
}

/// Keeps C copies of the strings alive for the duration of `body`, NULL-terminated.
func withOptionalCStringArray<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0)! } }
    defer { for copy in copies { free(copy) } }
    let pointers = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
}

extension String {
    func trimmingTrailingWhitespace() -> String {
        var copy = self
        while let last = copy.last, last.isWhitespace { copy.removeLast() }
        return copy
    }
}
