import ArgumentParser
import Foundation
import LedgerHTTP
import Logging

/// `ledger`: the entitlement ledger's one binary.
@main
struct Ledger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract: "The entitlement ledger: what every user of an iOS app has bought, as an append-only log on PostgreSQL.",
        discussion: """
            With no LEDGER_DATABASE_URL, every command uses a private PostgreSQL cluster in ./.ledger/postgres,
            started from this machine's PostgreSQL binaries and stopped on exit.
            """,
        version: BuildInfo.description,
        subcommands: [
            ServeCommand.self, MigrateCommand.self, KeysCommand.self, RebuildCommand.self, VerifyCommand.self, ExportCommand.self,
            ReconcileCommand.self,
            BackfillCommand.self, SecretsCommand.self, EraseCommand.self, RetentionCommand.self, DigestCommand.self, DigestKeyCommand.self,
            AuditCommand.self, DoctorCommand.self,
        ],
        defaultSubcommand: ServeCommand.self
    )
}

/// Logs go to stderr so that stdout stays clean for what a command prints for scripts.
/// Level from `LEDGER_LOG_LEVEL` (trace … critical, default info), text or JSON lines from
/// `LEDGER_LOG_FORMAT`; a line written while a request is handled carries its ids.
enum LoggingSetup {
    static let bootstrapped: Void = {
        // A setting that does not parse is reported by the command, which reads the settings first.
        let settings = try? Configuration.environment.get()
        let level = settings?.logLevel ?? .info
        let format = settings?.logFormat ?? .text
        LoggingSystem.bootstrap(
            { label, provider in
                switch format {
                case .text:
                    var handler = StreamLogHandler.standardError(label: label, metadataProvider: provider)
                    handler.logLevel = level
                    return handler
                case .json:
                    var handler = JSONLogHandler(label: label, metadataProvider: provider)
                    handler.logLevel = level
                    return handler
                }
            }, metadataProvider: RequestLogging.metadataProvider)
    }()

    static func logger(_ label: String) -> Logger {
        _ = bootstrapped
        return Logger(label: label)
    }
}
