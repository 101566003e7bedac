import ArgumentParser
import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerSchema
import Logging

/// Where the ledger's database is, shared by every command.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("database-url"),
        help: ArgumentHelp(
            "PostgreSQL connection URL or libpq string (env LEDGER_DATABASE_URL). Unset: the embedded cluster.",
            valueName: "url"))
    var databaseURL: String?

    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp(
            "Folder of the embedded cluster (env LEDGER_DATA_DIR, default ./.ledger/postgres).", valueName: "path"))
    var dataDirectory: String?

    @Option(
        name: .customLong("database-role"),
        help: ArgumentHelp(
            "Role the server switches to after connecting (env LEDGER_DATABASE_ROLE, default ledger_app).", valueName: "role"))
    var role: String?

    /// The environment's settings with these flags applied; a variable that does not parse stops
    /// the command with a sentence naming it.
    var settings: Configuration {
        get throws {
            try Configuration.environment.get().applying { settings in
                if let databaseURL { settings.databaseURL = databaseURL }
                if let dataDirectory { settings.dataDirectory = dataDirectory }
                if let role { settings.databaseRole = role }
            }
        }
    }

    /// Opens the configured database, or starts the embedded cluster, and hands back a handle that
    /// knows whether it must stop the cluster again.
    func open(logger: Logger) throws -> Database {
        let settings = try self.settings
        let role = try ApplicationRole(settings.databaseRole)
        if let url = settings.databaseURL, !url.isEmpty {
            logger.info(
                "database: \(PostgresConfiguration(connectionString: url)), from \(databaseURL == nil ? "LEDGER_DATABASE_URL" : "--database-url")"
            )
            return Database(owner: PostgresConfiguration(connectionString: url), role: role, embedded: nil, startedHere: false)
        }
        let folder = try embeddedFolder(settings.dataDirectory, logger: logger)
        let cluster = try EmbeddedPostgres(dataDirectory: folder, options: .init(binaries: settings.postgresBinaries), logger: logger)
        let started = try cluster.start()
        try cluster.createDatabase("ledger")
        logger.notice("database: the embedded PostgreSQL cluster in \(folder.path), because LEDGER_DATABASE_URL is unset")
        return Database(owner: cluster.configuration(database: "ledger"), role: role, embedded: cluster, startedHere: started)
    }

    /// The preamble every command shares: the database opened, the application role made usable
    /// (or the SQL a DBA must run shown), the schema migrated if it is behind — by the owner; a
    /// runtime login is told to run `ledger migrate` — and `body` run, the embedded cluster
    /// stopped after it if this command started it.
    func withDatabase<T>(logger: Logger, _ body: (Database, Migrator) async throws -> T) async throws -> T {
        let opened = try open(logger: logger)
        defer { opened.close(logger: logger) }
        let migrator = try Migrator(migrations: LedgerSchema.migrations(), role: opened.role, logger: logger)
        try whilePostgres("connecting to \(opened.owner)") {
            try migrator.migrateIfNeeded(PostgresConnection.connect(opened.owner))
        }
        return try await body(opened, migrator)
    }

    /// `./.ledger/postgres` unless configured. When we run as root the server runs as the
    /// `postgres` user, which cannot enter folders like /root; then a folder under /var/tmp,
    /// named after this working directory, is used instead and said so.
    private func embeddedFolder(_ configured: String?, logger: Logger) throws -> URL {
        if let explicit = configured, !explicit.isEmpty {
            return URL(fileURLWithPath: explicit)
        }
        let local = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".ledger/postgres")
        guard geteuid() == 0, !Self.postgresUserCanReach(local.deletingLastPathComponent().deletingLastPathComponent()) else {
            return local
        }
        let fallback = URL(fileURLWithPath: "/var/tmp/ledger-\(EmbeddedPostgres.stableDigest(local.path))/postgres")
        logger.notice("the postgres user cannot reach \(local.path); using \(fallback.path) (set LEDGER_DATA_DIR to choose)")
        return fallback
    }

    /// Every folder from / down to `folder` must be searchable by others for the postgres user.
    private static func postgresUserCanReach(_ folder: URL) -> Bool {
        var path = folder.standardizedFileURL
        while path.path != "/" {
            let attributes = try? FileManager.default.attributesOfItem(atPath: path.path)
            let mode = (attributes?[.posixPermissions] as? Int) ?? 0
            if mode & 0o001 == 0 { return false }
            path = path.deletingLastPathComponent()
        }
        return true
    }
}

/// An opened database: the owner's configuration (migrations, verify) and the application role's.
struct Database {
    let owner: PostgresConfiguration
    let role: ApplicationRole
    let embedded: EmbeddedPostgres?
    let startedHere: Bool

    /// The server's connections: `SET ROLE` to the application role, which may not rewrite events.
    var application: PostgresConfiguration {
        var configuration = owner
        configuration.role = role.name
        return configuration
    }

    /// Stops the embedded cluster if this process started it.
    func close(logger: Logger) {
        guard let embedded, startedHere else { return }
        do {
            try embedded.stop()
            logger.info("embedded PostgreSQL stopped")
        } catch {
            logger.error("could not stop embedded PostgreSQL: \(error)")
        }
    }
}
