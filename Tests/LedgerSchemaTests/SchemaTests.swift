import Foundation
import LedgerPostgres
import LedgerSchema
import Logging
import Testing

/// The migrations the binary carries are the repository's `schema/` folder, numbered without
/// gaps: `ledger migrate` on a machine without the source tree applies exactly what was reviewed.
@Suite struct SchemaTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("schema")

    @Test func theBundledMigrationsAreTheSchemaFolderNumberedWithoutGaps() throws {
        let bundled = try LedgerSchema.migrations()
        #expect(bundled.map(\.version) == Array(1...bundled.count))
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files.count == bundled.count)
        for (file, migration) in zip(files, bundled) {
            let source = try String(contentsOf: Self.folder.appendingPathComponent(file), encoding: .utf8)
            #expect(migration.sql == source, "\(file) differs from what the binary carries")
            #expect(file.hasPrefix(String(format: "%04d_", migration.version)) && file.contains(migration.name))
        }
    }

    @Test func theMigratorAcceptsThemAsOneHistory() throws {
        let migrator = try Migrator(migrations: LedgerSchema.migrations(), logger: Logger(label: "schema-test"))
        #expect(migrator.migrations.map(\.version) == Array(1...migrator.migrations.count))
    }
}
