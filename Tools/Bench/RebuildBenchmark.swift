import ArgumentParser
import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerPostgres
import LedgerProjections
import LedgerSchema
import Logging

struct RebuildBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Projection rebuild speed on a generated log, beside a plain keyset scan of the same table; user-state read time.")

    @Option(help: "Events to generate.") var events = 1_000_000
    @Option(help: "Measurement rounds (scan and rebuild alternate).") var rounds = 3
    @Option(help: "Users whose state read is timed with EXPLAIN ANALYZE.") var reads = 200

    func run() async throws {
        let (database, owner, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        let configuration = database.configuration
        let pool = PostgresPool(configuration: configuration, size: 2, logger: logger)
        let store = EventStore(pool: pool, logger: logger)

        // A database named by LEDGER_DATABASE_URL that already holds the log is reused as it is:
        // generating a million events through the real append path takes two minutes.
        let existing = try owner.query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
        let written: Int
        if existing >= events {
            written = existing
            print("reusing the \(existing) events already in the database")
        } else {
            guard existing == 0 else {
                throw ValidationError("the database holds \(existing) events, fewer than --events; use an empty one")
            }
            let started = Date()
            var generator = EventGenerator()
            written = try await generator.write(events: events, to: store) { done in
                if done % 100_000 < 2_000 { FileHandle.standardError.write(Data("generated \(done) events\n".utf8)) }
            }
            try owner.execute(script: "VACUUM ANALYZE ledger.events")
            print(
                String(
                    format: "generated %d events in %.0f s through EventStore.append(batch:)", written, Date().timeIntervalSince(started)))
        }

        var scans: [Double] = []
        var rebuilds: [Double] = []
        var totals: [Double] = []
        var withoutMetrics: [Double] = []
        for round in 1...rounds {
            // The same rebuild without the finance metrics, alternated with it: what they add.
            let bare = try ProjectionRebuilder(computingMetrics: false, logger: logger) { try PostgresConnection.connect(configuration) }
                .rebuild()
            withoutMetrics.append(bare.totalSeconds)
            scans.append(try keysetScan(owner))
            let phases = PhaseClock()
            let report = try ProjectionRebuilder(logger: logger) { try PostgresConnection.connect(configuration) }.rebuild(
                progress: phases.record)
            FileHandle.standardError.write(Data("  phases: \(phases.summary(total: report.totalSeconds))\n".utf8))
            rebuilds.append(Double(report.events) / report.replaySeconds)
            totals.append(Double(report.events) / report.totalSeconds)
            FileHandle.standardError.write(
                Data(
                    "round \(round)/\(rounds): scan \(Int(scans.last!))/s, rebuild replay \(Int(rebuilds.last!))/s, end to end \(Int(totals.last!))/s, users \(report.users), events replayed \(report.replayed) of \(report.events)\n"
                        .utf8))
        }
        let readTimes = try userReadTimes(owner)
        await pool.close()

        print("")
        print("rebuild of the users projection, \(written) events, \(rounds) rounds, medians")
        print("  keyset scan (EventStore.readAll, baseline) \(format(median(scans)))")
        print(
            "  rebuild: replay into memory               \(format(median(rebuilds)))   \(String(format: "%5.1f %%", median(rebuilds) / median(scans) * 100)) of scan"
        )
        print(
            "  rebuild: end to end (replay, COPY, switch) \(format(median(totals)))   \(String(format: "%5.1f %%", median(totals) / median(scans) * 100)) of scan (goal ≥ 100,000/s and ≥ 30 %)"
        )
        print("  (rates are log events per second; the server leaves out the evidence-only types the projection ignores)")
        let withMetrics = totals.map { Double(written) / $0 }
        print(
            String(
                format: "  finance metrics: rebuild %.2f s with them, %.2f s without (median): +%.1f %% (goal < 25 %%); rounds without: %@",
                median(withMetrics), median(withoutMetrics), (median(withMetrics) / median(withoutMetrics) - 1) * 100,
                withoutMetrics.map { String(format: "%.2f", $0) }.joined(separator: " / ")))
        print(
            String(
                format: "user state read at the database (EXPLAIN ANALYZE, %d users): median %.3f ms, p99 %.3f ms (goal < 1 ms)",
                readTimes.count, median(readTimes), readTimes.sorted()[Int(Double(readTimes.count - 1) * 0.99)]))
        print(
            "all rounds: scan=\(scans.map { String(format: "%.0f", $0) }) replay=\(rebuilds.map { String(format: "%.0f", $0) }) total=\(totals.map { String(format: "%.0f", $0) })"
        )
    }

    /// The same reads the rebuild makes, decoded into RecordedEvent, and nothing else.
    private func keysetScan(_ connection: PostgresConnection) throws -> Double {
        let began = Date()
        var position = LogPosition.start
        var total = 0
        while true {
            let batch = try EventStore.readAll(on: connection, after: position, limit: 10_000)
            guard let last = batch.last else { break }
            total += batch.count
            position = last.position
        }
        return Double(total) / Date().timeIntervalSince(began)
    }

    private func userReadTimes(_ connection: PostgresConnection) throws -> [Double] {
        var times: [Double] = []
        for _ in 0..<reads {
            let user = "user-\(Int.random(in: 1...max(1, events / 40)))"
            let plan = try connection.query(
                """
                EXPLAIN (ANALYZE, FORMAT JSON) SELECT timeline FROM ledger.user_timelines WHERE bundle_id = $1 AND user_id = $2
                """, ["com.example.bench", user])
            let json = try JSONSerialization.jsonObject(with: Data(try plan[0][0].string().utf8)) as! [[String: Any]]
            times.append((json[0]["Execution Time"] as? Double ?? 0) + (json[0]["Planning Time"] as? Double ?? 0))
        }
        return times
    }
}

/// When each rebuild phase began, and this process's CPU time then, to say where the time goes
/// (CPU seconds above wall seconds: more than one core busy; below: waiting on PostgreSQL).
final class PhaseClock: @unchecked Sendable {
    private var starts: [(name: String, wall: Double, cpu: Double)] = []
    func record(_ progress: RebuildProgress) {
        if starts.last?.name != progress.phase.rawValue {
            starts.append((progress.phase.rawValue, progress.elapsed.seconds, Self.cpuSeconds()))
        }
    }
    func summary(total: Double) -> String {
        let ends = starts.dropFirst().map { ($0.wall, $0.cpu) } + [(total, Self.cpuSeconds())]
        return zip(starts, ends).map { start, end in
            String(format: "%@ %.1f s (cpu %.1f s)", start.name, end.0 - start.wall, end.1 - start.cpu)
        }.joined(separator: ", ")
    }
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
