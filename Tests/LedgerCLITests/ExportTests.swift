import EmbeddedPostgres
import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres
import LedgerProjections
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Month-end exports on 100,000+ rows: the server streams them in bounded memory (measured on the
/// `ledger serve` process itself), and `ledger export` writes the same rows to a file.
@Suite(.takingTurns) struct ExportTests {
    static let bundle = "com.example.export"

    /// Resident memory of a process, from /proc.
    static func residentKiB(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Downloads an export while sampling the server's resident memory every 5 ms.
    func download(_ url: String, key: String, pid: pid_t) async throws -> (lines: Int, kib: Int, peak: Int) {
        let sampler = Task {
            var peak = 0
            while !Task.isCancelled {
                peak = max(peak, Self.residentKiB(pid))
                try? await Task.sleep(for: .milliseconds(5))
            }
            return peak
        }
        var request = URLRequest(url: URL(string: url)!)
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await URLSession.shared.data(for: request)
        sampler.cancel()
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        return (data.split(separator: UInt8(ascii: "\n")).count, data.count / 1024, await sampler.value)
    }

    @Test func theServerStreamsAHundredThousandRowsInBoundedMemoryAndTheCommandExportsARange() async throws {
        let configuration = try await TestCluster.database()
        let owner = try PostgresConnection.connect(configuration)
        try owner.query(
            """
            INSERT INTO ledger.finance_rows_v1 (bundle_id, original_transaction_id, seq, kind, transaction_id, user_id, product_id, quantity,
                                                price, currency, storefront, environment, occurred_at, recorded_at)
            SELECT $1, 'o' || g, 0, 'purchase', 't' || g, 'user-' || (g % 977), 'coins.100', 1, 990, 'USD', 'USA', 'Production',
                   timestamptz '2026-10-01' + g * interval '20 second', now()
              FROM generate_series(1, 100000) g
            """, [Self.bundle])
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = configuration.connectionString
        environment["LEDGER_SECRETS_KEY"] = LedgerCommandTests.secretsKey
        environment["LEDGER_LOG_LEVEL"] = "warning"
        let created = try await ChildProcess.run(
            LedgerCommandTests.ledgerBinary, ["keys", "create", "--name", "finance", "--scopes", "finance,admin"],
            environment: environment)
        #expect(created.status == 0, "\(created.output)")
        let key = try #require(created.output.split(separator: "\n").last { $0.hasPrefix("lk_") }.map(String.init))

        let log = NSTemporaryDirectory() + "ledger-export-\(UUID().uuidString.prefix(8)).log"
        let served = try await ServeProcess.start(environment: environment, log: log)
        defer { served.stop() }
        let (base, pid) = (served.base, served.pid)
        var configure = URLRequest(url: URL(string: base + "/v1/apps/\(Self.bundle)")!)
        configure.httpMethod = "PUT"
        configure.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        configure.httpBody = Data(#"{"environments": ["Production"]}"#.utf8)
        _ = try await URLSession.shared.data(for: configure)

        // Bounded means: twice the rows, not twice the memory. The first 50,000 rows (one every
        // 20 s from October 1st) end on October 12th; everything is 100,000.
        let baseline = Self.residentKiB(pid)
        // The half twice: a 5 ms sampler on a busy machine can miss a download's peak, and a
        // missed first peak would make the second look like growth.
        let halfURL = base + "/v1/apps/\(Self.bundle)/exports/transactions?format=csv&to=2026-10-12T13:46:41Z"
        let half = try await download(halfURL, key: key, pid: pid)
        let halfAgain = try await download(halfURL, key: key, pid: pid)
        let everything = try await download(base + "/v1/apps/\(Self.bundle)/exports/transactions?format=csv", key: key, pid: pid)
        #expect(half.lines == 50_001 && everything.lines == 100_001, "a header and every row: \(half.lines), \(everything.lines)")
        let first = max(half.peak, halfAgain.peak) - baseline, second = everything.peak - baseline
        print(
            "ledger serve: \(baseline) KiB at rest; +\(first) KiB streaming \(half.kib) KiB, +\(second) KiB streaming \(everything.kib) KiB"
        )
        #expect(second < first + half.kib / 2, "twice the rows must not cost twice the memory (+\(first) KiB, then +\(second) KiB)")
        #expect(second < everything.kib, "the server grew \(second) KiB for a \(everything.kib) KiB export: it held less than the export")

        let file = NSTemporaryDirectory() + "export-\(UUID().uuidString.prefix(8)).jsonl"
        defer { unlink(file) }
        let exported = try await ChildProcess.run(
            LedgerCommandTests.ledgerBinary,
            [
                "export", "transactions", "--app", Self.bundle, "--format", "jsonl",
                "--from", "2026-10-01T00:00:00Z", "--to", "2026-10-03T07:33:21Z", "--out", file,
            ], environment: environment)
        #expect(exported.status == 0, "\(exported.output)")
        #expect(exported.output.contains("exported 10000 rows"), "\(exported.output)")
        let written = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        #expect(written.count == 10_000)
        #expect(written.first?.contains(#""price":"0.990""#) == true && written.first?.contains(#""price_milliunits":990"#) == true)
        let refused = try await ChildProcess.run(
            LedgerCommandTests.ledgerBinary, ["export", "transactions", "--app", Self.bundle, "--from", "yesterday"],
            environment: environment)
        #expect(refused.status != 0 && refused.output.contains("RFC 3339"))
    }

    /// `ledger export currencies` writes the rows the library closes (the HTTP export's), and
    /// refuses a range the ledger refuses in the options' words.
    @Test func theCurrencyLedgerIsExportedFromTheCommandLine() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 1, logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        let bundle = "com.example.currencies"
        let day = Date(timeIntervalSince1970: 1_790_000_000 - 1_790_000_000.truncatingRemainder(dividingBy: 86_400))
        var events: [(LedgerEvent, Date)] = [(.currencyConfigured(CurrencyDefinition(code: "gems", name: "Gems")), day - 86_400)]
        for (n, user) in ["ana", "bo", "cy"].enumerated() {
            events.append(
                (.currencyGranted(CurrencyGrant(grantID: "g-\(user)", userID: user, currency: "gems", amount: 100, reason: "quest")), day))
            events.append(
                (
                    .consumed(Consumption(userID: user, currency: "gems", amount: 10 * Int64(n + 1), idempotencyKey: "s-\(user)")),
                    day + 86_400
                ))
        }
        for (event, at) in events {
            let (stream, new) = try StoredFacts.newEvent(event, bundleID: bundle, id: UUID(), occurredAt: at)
            _ = try await store.append([new], to: stream)
        }
        // Projected: a step that applies nothing may be held back by another test's open transaction.
        for _ in 0..<2_000 {
            if try await pool.withConnection({ try ProjectionRunner.liveStep(on: $0, batchSize: 100) }) > 0 { continue }
            if try await pool.withConnection({ try ProjectionRunner.lag(on: $0) }) == 0 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        let expected = try await CurrencyExport(bundleID: bundle, from: day, to: day + 3 * 86_400).days(on: pool)
        await pool.close()
        #expect(expected.map(\.closing) == [300, 240, 240] && expected.map(\.spent) == [0, 60, 0], "\(expected)")

        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = configuration.connectionString
        environment["LEDGER_SECRETS_KEY"] = LedgerCommandTests.secretsKey
        environment["LEDGER_LOG_LEVEL"] = "warning"
        let file = NSTemporaryDirectory() + "currencies-\(UUID().uuidString.prefix(8)).jsonl"
        defer { unlink(file) }
        let range = ["--from", RFC3339.string(day), "--to", RFC3339.string(day + 3 * 86_400)]
        let exported = try await ChildProcess.run(
            LedgerCommandTests.ledgerBinary, ["export", "currencies", "--app", bundle, "--format", "jsonl", "--out", file] + range,
            environment: environment)
        #expect(exported.status == 0 && exported.output.contains("exported 3 rows of 1 currencies"), "\(exported.output)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == expected.map(CurrencyExport.jsonLine).joined())

        let csv = try await ChildProcess.run(
            LedgerCommandTests.ledgerBinary, ["export", "currencies", "--app", "com.example.nobody"] + range, environment: environment)
        #expect(csv.status == 0 && csv.output.contains(CurrencyExport.csvHeader()), "\(csv.output)")
        #expect(csv.output.contains("no user of com.example.nobody ever held a currency"), "\(csv.output)")
        for (arguments, says) in [
            (["--from", "2026-10-01", "--to", "2025-10-01"], "at most 366 days"),
            (["--from", "yesterday", "--to", "2026-10-01"], "RFC 3339"),
        ] {
            let refused = try await ChildProcess.run(
                LedgerCommandTests.ledgerBinary, ["export", "currencies", "--app", bundle] + arguments, environment: environment)
            #expect(refused.status != 0 && refused.output.contains(says), "\(refused.output)")
        }
    }
}
