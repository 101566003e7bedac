import AppStoreSimulator
import ArgumentParser
import Foundation
import LedgerAccess
import LedgerCore
import LedgerIngestion
import LedgerPostgres
import LedgerServer
import Logging
import OTLPReceiver
import OTel
import ServiceLifecycle
import Tracing

/// `ledger-bench tracing`: what traces cost. The same server, on one durable cluster, ingests
/// signed transactions and answers user states with tracing off (the no-op tracer, as without
/// `OTEL_EXPORTER_OTLP_ENDPOINT`), sampling 1 % and sampling every trace — exported by OTLP/HTTP to
/// a receiver on loopback, as to a collector — the three in turn, in a rotated order each round.
struct TracingBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tracing", abstract: "Ingestion and user state with tracing off, sampled at 1 %, and at 100 %, side by side (wrk).")

    @Option(help: "Seconds per wrk run.") var seconds = 5
    @Option(help: "Rounds; each runs every mode once, in a rotated order.") var rounds = 3
    @Option(help: "Connections for ingestion.") var ingestConnections = 4
    @Option(help: "Connections for user-state reads.") var queryConnections = 8
    @Option(help: "Users bought for before measuring (read by the user-state runs).") var users = 2000
    @Flag(help: "User-state reads only (no ingestion runs between them).") var readsOnly = false
    @Option(help: "Only these modes, comma-separated (e.g. to profile one): off, off again, 1, 100.") var only: String?

    /// "off, again" is the control: the same as "off", so its difference from it is the noise.
    static let modes = ["off", "off, again", "sampled 1 %", "sampled 100 %"]

    func run() async throws {
        guard let wrk = HTTPBenchmark.which("wrk") else { throw ValidationError("wrk is not installed (apt-get install wrk)") }
        let collector = OTLPReceiver()
        try await collector.start()
        var quiet = Logger(label: "otel")
        quiet.logLevel = .error
        var exporters: [any Service] = []
        var tracers: [String: any LegacyTracer] = ["off": NoOpTracer(), "off, again": NoOpTracer()]
        for (mode, ratio) in [("sampled 1 %", 0.01), ("sampled 100 %", 1.0)] {
            var configuration = OTel.Configuration.default
            configuration.serviceName = "ledger-bench"
            configuration.logs.enabled = false
            configuration.metrics.enabled = false
            // Spans dropped when the exporter's queue is full are part of the cost; the warnings are not.
            configuration.diagnosticLogger = .custom(quiet)
            configuration.traces.sampler = .traceIDRatio(ratio: ratio) ?? .alwaysOn
            configuration.traces.otlpExporter.endpoint = collector.endpoint + "/v1/traces"
            let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
            tracers[mode] = tracer
            exporters.append(service)
        }
        let switching = SwitchingTracer(tracers)
        InstrumentationSystem.bootstrap(switching)
        let exporting = ServiceGroup(configuration: .init(services: exporters, logger: quiet))
        let exporterTask = Task { try await exporting.run() }

        let (database, owner, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        let server = try await BenchServer.start(on: database, logger: logger)
        let (services, authority, base) = (server.services, server.authority, server.base)
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
        // The users the reads ask for, bought first (not measured), then ANALYZE.
        switching.select("off")
        _ = try await HTTPBenchmark.wrk(
            wrk, ["-t1", "-c\(ingestConnections)", "-d\(max(2, users / 400))s", "-s", try ingestion("warm", count: users, users: "reader-", once: true), base])
        try owner.execute(script: "ANALYZE")
        let query = folder.appendingPathComponent("query.lua").path
        try """
        counter = 0
        request = function()
          counter = counter % \(users) + 1
          return wrk.format("GET", "/v1/apps/\(bundle)/users/reader-" .. (counter - 1), {["Authorization"] = "Bearer \(key)"})
        end
        """.write(toFile: query, atomically: true, encoding: .utf8)

        var ingested: [String: [Double]] = [:], read: [String: [Double]] = [:], readP99: [String: [Double]] = [:]
        let picked =
            only.map { list in
                Self.modes.filter { mode in list.split(separator: ",").contains { mode.contains($0.trimmingCharacters(in: .whitespaces)) } }
            } ?? Self.modes
        for round in 0..<rounds {
            for offset in 0..<picked.count {
                let mode = picked[(round + offset) % picked.count]
                let script = readsOnly ? nil : try ingestion("r\(round)m\(offset)-", count: seconds * 3000, users: "r\(round)m\(offset)-buyer-", once: false)
                switching.select(mode)
                var ingest = HTTPBenchmark.WrkRun(rate: .nan, p50: .nan, p99: .nan, errors: 0)
                if let script {
                    ingest = try await HTTPBenchmark.wrk(wrk, ["-t1", "-c\(ingestConnections)", "-d\(seconds)s", "-s", script, base])
                    // The reads start on a quiet server: projections caught up, the spans exported.
                    for _ in 0..<200 where try await server.pool.query(HTTPBenchmark.projectionsBehind)[0]["behind"].bool() {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    try await Task.sleep(for: .seconds(1))
                }
                let reads = try await HTTPBenchmark.wrk(wrk, ["-t2", "-c\(queryConnections)", "-d\(seconds)s", "--latency", "-s", query, base])
                switching.select("off")
                ingested[mode, default: []].append(ingest.rate)
                read[mode, default: []].append(reads.rate)
                readP99[mode, default: []].append(reads.p99)
                if ingest.errors > 0 || reads.errors > 0 { print("  (\(mode), round \(round + 1): \(ingest.errors) + \(reads.errors) non-2xx)") }
            }
        }
        await server.stop()
        await exporting.triggerGracefulShutdown()
        _ = await exporterTask.result
        let spans = collector.spans.count
        await collector.stop()

        print("Tracing on this machine (server, PostgreSQL, wrk and the OTLP receiver share 2 cores), \(rounds) rounds of \(seconds) s, medians")
        print("  mode            ingestion (\(ingestConnections) conn.)   vs off     user state (\(queryConnections) conn.)   vs off    p99")
        let (ingestOff, readOff) = (median(ingested["off"] ?? []), median(read["off"] ?? []))
        for mode in Self.modes {
            let (ingest, reads) = (median(ingested[mode] ?? []), median(read[mode] ?? []))
            print(
                String(
                    format: "  %@ %@   %6.1f %%   %@   %6.1f %%   %.2f ms", mode.padding(toLength: 14, withPad: " ", startingAt: 0), format(ingest),
                    ingest / ingestOff * 100, format(reads),
                    reads / readOff * 100, median(readP99[mode] ?? [])))
        }
        print("  each round, ingestion / user state against the round's own \"off\" (%):")
        for round in 0..<rounds {
            let line = Self.modes.dropFirst().map { mode in
                String(
                    format: "%@ %.1f / %.1f", mode, (ingested[mode]?[round] ?? .nan) / (ingested["off"]?[round] ?? .nan) * 100,
                    (read[mode]?[round] ?? .nan) / (read["off"]?[round] ?? .nan) * 100)
            }
            print("    round \(round + 1): " + line.joined(separator: ", "))
        }
        print("  spans received by the OTLP receiver: \(spans)")
    }
}
