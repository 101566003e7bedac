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
            try Migrator(migrations: LedgerSchema.migrations(), role: opened.role, logger: logger).migrate(
                PostgresConnection.connect(opened.owner))
        }
        print("applied \(report.applied.count) migration(s); \(report.alreadyApplied) already applied")
        if !report.ahead.isEmpty {
            print(
                "the database also has migrations \(report.ahead.map(String.init).joined(separator: ", ")) of a later release: "
                    + "this release serves on that schema (a rolling upgrade, or a roll back)")
        }
        // Values stored in clear before sealing existed are sealed now if the key is at hand, or
        // else by the first server that starts with it.
        let settings = try database.settings
        if settings.secretsKey != nil || opened.embedded != nil {
            try SecretsKeys.prepare(try SecretsKeys.keyring(settings, for: opened, logger: logger), on: opened, logger: logger)
        } else {
            print("stored secrets are sealed when `ledger serve` first starts with LEDGER_SECRETS_KEY (or now, by migrating with it set)")
        }
    }
}
