import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerTestSupport
import Testing

/// docs/prometheus/alerts.yml and docs/grafana/ledger.json are what operators load as they are:
/// the rules pass `promtool check rules`, the no-primary alert fires in `promtool test rules` when
/// it should and not before, the dashboard is a Grafana dashboard, and every metric either names
/// is on a real server's /metrics.
@Suite(.takingTurns) struct ObservabilityFilesTests {
    static let promtool = "/usr/bin/promtool"
    static let alerts = APIContractTests.root.appendingPathComponent("docs/prometheus/alerts.yml")
    static let dashboard = APIContractTests.root.appendingPathComponent("docs/grafana/ledger.json")

    @Test func theAlertRulesAreValidAndTheNoPrimaryAlertFiresWhenItShould() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.promtool),
            "promtool is missing: Tools/dev test and .ci/run install Debian's prometheus")
        let checked = try await ChildProcess.run(Self.promtool, ["check", "rules", Self.alerts.path])
        #expect(checked.status == 0 && checked.output.contains("SUCCESS: 9 rules found"), "\(checked.output)")

        // Without a primary for 20 s, then 40 s and on: the alert is pending once past 30 s and
        // fires a minute later, not earlier.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-promtool-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let cases = """
            rule_files:
              - \(Self.alerts.path)
            evaluation_interval: 15s
            tests:
              - interval: 15s
                input_series:
                  - series: 'ledger_database_unavailable_seconds{instance="ledger-1"}'
                    values: '0 0 15 30 45 60 75 90 105 120 135'
                alert_rule_test:
                  - eval_time: 45s
                    alertname: LedgerNoPrimary
                    exp_alerts: []
                  - eval_time: 150s
                    alertname: LedgerNoPrimary
                    exp_alerts:
                      - exp_labels:
                          severity: critical
                          instance: ledger-1
                        exp_annotations:
                          summary: "ledger-1 has had no primary accepting writes for 2m 15s"
                          description: "Purchases are answered 503. A failover should have promoted a standby by now: check the failover manager (pg_autoctl show state) and docs/deployment.md."
            """
        let file = folder.appendingPathComponent("alerts-test.yml")
        try cases.write(to: file, atomically: true, encoding: .utf8)
        let tested = try await ChildProcess.run(Self.promtool, ["test", "rules", file.path])
        #expect(tested.status == 0 && tested.output.contains("SUCCESS"), "\(tested.output)")
    }

    @Test func theDashboardAndTheAlertsNameOnlyMetricsTheServerExposes() async throws {
        let data = try Data(contentsOf: Self.dashboard)
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        #expect(dashboard["title"] as? String == "Entitlement ledger" && !panels.isEmpty)
        var expressions: [String] = []
        for panel in panels {
            let targets = panel["targets"] as? [[String: Any]] ?? []
            #expect(!targets.isEmpty && panel["gridPos"] is [String: Any], "\(panel["title"] ?? "?")")
            expressions += targets.compactMap { $0["expr"] as? String }
        }
        // Every panel's query is PromQL that Prometheus parses: each goes into a recording rule
        // for `promtool check rules`.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-dashboard-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let rules = expressions.enumerated().map { index, expression in
            "      - record: dashboard:query_\(index)\n        expr: '\(expression.replacingOccurrences(of: "'", with: "''"))'"
        }
        let file = folder.appendingPathComponent("dashboard-queries.yml")
        try ("groups:\n  - name: dashboard\n    rules:\n" + rules.joined(separator: "\n") + "\n").write(
            to: file, atomically: true, encoding: .utf8)
        let parsed = try await ChildProcess.run(Self.promtool, ["check", "rules", file.path])
        #expect(parsed.status == 0 && parsed.output.contains("SUCCESS: \(expressions.count) rules found"), "\(parsed.output)")
        expressions.append(try String(contentsOf: Self.alerts, encoding: .utf8))
        var named: Set<String> = []
        for expression in expressions {
            for match in expression.matches(of: /ledger_[a-z_]+/) {
                var name = String(match.0)
                for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) { name.removeLast(suffix.count) }
                named.insert(name)
            }
        }
        #expect(named.count >= 12, "\(named.sorted())")

        // A real server's families.
        let served = try await ServedLedger("metrics")
        defer { served.stop() }
        #expect(try await poll(served.base + "/readyz", until: 200)?.0 == 200)
        let page = try await get(served.base + "/metrics").1
        let families = Set(
            page.split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix("# TYPE ") else { return nil }
                return line.split(separator: " ").dropFirst(2).first.map(String.init)
            })
        #expect(named.subtracting(families).isEmpty, "named but not exposed: \(named.subtracting(families).sorted())")
    }
}
