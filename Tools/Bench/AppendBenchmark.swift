import ArgumentParser
import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerSchema
import Logging

struct AppendBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "append",
        abstract: "Single-event appends vs. raw one-row INSERTs; batched appends vs. raw COPY.")

    @Option(help: "Measurement rounds; baseline and ours alternate within each round.") var rounds = 5
    @Option(help: "Seconds per single-append measurement.") var seconds = 2.0
    @Option(help: "Concurrent writers for single appends.") var writers = 4
    @Option(help: "Events per batch.") var batchSize = 500
    @Option(help: "Batches per batched measurement.") var batches = 20

    func run() async throws {
        let (database, owner, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        try owner.execute(script: Self.rawTable)
        let settings = try owner.query("SELECT current_setting('fsync') AS f, current_setting('synchronous_commit') AS s")[0]
        print("PostgreSQL fsync=\(try settings["f"].string()) synchronous_commit=\(try settings["s"].string()); \(rounds) rounds, medians")

        let pool = PostgresPool(configuration: database.configuration, size: writers, logger: logger)
        let store = EventStore(pool: pool, logger: logger)
        var results: [String: [Double]] = [:]
        for round in 1...rounds {
            results["insert", default: []].append(try await rawInserts(pool))
            results["insert-shaped", default: []].append(try await shapedInserts(pool))
            results["append", default: []].append(try await singleAppends(store))
            results["copy", default: []].append(try rawCopy(owner, shaped: false))
            results["copy-shaped", default: []].append(try rawCopy(owner, shaped: true))
            results["batch-one-stream", default: []].append(try await batchedAppends(store, oneStream: true))
            results["batch-pipelined", default: []].append(try await batchedAppends(store, oneStream: false))
            FileHandle.standardError.write(Data("round \(round)/\(rounds) done\n".utf8))
        }
        await pool.close()

        let m = results.mapValues(median)
        print("")
        print("single-event appends, \(writers) writers, one transaction each")
        print("  raw INSERT, plain table         \(format(m["insert"]!))")
        print("  raw INSERT, events-shaped table \(format(m["insert-shaped"]!))   (same row, same indexes: the baseline)")
        print(
            "  EventStore.append               \(format(m["append"]!))   \(percent(m["append"]!, of: m["insert-shaped"]!)) of shaped INSERT (goal ≥ 70 %), \(percent(m["append"]!, of: m["insert"]!)) of plain"
        )
        print("batched appends, \(batchSize) events per call, one connection")
        print("  raw COPY, plain table           \(format(m["copy"]!))")
        print("  raw COPY, events-shaped table   \(format(m["copy-shaped"]!))   (same rows, same indexes: the baseline)")
        print(
            "  append 500 to one stream        \(format(m["batch-one-stream"]!))   \(percent(m["batch-one-stream"]!, of: m["copy-shaped"]!)) of shaped COPY (goal ≥ 40 %), \(percent(m["batch-one-stream"]!, of: m["copy"]!)) of plain"
        )
        print(
            "  append(batch:) 500 streams      \(format(m["batch-pipelined"]!))   \(percent(m["batch-pipelined"]!, of: m["copy-shaped"]!)) of shaped COPY (500 appends pipelined in one transaction)"
        )
        print("")
        print(
            "all rounds: "
                + results.sorted { $0.key < $1.key }.map {
                    "\($0.key)=\($0.value.map { String(format: "%.0f", $0) }.joined(separator: ","))"
                }.joined(
                    separator: " "))
    }

    private func percent(_ value: Double, of baseline: Double) -> String { String(format: "%5.1f %%", value / baseline * 100) }

    /// Two baselines. `raw_events`: the same columns with a key and a unique id only, nothing else.
    /// `shaped_events`: a copy of ledger.events with all its indexes and checks (no triggers): a
    /// raw INSERT of the very row an append writes, so the ratio is the cost of the append path itself.
    static let rawTable = """
        SET client_min_messages = warning;
        CREATE SCHEMA IF NOT EXISTS bench;
        DROP TABLE IF EXISTS bench.raw_events;
        CREATE TABLE bench.raw_events (
            position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            stream text NOT NULL, event_id uuid NOT NULL UNIQUE, event_type text NOT NULL,
            data jsonb NOT NULL, metadata jsonb NOT NULL, occurred_at timestamptz NOT NULL
        );
        DROP TABLE IF EXISTS bench.shaped_events;
        CREATE TABLE bench.shaped_events (LIKE ledger.events INCLUDING ALL);
        """

    static let payload = #"{"product_id":"com.example.pro.monthly","transaction_id":"2000000123456789","price":4990,"currency":"EUR"}"#

    /// `writers` tasks, each looping one-row INSERTs (autocommit) for `seconds`.
    private func rawInserts(_ pool: PostgresPool) async throws -> Double {
        try await timedLoop { writer, n in
            try await pool.query(
                "INSERT INTO bench.raw_events (stream, event_id, event_type, data, metadata, occurred_at) VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6)",
                ["w\(writer)-\(n % 50)", UUID(), "PurchaseRecorded", Self.payload, "{}", Date()])
        }
    }

    private func shapedInserts(_ pool: PostgresPool) async throws -> Double {
        let hash = PostgresBytes([UInt8](repeating: 7, count: 32))
        return try await timedLoop { writer, n in
            try await pool.query(
                """
                INSERT INTO bench.shaped_events (stream, version, event_id, event_type, data, metadata, occurred_at, recorded_at, prev_hash, hash)
                VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, now(), $8, $8)
                """,
                ["w\(writer)-\(UUID())", Int64(n + 1), UUID(), "PurchaseRecorded", Self.payload, "{}", Date(), hash])
        }
    }

    private func singleAppends(_ store: EventStore) async throws -> Double {
        try await timedLoop { writer, n in
            try await store.append(
                [NewEvent(id: UUID(), type: "PurchaseRecorded", data: Self.payload, occurredAt: Date())],
                to: "user-\(writer)-\(n % 50)")
        }
    }

    /// Runs `body` from `writers` concurrent tasks for `seconds`; returns calls per second.
    private func timedLoop(_ body: @escaping @Sendable (Int, Int) async throws -> Void) async throws -> Double {
        try await concurrentRate(writers: writers, seconds: seconds, body)
    }

    /// COPY of the same rows an append batch writes, into the plain or the events-shaped table.
    private func rawCopy(_ connection: PostgresConnection, shaped: Bool) throws -> Double {
        let hash = "\\\\x" + String(repeating: "07", count: 32)
        let started = Date()
        for _ in 0..<batches {
            let stream = "copy-\(UUID().uuidString.lowercased())"
            var text = ""
            for n in 0..<batchSize {
                let common = "\(UUID().uuidString.lowercased())\tPurchaseRecorded\t\(Self.payload)\t{}\t\(PostgresTimestamp.format(Date()))"
                text +=
                    shaped
                    ? "\(stream)\t\(n + 1)\t\(common)\t\(PostgresTimestamp.format(Date()))\t\(hash)\t\(hash)\n"
                    : "\(stream)\t\(common)\n"
            }
            try connection.copyIn(
                shaped
                    ? "COPY bench.shaped_events (stream, version, event_id, event_type, data, metadata, occurred_at, recorded_at, prev_hash, hash) FROM STDIN"
                    : "COPY bench.raw_events (stream, event_id, event_type, data, metadata, occurred_at) FROM STDIN",
                data: Array(text.utf8))
        }
        return Double(batches * batchSize) / Date().timeIntervalSince(started)
    }

    private func batchedAppends(_ store: EventStore, oneStream: Bool) async throws -> Double {
        let started = Date()
        for batch in 0..<batches {
            let events = (0..<batchSize).map { _ in NewEvent(id: UUID(), type: "PurchaseRecorded", data: Self.payload, occurredAt: Date()) }
            if oneStream {
                try await store.append(events, to: "import-\(batch % 50)") // streams grow across rounds, like real ones
            } else {
                try await store.append(
                    batch: events.enumerated().map { StreamAppend(stream: "user-\(batch)-\($0.offset)", events: [$0.element]) })
            }
        }
        return Double(batches * batchSize) / Date().timeIntervalSince(started)
    }
}
