import ArgumentParser
import LedgerPostgres
import LedgerSchema

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the numbered SQL migrations in schema/ that the database lacks.",
        discussion: "Each migration runs in its own transaction under an advisory lock; running it again is a no-op."
    )

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let logger = LoggingSetup.logger("ledger.migrate")
        let opened = try database.open(logger: logger)
        defer { opened.close(logger: logger) }
        let report = try whilePostgres("connecting to \(opened.owner)") {
            try Migrator(migrations: LedgerSchema.migrations(), role: opened.role, logger: logger).migrate(PostgresConnection.connect(opened.owner))
        }
        print("applied \(report.applied.count) migration(s); \(report.alreadyApplied) already applied")
    }
}
