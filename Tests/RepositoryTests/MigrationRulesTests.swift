import Foundation
import Testing

/// Migrations are expand/contract: while one runs, and after it, servers of the previous release
/// go on serving on the migrated database (a rolling upgrade, docs/deployment.md). So a migration
/// adds — tables, nullable or defaulted columns, indexes built concurrently — and anything that
/// would break a server of the release before (a drop, a rename, a narrower type, a new NOT NULL)
/// waits for a later release, in a migration that says why no running release still needs it.
@Suite struct MigrationRulesTests {
    /// The first migration written to these rules; those before it were applied by releases that
    /// stopped their servers to migrate, and are history that is never edited.
    static let firstExpandOnly = 31

    /// What breaks a server of the previous release, each with what to do instead.
    static let contractions: [(pattern: String, instead: String)] = [
        (#"\bdrop\s+(table|column|view|function|constraint|type|schema|trigger)\b"#, "keep it until no running release uses it"),
        (#"\brename\b"#, "add the new name beside the old one"),
        (#"\balter\s+column\s+\w+\s+(set\s+data\s+)?type\b"#, "add a column of the new type"),
        (#"\bset\s+not\s+null\b"#, "a CHECK … NOT VALID, validated later"),
        (#"\badd\s+column\s+(if\s+not\s+exists\s+)?\w+\s+[^,;]*\bnot\s+null\b(?![^,;]*\bdefault\b)"#, "a default, or a nullable column"),
    ]

    struct Finding: CustomStringConvertible {
        var file: String
        var problem: String
        var description: String { "\(file): \(problem)" }
    }

    static func findings(in file: String, sql: String) -> [Finding] {
        let declaresContract = sql.split(separator: "\n").contains { $0.hasPrefix("-- contract: ") }
        let outside = sql.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == "-- ledger: outside a transaction" }
        let code = sql.split(separator: "\n").map { line in line.range(of: "--").map { String(line[..<$0.lowerBound]) } ?? String(line) }
            .joined(separator: "\n").lowercased()
        var findings: [Finding] = []
        if !declaresContract {
            for (pattern, instead) in contractions where code.range(of: pattern, options: .regularExpression) != nil {
                findings.append(Finding(file: file, problem: "`\(pattern)` breaks the previous release's servers: \(instead)"))
            }
        }
        // An index on a table that already holds data is built concurrently, outside a transaction;
        // one on a table this migration creates is built at once.
        let created = Set(matches(of: #"create\s+table\s+(?:if\s+not\s+exists\s+)?([\w.]+)"#, in: code))
        for table in matches(
            of: #"create\s+(?:unique\s+)?index\s+(?!concurrently)(?:if\s+not\s+exists\s+)?(?:\w+\s+)?on\s+(?:only\s+)?([\w.]+)"#, in: code)
        where !created.contains(table) {
            findings.append(
                Finding(file: file, problem: "an index on \(table) built without CONCURRENTLY holds its writers until it is built"))
        }
        if code.contains("concurrently") && !outside {
            findings.append(Finding(file: file, problem: "CONCURRENTLY needs the line `-- ledger: outside a transaction`"))
        }
        return findings
    }

    static func matches(of pattern: String, in text: String) -> [String] {
        let expression = try! NSRegularExpression(pattern: pattern)
        return expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            Range(match.range(at: 1), in: text).map { String(text[$0]) }
        }
    }

    @Test func everyMigrationSinceTheRuleOnlyExpandsTheSchema() throws {
        let folder = ArchitectureTests.root.appendingPathComponent("schema")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        let checked = files.filter { (Int($0.prefix(4)) ?? 0) >= Self.firstExpandOnly }
        #expect(!checked.isEmpty)
        for file in checked {
            let sql = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            let findings = Self.findings(in: file, sql: sql)
            #expect(findings.isEmpty, "\(findings)")
        }
    }

    @Test func theRulesFindWhatWouldBreakTheServersOfThePreviousRelease() {
        let breaking = [
            "ALTER TABLE ledger.events DROP COLUMN payload;",
            "ALTER TABLE ledger.apps RENAME COLUMN name TO title;",
            "ALTER TABLE ledger.apps ALTER COLUMN name TYPE varchar(20);",
            "ALTER TABLE ledger.apps ALTER COLUMN name SET NOT NULL;",
            "ALTER TABLE ledger.apps ADD COLUMN region text NOT NULL;",
            "CREATE INDEX apps_name_idx ON ledger.apps (name);",
            "CREATE INDEX CONCURRENTLY apps_name_idx ON ledger.apps (name);",
        ]
        for sql in breaking { #expect(!Self.findings(in: "x.sql", sql: sql).isEmpty, "\(sql)") }
        let expanding = [
            "ALTER TABLE ledger.apps ADD COLUMN region text NOT NULL DEFAULT 'eu';",
            "ALTER TABLE ledger.apps ADD COLUMN region text;",
            "CREATE TABLE ledger.lots (id bigint); CREATE INDEX lots_idx ON ledger.lots (id);",
            "-- ledger: outside a transaction\nCREATE INDEX CONCURRENTLY apps_name_idx ON ledger.apps (name);",
            "-- contract: no release since 0.9 reads it\nALTER TABLE ledger.apps DROP COLUMN legacy;",
        ]
        for sql in expanding { #expect(Self.findings(in: "x.sql", sql: sql).isEmpty, "\(sql)") }
    }
}
