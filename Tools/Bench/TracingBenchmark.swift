import AppStoreSimulator
import ArgumentParser
import Foundation
import LedgerAccess
import LedgerCore
import LedgerIngestion
import LedgerPostgres
import LedgerServer
import LedgerTracing
import Logging
import OTLPReceiver
import OTel
import ServiceLifecycle
import Tracing

/// `ledger-bench tracing`: what traces cost. Two servers on one durable cluster ingest signed
/// transactions and answer user states: one started with no tracer, as `ledger serve` runs
/// without `OTEL_EXPORTER_OTLP_ENDPOINT` (the baseline, "off"), and one started with a tracer that
/// switches between a no-op, the ledger's head sampler at 1 % over swift-otel, swift-otel's own
/// ratio sampler at 1 %, and every trace — exported by OTLP/HTTP to a receiver on loopback, as
/// to a collector. Every mode runs each round, in a rotated order.
struct TracingBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tracing", abstract: "Ingestion and user state with tracing off, sampled at 1 %, and at 100 %, side by side (wrk).")

    @Option(help: "Seconds per wrk run.") var seconds = 5
    @Option(help: "Rounds; each runs every mode once, in a rotated order.") var rounds = 3
    @Option(help: "Connections for ingestion.") var ingestConnections = 4
    @Option(help: "Connections for user-state reads.") var queryConnections = 8
    @Option(help: "Users bought for before measuring (read by the user-state runs).") var users = 2000
    @Flag(help: "User-state reads only (no ingestion runs between them).") var readsOnly = false
    @Option(help: "Only the modes whose names contain one of these, comma-separated (e.g. to profile one).") var only: String?

    /// "off, again" is the control: the same server as "off", so its difference from it is the
    /// noise. "no-op tracer" is the traced server with nothing recording: its request span a no-op.
    static let modes = ["off", "off, again", "no-op tracer", "sampled 1 %", "1 %, swift-otel's", "sampled 100 %"]
    static let untraced: Set = ["off", "off, again"]

    func run() async throws {
        guard let wrk = HTTPBenchmark.which("wrk") else { throw ValidationError("wrk is not installed (apt-get install wrk)") }
        let (database, owner, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        // Started before any tracer is bootstrapped: the server of a deployment without tracing.
        let plain = try await BenchServer.start(on: database, logger: logger)

        let collector = OTLPReceiver()
        try await collector.start()
        var quiet = Logger(label: "otel")
        quiet.logLevel = .error
        var exporters: [any Service] = []
        var tracers: [String: any LegacyTracer] = ["no-op tracer": NoOpTracer()]
        for (mode, sampler) in [
            ("sampled 1 %", OTel.Configuration.TracesConfiguration.SamplerConfiguration.parentBasedAlwaysOn),
            ("1 %, swift-otel's", .traceIDRatio(ratio: 0.01) ?? .alwaysOn), ("sampled 100 %", .alwaysOn),
        ] {
            var configuration = OTel.Configuration.default
            configuration.serviceName = "ledger-bench"
            configuration.logs.enabled = false
            configuration.metrics.enabled = false
            // Spans dropped when the exporter's queue is full are part of the cost; the warnings are not.
            configuration.diagnosticLogger = .custom(quiet)
            configuration.diagnosticLogLevel = .error
            configuration.traces.sampler = sampler
            configuration.traces.otlpExporter.endpoint = collector.endpoint + "/v1/traces"
            let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
            // As `ledger serve` sets it up for `parentbased_traceidratio`: the ratio applied to roots before swift-otel.
            tracers[mode] = mode == "sampled 1 %" ? HeadSampler(tracer, ratio: 0.01) : tracer
            exporters.append(service)
        }
        let switching = SwitchingTracer(tracers)
        InstrumentationSystem.bootstrap(switching)
        let exporting = ServiceGroup(configuration: .init(services: exporters, logger: quiet))
        let exporterTask = Task { try await exporting.run() }
        let traced = try await BenchServer.start(on: database, authority: plain.authority, logger: logger)
        let (services, authority, base) = (traced.services, traced.authority, traced.base)
        let bundle = "com.example.tracing"
        _ = try await services.directory.configure(bundle, settings: .init(), sharedSecret: nil)
        _ = try await services.directory.define(.init(productID: "pro.monthly", type: .autoRenewable, entitlements: ["pro"]), in: bundle)
        let key = try await services.keys.create(name: "bench", scopes: [.admin], bundleID: nil).secret
        let app = SimulatedApp(authority: authority, bundleID: bundle, environment: "Sandbox")
        let folder = URL(fileURLWithPath: NSTemporaryDirectory() + "ledger-bench-tracing-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // Purchases for a run: as many as 3,000/s could use, each new (a repeat is a cheaper replay).
        let run = UInt32.random(in: 0...UInt32.max)
        func ingestion(_ name: String, count: Int, users prefix: String, once: Bool) throws -> String {
            var bodies = ""
            for index in 0..<count {
                let purchase = SimulatedTransaction(
                    transactionID: "\(name)\(run)-\(index)", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -3600),
                    expiresDate: Date(timeIntervalSinceNow: 30 * 86_400))
                let body = try JSONSerialization.data(withJSONObject: [
                    "user_id": "\(prefix)\(index)", "signed_transaction": try app.signedTransaction(purchase),
                ])
                bodies += String(decoding: body, as: UTF8.self) + "\n"
            }
            return try HTTPBenchmark.ingestionScript(bodies, bundle: bundle, key: key, once: once, in: folder, named: name).path
        }
        // The users the reads ask for, bought first (not measured), then ANALYZE; each server's
        // cache warmed by a read run of its own.
        switching.select("no-op tracer")
        _ = try await HTTPBenchmark.wrk(
            wrk,
            [
                "-t1", "-c\(ingestConnections)", "-d\(max(2, users / 400))s", "-s",
                try ingestion("warm", count: users, users: "reader-", once: true), base,
            ])
        try owner.execute(script: "ANALYZE")
        let query = try HTTPBenchmark.userStateScript(users: users, named: "reader-", bundle: bundle, key: key, in: folder).path
        for server in [plain, traced] {
            _ = try await HTTPBenchmark.wrk(wrk, ["-t2", "-c\(queryConnections)", "-d2s", "-s", query, server.base])
        }

        var ingested: [String: [Double]] = [:], read: [String: [Double]] = [:], readP99: [String: [Double]] = [:]
        var readCPU: [String: [Double]] = [:]
        let picked =
            only.map { list in
                Self.modes.filter { mode in list.split(separator: ",").contains { mode.contains($0.trimmingCharacters(in: .whitespaces)) } }
            } ?? Self.modes
        for round in 0..<rounds {
            for offset in 0..<picked.count {
                let mode = picked[(round + offset) % picked.count]
                let target = Self.untraced.contains(mode) ? plain : traced
                let script =
                    readsOnly
                    ? nil : try ingestion("r\(round)m\(offset)-", count: seconds * 3000, users: "r\(round)m\(offset)-buyer-", once: false)
                switching.select(Self.untraced.contains(mode) ? "no-op tracer" : mode)
                var ingest = HTTPBenchmark.WrkRun(rate: .nan, p50: .nan, p99: .nan, errors: 0)
                if let script {
                    ingest = try await HTTPBenchmark.wrk(
                        wrk, ["-t1", "-c\(ingestConnections)", "-d\(seconds)s", "-s", script, target.base])
                    // The reads start on a quiet server: projections caught up, the spans exported.
                    for _ in 0..<200 where try await target.pool.query(HTTPBenchmark.projectionsBehind)[0]["behind"].bool() {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    try await Task.sleep(for: .seconds(1))
                }
                let cpu = Self.processCPU()
                let reads = try await HTTPBenchmark.wrk(
                    wrk, ["-t2", "-c\(queryConnections)", "-d\(seconds)s", "--latency", "-s", query, target.base])
                let perRead = (Self.processCPU() - cpu) / (reads.rate * Double(seconds)) * 1e6
                switching.select("no-op tracer")
                ingested[mode, default: []].append(ingest.rate)
                read[mode, default: []].append(reads.rate)
                readP99[mode, default: []].append(reads.p99)
                readCPU[mode, default: []].append(perRead)
                if ingest.errors > 0 || reads.errors > 0 {
                    print("  (\(mode), round \(round + 1): \(ingest.errors) + \(reads.errors) non-2xx)")
                }
            }
        }
        await traced.stop()
        await plain.stop()
        await exporting.triggerGracefulShutdown()
        _ = await exporterTask.result
        let spans = collector.spans.count
        await collector.stop()

        print("Tracing on this machine (servers, PostgreSQL, wrk and the OTLP receiver share 2 cores), \(rounds) rounds of \(seconds) s")
        print("  medians; \"vs off\": the median of each round's ratio to that round's \"off\"")
        print(
            "  mode                ingestion (\(ingestConnections) conn.)   vs off     user state (\(queryConnections) conn.)   vs off    p99"
                + "     CPU/read   vs off")
        /// The median of the rounds' ratios of `mode` to "off" in the same round, in percent.
        func paired(_ series: [String: [Double]], _ mode: String) -> Double {
            let (values, off) = (series[mode] ?? [], series["off"] ?? [])
            return median(zip(values, off).map { $0 / $1 * 100 })
        }
        for mode in picked {
            print(
                String(
                    format: "  %@ %@   %6.1f %%   %@   %6.1f %%   %.2f ms   %5.1f µs   %6.1f %%",
                    mode.padding(toLength: 18, withPad: " ", startingAt: 0),
                    format(median(ingested[mode] ?? [])), paired(ingested, mode), format(median(read[mode] ?? [])), paired(read, mode),
                    median(readP99[mode] ?? []), median(readCPU[mode] ?? []), paired(readCPU, mode)))
        }
        print("  each round, user state against the round's own \"off\" (%):")
        for round in 0..<rounds {
            let line = picked.dropFirst().map { mode in
                String(format: "%@ %.1f", mode, (read[mode]?[round] ?? .nan) / (read["off"]?[round] ?? .nan) * 100)
            }
            print("    round \(round + 1): " + line.joined(separator: ", "))
        }
        print("  CPU/read: the bench process's CPU time (both servers, the receiver) during the reads, per read answered")
        print("  spans received by the OTLP receiver: \(spans)")
    }

    /// CPU seconds this process has used, user and system.
    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
