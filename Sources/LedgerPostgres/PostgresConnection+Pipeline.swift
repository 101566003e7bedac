import CLibPQ
import LedgerTracing
import Tracing

#if canImport(Glibc)
    import Glibc
#endif

/// One statement of a pipeline: constant SQL and its parameters.
package struct PipelinedStatement: Sendable {
    package var sql: String
    package var parameters: [(any PostgresBindable)?]
    package init(_ sql: String, _ parameters: [(any PostgresBindable)?] = []) {
        self.sql = sql
        self.parameters = parameters
    }
}

extension PostgresConnection {
    /// Sends every statement before reading any answer (libpq pipeline mode), so N statements cost
    /// one round trip instead of N, and returns the results of `statements` in order. `leading` and
    /// `trailing` are a transaction owner's BEGIN and COMMIT (`PipelinedTransaction`): they ride in
    /// the same round trip, their results are dropped, and a failed statement's `statementIndex`
    /// counts among `statements` alone.
    ///
    /// When one statement fails the server skips the rest up to the sync point, a COMMIT among
    /// them, leaving an open transaction aborted (25P02); it is rolled back here before the first
    /// error is thrown.
    ///
    /// Internal on purpose: outside this module a round trip is a `RoundTrip`, whose authors read
    /// their results by handle, never by position in this array.
    func pipeline(
        _ statements: [PipelinedStatement], leading: [PipelinedStatement] = [], trailing: [PipelinedStatement] = []
    ) throws -> [PostgresRows] {
        let all = leading + statements + trailing
        let results: [PostgresRows]
        if Spans.inTrace {
            let summaries = all.map { summary(of: $0.sql) }
            results = try Spans.child(Self.pipelineName(summaries), kind: .client) { span in
                let results = try sendPipeline(all, callers: leading.count..<(leading.count + statements.count))
                span?.describeRoundTrip(summaries: summaries, rows: results.reduce(0) { $0 + $1.count })
                return results
            }
        } else {
            results = try sendPipeline(all, callers: leading.count..<(leading.count + statements.count))
        }
        return Array(results.dropFirst(leading.count).dropLast(trailing.count))
    }

    /// A pipeline's span is named by the first statement that is not bookkeeping (a BEGIN, a
    /// setting, a lock, the events' traces) and how many came with it: "INSERT ledger.evidence +5".
    static func pipelineName(_ summaries: [String]) -> String {
        let bookkeeping: Set<String> = [
            "BEGIN", "COMMIT", "ROLLBACK", "SET", "SELECT pg_try_advisory_xact_lock", "SELECT pg_advisory_xact_lock",
            "INSERT ledger.event_traces",
        ]
        let first = summaries.first { !bookkeeping.contains($0) && !$0.hasPrefix("SELECT set_config") } ?? summaries.first ?? "pipeline"
        return summaries.count > 1 ? "\(first) +\(summaries.count - 1)" : first
    }

    /// Every statement's results. A failure's `statementIndex` is its place among `callers`, the
    /// statements between an owner's BEGIN and COMMIT; a failed BEGIN or COMMIT has none.
    private func sendPipeline(_ statements: [PipelinedStatement], callers: Range<Int>) throws -> [PostgresRows] {
        // Statements are prepared before entering pipeline mode, where synchronous calls are not allowed.
        let names = try statements.map { try statementName(for: $0.sql, parameterCount: $0.parameters.count) }

        let deadline = callDeadline()
        guard PQenterPipelineMode(handle) == 1 else { throw connectionError() }
        do {
            for (name, statement) in zip(names, statements) {
                try send(prepared: name, statement.parameters)
            }
            guard PQpipelineSync(handle) == 1 else { throw connectionError() }
            try flushWhileReading()
        } catch {
            // A send failed: the connection is unusable for this pipeline; let the pool replace it.
            PQexitPipelineMode(handle)
            throw error
        }

        var results: [PostgresRows] = []
        var firstError: (any Error)?
        for (index, statement) in statements.enumerated() {
            do {
                try awaitInput(by: deadline)
                let rows = try consume(PQgetResult(handle))
                results.append(rows)
            } catch var error as PostgresError {
                error.statementIndex = callers.contains(index) ? index - callers.lowerBound : nil
                error = PostgresRedaction.redact(error, parameters: statement.parameters.map { $0?.postgresText })
                if firstError == nil { firstError = error }
                if !isHealthy { throw error }
            }
            // Each statement's results end with a NULL.
            while let extra = PQgetResult(handle) { PQclear(extra) }
        }
        // The sync point itself answers PGRES_PIPELINE_SYNC.
        try awaitInput(by: deadline)
        if let sync = PQgetResult(handle) { PQclear(sync) }
        PQexitPipelineMode(handle)

        if let firstError {
            rollbackIfNeeded()
            throw firstError
        }
        return results
    }

    private func send(prepared name: String, _ parameters: [(any PostgresBindable)?]) throws {
        let ok = withParameters(parameters) { values, count in
            PQsendQueryPrepared(handle, name, count, values, nil, nil, 0)
        }
        guard ok == 1 else { throw connectionError() }
    }

    /// Flushes the output buffer without risking the classic pipeline deadlock: while the server
    /// is blocked writing answers we have not read, we keep reading them into libpq's buffer.
    private func flushWhileReading() throws {
        guard PQsetnonblocking(handle, 1) == 0 else { throw connectionError() }
        defer { PQsetnonblocking(handle, 0) }
        while true {
            let status = PQflush(handle)
            if status == 0 { return }
            if status < 0 { throw connectionError() }
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN | POLLOUT), revents: 0)
            guard poll(&descriptor, 1, 10_000) >= 0 else { throw connectionError() }
            if descriptor.revents & Int16(POLLIN) != 0, PQconsumeInput(handle) == 0 { throw connectionError() }
        }
    }

    /// `COPY … FROM STDIN` with rows already in COPY text format. Used by the benchmarks as the
    /// baseline for batched appends, and by bulk tooling.
    package func copyIn(_ sql: String, data: [UInt8]) throws {
        let start = PQexec(handle, sql)
        guard let start, PQresultStatus(start) == PGRES_COPY_IN else {
            try consume(start)
            throw PostgresError(code: .protocolViolation, message: "statement did not start COPY FROM STDIN")
        }
        PQclear(start)
        let chunk = 1 << 16
        var offset = 0
        while offset < data.count {
            let end = min(offset + chunk, data.count)
            let ok = data[offset..<end].withUnsafeBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    PQputCopyData(handle, $0, Int32(buffer.count))
                }
            }
            guard ok == 1 else { throw connectionError() }
            offset = end
        }
        guard PQputCopyEnd(handle, nil) == 1 else { throw connectionError() }
        try consume(PQgetResult(handle))
        while let extra = PQgetResult(handle) { PQclear(extra) }
    }
}

extension PostgresConnection {
    /// Runs `COPY … TO STDOUT` and hands each row (text format, newline included) to `row` as it
    /// arrives: a rebuild streams the whole log this way, one statement and no result held in
    /// memory, where a keyset scan would materialise each batch as strings first.
    package func copyOut(_ sql: String, row: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        let start = PQexec(handle, sql)
        guard let start, PQresultStatus(start) == PGRES_COPY_OUT else {
            try consume(start)
            throw PostgresError(code: .protocolViolation, message: "statement did not start COPY TO STDOUT")
        }
        PQclear(start)
        var failure: (any Error)?
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(handle, &buffer, 0)
            if length == -1 { break } // done; the result follows
            guard length >= 0, let buffer else { throw connectionError() }
            defer { PQfreemem(buffer) }
            // After a failure the rest is drained (the connection stays usable), then it is thrown.
            guard failure == nil else { continue }
            do {
                try buffer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
                    try row(UnsafeBufferPointer(start: $0, count: Int(length)))
                }
            } catch {
                failure = error
            }
        }
        try consume(PQgetResult(handle))
        while let extra = PQgetResult(handle) { PQclear(extra) }
        if let failure { throw failure }
    }
}

extension PipelinedStatement {
    /// Inside a transaction: its statements run on generic plans, made once per connection. For
    /// transactions whose statements find rows by `= ANY` of arrays, whose generic plans are the
    /// same index scans as their custom ones — yet PostgreSQL planned them anew on every call
    /// (a custom plan fitted to the array at hand always looks cheaper): at 32 connections the
    /// reads of an ingestion group spent 0.55 ms a group planning, and ran 0.8 → 0.5 ms on their
    /// generic plans. Not for a join with `unnest(…)`, whose generic plan is a hash
    /// join over a whole table.
    package static let genericPlans = PipelinedStatement("SELECT set_config('plan_cache_mode', 'force_generic_plan', true)")
}

extension Span {
    /// What a round trip's span carries: which statements and how many rows, never a parameter.
    func describeRoundTrip(summaries: [String], rows: Int) {
        guard isRecording else { return }
        updateAttributes { attributes in
            attributes["db.system.name"] = "postgresql"
            if summaries.count == 1 {
                attributes["db.query.summary"] = summaries[0]
            } else {
                attributes["db.operation.batch.size"] = summaries.count
                attributes["db.query.summaries"] = summaries
            }
            attributes["db.response.returned_rows"] = rows
        }
    }
}
