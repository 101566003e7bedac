import Foundation
import LedgerPostgres

/// PostgreSQL's own rate for the simplest durable write — pgbench running a one-row INSERT, one
/// transaction each, on the cluster the server uses, in the same run: the baseline issue 16
/// measures ingestion against ("≥ 25 % of pgbench's one-row INSERT at 4 clients").
struct PgbenchBaseline {
    let pgbench: String
    let configuration: PostgresConfiguration
    let folder: URL

    /// pgbench from PATH, or beside Debian's PostgreSQL 15 binaries.
    static func find() -> String? {
        HTTPBenchmark.which("pgbench") ?? ["/usr/lib/postgresql/15/bin/pgbench"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The table and the script, once.
    func prepare(owner: PostgresConnection) throws -> URL {
        try owner.execute(
            script:
                "CREATE TABLE IF NOT EXISTS public.pgbench_one_row (id bigserial PRIMARY KEY, v integer NOT NULL, at timestamptz NOT NULL DEFAULT now())"
        )
        let script = folder.appendingPathComponent("one-row-insert.sql")
        try "\\set v random(1, 1000000)\nINSERT INTO public.pgbench_one_row (v) VALUES (:v);\n".write(
            to: script, atomically: true, encoding: .utf8)
        return script
    }

    /// Transactions per second with `clients` connections over about `seconds`, and the machine's
    /// CPU (ms) per transaction over the run (`MachineCPU`); nil if pgbench failed. A count of
    /// transactions (`-t`), not a duration: `-T` ends on SIGALRM, which a child of this process
    /// inherits blocked (the concurrency runtime's signal mask), so it never ends.
    /// `perSecond`: about how many transactions a second the script runs here, to size the run.
    /// `prepared`: statements prepared once per connection, as the server's are (and as a script
    /// in pipeline mode needs).
    func run(
        script: URL, clients: Int, seconds: Int, perSecond: Int = 6_000, prepared: Bool = false
    ) throws -> (rate: Double, cpu: Double?)? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: pgbench)
        let perClient = max(200, perSecond * seconds / clients) // ~6,000 one-row commits/s on this machine's durable cluster
        process.arguments =
            (prepared ? ["-M", "prepared"] : []) + [
                "-n", "-c", "\(clients)", "-j", "\(min(clients, 2))", "-t", "\(perClient)", "-f", script.path,
                configuration.connectionString,
            ]
        let (pipe, errors) = (Pipe(), Pipe())
        process.standardOutput = pipe
        process.standardError = errors
        let before = MachineCPU.now()
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let cost = before.flatMap { before in MachineCPU.now().map { $0.busy - before.busy } }
        // "tps = 6123.456789 (without initial connection time)"
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }) else {
            let cause = complaint.split(separator: "\n").first { $0.contains("error") } ?? "no rate in its output"
            FileHandle.standardError.write(Data("pgbench (\(script.lastPathComponent)) failed: \(cause)\n".utf8))
            return nil
        }
        return Double(line.dropFirst("tps = ".count).prefix { $0 != " " }).map { ($0, cost.map { $0 / Double(perClient * clients) }) }
    }
}
