import EmbeddedPostgres
import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerSchema
import Logging
import Synchronization

/// One throwaway PostgreSQL cluster per test process, started on first use and stopped at exit;
/// every test gets a fresh, migrated database of its own, so tests run in parallel safely.
///
/// Tests connect as operators' roles really are, never as a superuser: each database is owned
/// by `ledger_owner` (no SUPERUSER, no CREATEROLE, migrates it), and servers connect as
/// `ledger_runtime`, a login whose only right is membership of `ledger_app` — the roles a DBA
/// prepares (docs/deployment.md). What only a superuser can do (tamper with history, pause a
/// replica) is done on a `superuser(…)` connection, by name.
package enum TestCluster {
    package static let owner = "ledger_owner"
    package static let runtime = "ledger_runtime"

    /// fsync off: tests never survive a power cut, and this keeps `swift test` quick.
    private static let shared: Result<EmbeddedPostgres, any Error> = Result {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "ledger-test-\(getpid())-\(UUID().uuidString.prefix(8))")
        let cluster = try EmbeddedPostgres(dataDirectory: folder, options: .init(durable: false), logger: Logger(label: "test-cluster"))
        try cluster.start()
        registerCleanup(cluster)
        try prepareRoles(cluster)
        return cluster
    }

    /// The process's shared cluster. Every entry point here is `async` and does its blocking work
    /// (initdb, `pg_ctl`, `CREATE DATABASE`, migrations, all synchronous libpq) through
    /// `offThePool`: tests calling these synchronously held both threads of the cooperative pool
    /// for seconds at a time on a slow machine, and every other test's clients and servers waited.
    package static func cluster() async throws -> EmbeddedPostgres { try await offThePool { try shared.get() } }

    /// What a DBA does once per cluster: the owner login, the application role and a runtime login.
    package static func prepareRoles(_ cluster: EmbeddedPostgres) throws {
        try prepareRoles(admin: cluster.configuration(database: "postgres"))
    }

    /// The same on any server, given a superuser's connection to it.
    package static func prepareRoles(admin: PostgresConfiguration) throws {
        try PostgresConnection.connect(admin).execute(
            script: """
                DO $$
                BEGIN
                    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '\(owner)') THEN
                        CREATE ROLE \(owner) LOGIN CREATEDB NOSUPERUSER NOCREATEROLE;
                    END IF;
                    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ledger_app') THEN CREATE ROLE ledger_app NOLOGIN; END IF;
                    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '\(runtime)') THEN CREATE ROLE \(runtime) LOGIN; END IF;
                EXCEPTION WHEN duplicate_object OR unique_violation THEN
                    NULL;  -- another test process of this cluster made them first
                END
                $$;
                GRANT ledger_app TO \(owner);
                GRANT ledger_app TO \(runtime);
                """)
    }

    /// A new database owned by `ledger_owner`, migrated by it (`migrations`: only the first that
    /// many, to fill a database as an earlier version left it); the owner's configuration.
    package static func database(
        on given: EmbeddedPostgres? = nil, named: String? = nil, migrations: Int? = nil,
        logger: Logger = quietLogger
    ) async throws -> PostgresConfiguration {
        try await offThePool { try createDatabase(on: given, named: named, migrations: migrations, logger: logger) }
    }

    private static func createDatabase(
        on given: EmbeddedPostgres?, named: String?, migrations: Int?, logger: Logger
    ) throws -> PostgresConfiguration {
        let cluster = try given ?? shared.get()
        let name = named ?? "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        let admin = try PostgresConnection.connect(cluster.configuration(database: "postgres"))
        if try admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]).isEmpty {
            try admin.execute(script: "CREATE DATABASE \(name) OWNER \(owner)")
        }
        let configuration = PostgresConfiguration.unixSocket(
            directory: cluster.socketDirectory.path, port: cluster.options.port,
            database: name, user: owner)
        let connection = try PostgresConnection.connect(configuration)
        let all = try LedgerSchema.migrations()
        try Migrator(migrations: Array(all.prefix(migrations ?? all.count)), logger: logger).migrate(connection)
        return configuration
    }

    /// The same database as the server connects to it: `ledger_runtime`, narrowed to the
    /// application role (no DDL, no UPDATE/DELETE on events).
    package static func applicationRole(_ configuration: PostgresConfiguration) -> PostgresConfiguration {
        var copy = login(runtime, configuration)
        copy.role = ApplicationRole.defaultName
        return copy
    }

    /// The same database as the cluster's superuser: for what only a superuser can do.
    package static func superuser(_ configuration: PostgresConfiguration) -> PostgresConfiguration {
        login(EmbeddedPostgres.superuser, configuration)
    }

    private static func login(_ user: String, _ configuration: PostgresConfiguration) -> PostgresConfiguration {
        let parts = PostgresConfiguration.parse(configuration.connectionString)
        return PostgresConfiguration.unixSocket(
            directory: parts["host"] ?? "", port: Int(parts["port"] ?? "") ?? 5432,
            database: parts["dbname"] ?? "", user: user)
    }

    package static let quietLogger: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .error
        return logger
    }()

    /// Starts a separate cluster for a test that stops or crashes its server (fault tests).
    ///
    /// Commits are synchronous here: with `synchronous_commit=off` a crash loses commits that were
    /// already acknowledged (the outage test saw exactly that). fsync stays off — a process crash
    /// keeps whatever reached the operating system; only a power cut would not.
    /// `roles: false` leaves the cluster as initdb made it (for tests that make their own roles).
    /// Room for 1,000 connections: the HTTP tests run some fifty servers on one cluster at once, each
    /// with its pool busy (the projection, change projection and webhook deliveries beside requests);
    /// at 400 a full run now and then found every slot taken.
    package static func privateCluster(roles: Bool = true) async throws -> EmbeddedPostgres {
        try await offThePool { try startPrivateCluster(roles: roles) }
    }

    private static func startPrivateCluster(roles: Bool) throws -> EmbeddedPostgres {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "ledger-fault-\(getpid())-\(UUID().uuidString.prefix(8))")
        let cluster = try EmbeddedPostgres(
            dataDirectory: folder, options: .init(durable: true, settings: ["fsync": "off", "max_connections": "1000"]),
            logger: quietLogger)
        try cluster.start()
        registerCleanup(cluster)
        if roles { try prepareRoles(cluster) }
        return cluster
    }

    /// A primary and a streaming standby of it (`pg_basebackup -R` over loopback), both running:
    /// what reads from replicas are tested on. Commits are synchronous on the primary, as in
    /// `privateCluster`; the standby replays asynchronously, as managed replicas do.
    package static func primaryWithStandby() async throws -> (primary: EmbeddedPostgres, standby: EmbeddedPostgres) {
        try await offThePool { try startPrimaryWithStandby() }
    }

    private static func startPrimaryWithStandby() throws -> (primary: EmbeddedPostgres, standby: EmbeddedPostgres) {
        let tag = "\(getpid())-\(UUID().uuidString.prefix(8))"
        let base = URL(fileURLWithPath: NSTemporaryDirectory())
        // A random loopback port, tried again if another process holds it.
        for attempt in 0..<5 {
            let port = Int.random(in: 20_000..<60_000)
            let primary = try EmbeddedPostgres(
                dataDirectory: base.appendingPathComponent("ledger-primary-\(tag)-\(attempt)"),
                options: .init(durable: true, port: port, settings: ["fsync": "off"], loopback: true),
                logger: quietLogger)
            do {
                try primary.start()
            } catch {
                try? FileManager.default.removeItem(at: primary.dataDirectory)
                continue
            }
            registerCleanup(primary)
            try prepareRoles(primary) // replicated to the standby with everything else
            let standby = try primary.createStandby(
                dataDirectory: base.appendingPathComponent("ledger-standby-\(tag)-\(attempt)"),
                options: .init(durable: true, port: port, settings: ["fsync": "off"]))
            try standby.start()
            registerCleanup(standby)
            return (primary, standby)
        }
        throw EmbeddedPostgresError.commandFailed(command: "pg_ctl start", status: 1, output: "no free loopback port found for the primary")
    }

    private static let toStop = Mutex<[EmbeddedPostgres]>([])

    private static func registerCleanup(_ cluster: EmbeddedPostgres) {
        let first = toStop.withLock { list in
            list.append(cluster)
            return list.count == 1
        }
        if first {
            atexit {
                for cluster in TestCluster.toStop.withLock({ $0 }) {
                    try? cluster.stop(mode: "immediate")
                    try? FileManager.default.removeItem(at: cluster.dataDirectory)
                    try? FileManager.default.removeItem(at: cluster.socketDirectory)
                }
            }
        }
    }
}
