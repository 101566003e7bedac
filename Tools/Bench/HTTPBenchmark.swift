import AppStore
import AppStoreSimulator
import ArgumentParser
import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerEventStore
import LedgerHTTP
import LedgerIngestion
import LedgerPostgres
import LedgerProjections
import LedgerSchema
import LedgerServer
import Logging
import ServiceLifecycle

/// `ledger-bench http`: the real server on a durable cluster, loaded by `wrk` from a second
/// process. Prints user-state queries beside the same server's `/healthz` in the same run, latency
/// at about half of peak load, and ingestion of signed transactions.
struct HTTPBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http",
        abstract: "User-state queries vs /healthz, p50/p99 at about half of peak, and transaction ingestion, with wrk.")

    @Option(help: "Signed transactions prepared for ingestion (each for its own user), shared by the levels.") var transactions = 48_000
    @Option(help: "Seconds per wrk run.") var seconds = 8
    @Option(help: "Rounds of the healthz / user-state pair.") var rounds = 3
    @Option(help: "Connections for the peak runs.") var connections = 32
    @Option(help: "Connections for the ingestion runs, one run each (comma-separated); pgbench runs with as many clients.")
    var ingestConnections = "4,16,32"
    @Flag(help: "Measure ingestion only (e.g. under perf record).") var ingestionOnly = false
    @Option(help: "Transactions ingested before the measured run (then ANALYZE), so the database is not empty.") var warmup = 3000

    func run() async throws {
        guard let wrk = Self.which("wrk") else { throw ValidationError("wrk is not installed (apt-get install wrk)") }
        let (database, owner, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        let server = try await BenchServer.start(on: database, logger: logger)
        let (services, pool, authority, base) = (server.services, server.pool, server.authority, server.base)

        let bundle = "com.example.bench"
        _ = try await services.directory.configure(bundle, settings: .init(), sharedSecret: nil)
        _ = try await services.directory.define(.init(productID: "pro.monthly", type: .autoRenewable, entitlements: ["pro"]), in: bundle)
        _ = try await services.directory.define(.init(productID: "coins.100", type: .consumable, grants: ["coins": 100]), in: bundle)
        let key = try await services.keys.create(name: "bench", scopes: [.admin], bundleID: nil).secret
        let simulated = SimulatedApp(authority: authority, bundleID: bundle, environment: "Sandbox")

        // Ingestion: one wrk thread walks through distinct pre-signed transactions (a repeat would
        // be an idempotent no-op, cheaper than real work, so there are more than one run can use).
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ledger-bench-http-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A ledger in service holds data and PostgreSQL has statistics about it; on empty tables
        // the planner picks sequential scans that stay in every cached plan as the tables grow.
        // So a warm-up ingests its own transactions first (not measured), then ANALYZE.
        let now = Date()
        let run = UInt32.random(in: 0...UInt32.max)
        // `once`: each body presented once, then `/healthz` for the rest of the run — the warm-up,
        // which must not re-present its purchases: every repeat is refused by a group that took its
        // streams to be new, and the guess (`NewStreamGuess`) would pause into the measured run.
        func script(prefix: String, users: String, count: Int, once: Bool = false) throws -> URL {
            var bodies = ""
            for index in 0..<count {
                // Transaction ids unique to this run, so a reused database records new purchases.
                var purchase = SimulatedTransaction(
                    transactionID: "\(prefix)\(run)-\(index)", productID: index % 2 == 0 ? "pro.monthly" : "coins.100",
                    type: index % 2 == 0 ? "Auto-Renewable Subscription" : "Consumable",
                    purchaseDate: now.addingTimeInterval(-3600), expiresDate: index % 2 == 0 ? now.addingTimeInterval(30 * 86_400) : nil)
                // As StoreKit has signed them since iOS 18.4: each carries the app's own purchase.
                purchase.appTransactionID = "\(prefix)\(run)-app-\(index)"

                let body = try JSONSerialization.data(withJSONObject: [
                    "user_id": "\(users)\(index)",
                    "signed_transaction": try simulated.signedTransaction(purchase),
                ])
                bodies += String(decoding: body, as: UTF8.self) + "\n"
            }
            return try Self.ingestionScript(bodies, bundle: bundle, key: key, once: once, in: folder, named: "\(prefix)-ingest")
        }
        let levels = ingestConnections.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard let firstLevel = levels.first else { throw ValidationError("--ingest-connections needs at least one number") }
        if warmup > 0 {
            _ = try await Self.wrk(
                wrk,
                [
                    "-t1", "-c\(firstLevel)", "-d\(max(1, warmup / 500))s", "-s",
                    try script(prefix: "w", users: "wu", count: warmup, once: true).path, base,
                ])
            try owner.execute(script: "ANALYZE")
        }
        // One run per concurrency, each with its own transactions, bought by the same users.
        let share = transactions / levels.count
        // A run's purchases and the transactions that wrote them: a group commits its purchases
        // in one transaction, so their count is the groups' (a purchase recorded alone is its own).
        let recorded = """
            SELECT count(*) AS n, count(DISTINCT tx_id) AS groups, coalesce(max(position), 0) AS last
              FROM ledger.events WHERE event_type = 'Purchased' AND position > $1
            """
        var ingestions: [(connections: Int, run: WrkRun, recorded: Int, group: Double, cpu: MachineCPU?)] = []
        // pgbench's one-row INSERT at each level, on this cluster, between the ingestion runs.
        let pgbench = PgbenchBaseline.find().map { PgbenchBaseline(pgbench: $0, configuration: database.configuration, folder: folder) }
        let pgbenchScript = try pgbench?.prepare(owner: owner)
        var inserts: [Int: (rate: Double, cpu: Double?)] = [:] // the machine's CPU (ms) per INSERT
        var floors: [Int: (group: Int, clients: Int, rate: Double, cpu: Double?)] = [:] // PurchaseRowsFloor's
        var serverFloors: [Int: WrkRun] = [:] // ServerFloor's
        var last = try await pool.query(recorded, [0])[0]["last"].int()
        for (index, level) in levels.enumerated() {
            let ingestScript = try script(prefix: "b\(index)-", users: "u", count: share)
            // A run that used up its transactions would go on with replays (cheaper no-ops): runs
            // are as long as 4,000/s can last, and a run that still ran out is flagged below.
            let ingestSeconds = max(1, min(seconds, share / 4000))
            FileHandle.standardError.write(Data("measuring ingestion for \(ingestSeconds) s\n".utf8)) // e.g. the cue for perf record
            let (run, cpu) = try await MachineCPU.measure {
                try await Self.wrk(wrk, ["-t1", "-c\(level)", "-d\(ingestSeconds)s", "--latency", "-s", ingestScript.path, base])
            }
            let own = try await pool.query(recorded, [last])[0] // the measured run's own
            let (count, groups) = (try own["n"].int(), try own["groups"].int())
            last = try own["last"].int()
            let group = Double(count) / Double(max(groups, 1))
            ingestions.append((level, run, count, group, cpu))
            if let pgbench, let pgbenchScript {
                // The projections' catching up is the ingestion's work, not pgbench's: wait it out.
                for _ in 0..<100 where try await pool.query(Self.projectionsBehind)[0]["behind"].bool() {
                    try await Task.sleep(for: .milliseconds(100))
                }
                inserts[level] = try pgbench.run(script: pgbenchScript, clients: level, seconds: ingestSeconds)
                // The same purchases in flight, grouped as the ingestion grouped them.
                let size = max(1, Int(group.rounded())), clients = max(1, level / size)
                if let floor = try PurchaseRowsFloor(baseline: pgbench).run(
                    group: size, clients: clients, seconds: ingestSeconds, owner: owner)
                {
                    floors[level] = (size, clients, floor.rate, floor.cpu)
                }
                // The same requests, answered by a server that only verifies them and writes their rows.
                let floor = try ServerFloor(
                    services: services, verifier: SignedDataVerifier(roots: [authority.root]), pool: pool,
                    transaction: try PurchaseRowsFloor(baseline: pgbench).prepare(owner: owner), owner: owner)
                serverFloors[level] = try await floor.serving(logger: logger) { floorBase in
                    try await Self.wrk(wrk, ["-t1", "-c\(level)", "-d\(ingestSeconds)s", "--latency", "-s", ingestScript.path, floorBase])
                }
                try owner.execute(script: "DROP SCHEMA IF EXISTS bench_floor CASCADE")
            }
        }
        func ingestionLines() -> [String] {
            ingestions.map { level, run, recorded, group, cpu in
                String(
                    format: "    %2d connections: %@   p50 %.2f ms, p99 %.2f ms, %d purchases recorded (%.1f a group), %d non-2xx%@",
                    level, format(run.rate), run.p50, run.p99, recorded, group, run.errors,
                    recorded >= share ? " (RAN OUT: use --transactions)" : "")
                    + (inserts[level].map { String(format: "   pgbench one-row INSERT %.0f/s: %.1f %%", $0.rate, run.rate / $0.rate * 100) }
                        ?? "   (no pgbench)")
                    + (cpu.map { String(format: "\n        the machine's CPU a purchase %.2f ms", $0.busy / Double(max(recorded, 1))) }
                        ?? "")
                    + (inserts[level]?.cpu.map { String(format: ", an INSERT %.3f ms", $0) } ?? "")
                    + (floors[level].map { floor in
                        String(
                            format: "\n        a purchase's rows alone (pgbench, %d a transaction, %d client%@): %.0f/s", floor.group,
                            floor.clients,
                            floor.clients == 1 ? "" : "s", floor.rate)
                            + (inserts[level].map { String(format: " (%.1f %% of the INSERT)", floor.rate / $0.rate * 100) } ?? "")
                            + (floor.cpu.map { String(format: ", the machine's CPU %.2f ms a purchase", $0) } ?? "")
                    } ?? "")
                    + (serverFloors[level].map { floor in
                        String(format: "\n        a server that only verifies and writes those rows (ServerFloor): %@", format(floor.rate))
                            + (inserts[level].map { String(format: " (%.1f %% of the INSERT)", floor.rate / $0.rate * 100) } ?? "")
                            + String(format: ", p99 %.2f ms, %d non-2xx", floor.p99, floor.errors)
                    } ?? "")
            }
        }
        if ingestionOnly {
            print(
                "ingestion of signed transactions beside pgbench's one-row INSERT with as many clients (issue 16: ≥ 25 % at 4, ≥ 3,000/s at 32)"
            )
            for line in ingestionLines() { print(line) }
            await server.stop()
            return
        }

        // Queries: users that exist (ingested above), cycled.
        let users = max(1, min(ingestions.map(\.recorded).max() ?? 0, share))
        let queryScript = try Self.userStateScript(users: users, named: "u", bundle: bundle, key: key, in: folder)

        var health: [Double] = [], state: [Double] = [], stateP50: [Double] = [], stateP99: [Double] = []
        for _ in 1...rounds {
            health.append(try await Self.wrk(wrk, ["-t2", "-c\(connections)", "-d\(seconds)s", "--latency", base + "/healthz"]).rate)
            let run = try await Self.wrk(wrk, ["-t2", "-c\(connections)", "-d\(seconds)s", "--latency", "-s", queryScript.path, base])
            state.append(run.rate)
            stateP50.append(run.p50)
            stateP99.append(run.p99)
        }
        // Latency at about half of peak: fewer connections (wrk is closed-loop), the first that
        // reaches half of the peak user-state rate.
        let peak = median(state)
        var half: [(connections: Int, run: WrkRun)] = []
        for count in [1, 2, 3, 4, 6, 8] {
            var runs: [WrkRun] = []
            for _ in 1...rounds {
                runs.append(try await Self.wrk(wrk, ["-t1", "-c\(count)", "-d\(seconds)s", "--latency", "-s", queryScript.path, base]))
            }
            let medianRun = WrkRun(
                rate: median(runs.map(\.rate)), p50: median(runs.map(\.p50)), p99: median(runs.map(\.p99)),
                errors: runs.map(\.errors).max() ?? 0)
            half.append((count, medianRun))
            if medianRun.rate >= peak / 2 { break }
        }

        print("HTTP on this machine (server, PostgreSQL and wrk share 2 cores), \(rounds) rounds, medians")
        print("  /healthz (baseline)            \(format(median(health)))   \(connections) connections")
        print(
            "  user state (GET …/users/{id})  \(format(peak))   \(String(format: "%5.1f %%", peak / median(health) * 100)) of /healthz (goal ≥ 50 %)"
                + String(format: "   p50 %.2f ms, p99 %.2f ms at peak", median(stateP50), median(stateP99)))
        for (count, run) in half {
            print(
                String(
                    format: "    %d connection%@: %8.0f/s (%4.1f %% of peak)  p50 %.2f ms  p99 %.2f ms", count, count == 1 ? " " : "s",
                    run.rate, run.rate / peak * 100, run.p50, run.p99))
        }
        if let chosen = half.last { print(String(format: "  p99 at ~half of peak load: %.2f ms (goal < 10 ms)", chosen.run.p99)) }
        print(
            "  ingestion of signed transactions, one run per concurrency, beside pgbench's one-row INSERT (issue 16: ≥ 25 % at 4, ≥ 3,000/s at 32):"
        )
        for line in ingestionLines() { print(line) }
        await server.stop()
    }

    /// A wrk script that reads the states of users `<prefix>0` to `<prefix><users - 1>`, in turn.
    static func userStateScript(users: Int, named prefix: String, bundle: String, key: String, in folder: URL) throws -> URL {
        let file = folder.appendingPathComponent("query.lua")
        try """
        counter = 0
        request = function()
          counter = counter % \(users) + 1
          return wrk.format("GET", "/v1/apps/\(bundle)/users/\(prefix)" .. (counter - 1), {["Authorization"] = "Bearer \(key)"})
        end
        """.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// A wrk script that posts `bodies` (one JSON body a line) to the app's transactions, each in
    /// turn; with `once`, each body once and then `/healthz` for the rest of the run.
    static func ingestionScript(_ bodies: String, bundle: String, key: String, once: Bool, in folder: URL, named name: String) throws -> URL
    {
        let bodiesFile = folder.appendingPathComponent("\(name)-bodies.txt")
        try bodies.write(to: bodiesFile, atomically: true, encoding: .utf8)
        let file = folder.appendingPathComponent("\(name).lua")
        try """
        bodies = {}
        for line in io.lines("\(bodiesFile.path)") do bodies[#bodies + 1] = line end
        counter = 0
        request = function()
          if \(once) and counter >= #bodies then return wrk.format("GET", "/healthz") end
          counter = counter % #bodies + 1
          return wrk.format("POST", "/v1/apps/\(bundle)/transactions", {["Authorization"] = "Bearer \(key)", ["Content-Type"] = "application/json"}, bodies[counter])
        end
        """.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Whether the `users` worker or the change projection has events still to take in.
    static let projectionsBehind = """
        SELECT EXISTS (SELECT 1 FROM ledger.events e, ledger.projection_checkpoints c
                        WHERE (c.name = 'changes' OR (c.name = 'users' AND c.version = (SELECT active_version FROM ledger.projections WHERE name = 'users')))
                          AND (e.tx_id, e.position) > (c.tx_id, c.position)) AS behind
        """

    struct WrkRun {
        var rate: Double
        var p50: Double
        var p99: Double
        var errors: Int
    }

    static func which(_ name: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(folder)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Runs wrk and reads Requests/sec, the 50 % and 99 % latencies (ms) and non-2xx answers.
    ///
    /// Waited for on a thread of its own. The server under test runs in this process, and its
    /// request handlers on the concurrency pool, which has as many threads as the machine has
    /// cores: two here. Waiting for wrk on one of them held one of those two for the whole run,
    /// which `ledger serve` never has to spare. Measured, it made no difference that could be told
    /// from noise (×0.97 at 4 connections over 4 rounds, issue 16's tenth session); a benchmark
    /// should still not hold a thread of the server it measures.
    static func wrk(_ wrk: String, _ arguments: [String]) async throws -> WrkRun {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try runWrk(wrk, arguments) }) }
        }
    }

    private static func runWrk(_ wrk: String, _ arguments: [String]) throws -> WrkRun {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: wrk)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        func value(after label: String) -> String? {
            output.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(label) }
                .map { $0.trimmingCharacters(in: .whitespaces).dropFirst(label.count).trimmingCharacters(in: .whitespaces) }
        }
        func milliseconds(_ text: String?) -> Double {
            guard let text else { return .nan }
            for (unit, factor) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(unit) {
                return (Double(text.dropLast(unit.count)) ?? .nan) * factor
            }
            return .nan
        }
        return WrkRun(
            rate: Double(value(after: "Requests/sec:") ?? "") ?? 0, p50: milliseconds(value(after: "50%")),
            p99: milliseconds(value(after: "99%")), errors: Int(value(after: "Non-2xx or 3xx responses:") ?? "0") ?? 0)
    }
}
