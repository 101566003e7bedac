import EmbeddedPostgres
import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerSchema
import Logging
import Synchronization

/// One throwaway PostgreSQL cluster per test process, started on first use and stopped at exit;
/// every test gets a fresh, migrated database of its own, so tests run in parallel safely.
public enum TestCluster {
    /// fsync off: tests never survive a power cut, and this keeps `swift test` quick.
    private static let shared: Result<EmbeddedPostgres, any Error> = Result {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ledger-test-\(getpid())-\(UUID().uuidString.prefix(8))")
        let cluster = try EmbeddedPostgres(dataDirectory: folder, options: .init(durable: false), logger: Logger(label: "test-cluster"))
        try cluster.start()
        registerCleanup(cluster)
        return cluster
    }

    public static func cluster() throws -> EmbeddedPostgres { try shared.get() }

    /// A new database, migrated, with a connection configuration for it.
    public static func database(logger: Logger = quietLogger) throws -> PostgresConfiguration {
        let cluster = try shared.get()
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        try cluster.createDatabase(String(name))
        let configuration = cluster.configuration(database: String(name))
        let connection = try PostgresConnection.connect(configuration)
        try Migrator(migrations: LedgerSchema.migrations(), logger: logger).migrate(connection)
        return configuration
    }

    /// The same database as the application role (no UPDATE/DELETE on events).
    public static func applicationRole(_ configuration: PostgresConfiguration) -> PostgresConfiguration {
        var copy = configuration
        copy.role = "ledger_app"
        return copy
    }

    public static let quietLogger: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .error
        return logger
    }()

    /// Starts a separate cluster for a test that stops or crashes its server (fault tests).
    ///
    /// Commits are synchronous here: with `synchronous_commit=off` a crash loses commits that were
    /// already acknowledged (the outage test saw exactly that). fsync stays off — a process crash
    /// keeps whatever reached the operating system; only a power cut would not.
    public static func privateCluster() throws -> EmbeddedPostgres {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ledger-fault-\(getpid())-\(UUID().uuidString.prefix(8))")
        let cluster = try EmbeddedPostgres(dataDirectory: folder, options: .init(durable: true, settings: ["fsync": "off"]), logger: quietLogger)
        try cluster.start()
        registerCleanup(cluster)
        return cluster
    }

    /// A primary and a streaming standby of it (`pg_basebackup -R` over loopback), both running:
    /// what reads from replicas are tested on. Commits are synchronous on the primary, as in
    /// `privateCluster`; the standby replays asynchronously, as managed replicas do.
    public static func primaryWithStandby() throws -> (primary: EmbeddedPostgres, standby: EmbeddedPostgres) {
        let tag = "\(getpid())-\(UUID().uuidString.prefix(8))"
        let base = URL(fileURLWithPath: NSTemporaryDirectory())
        // A random loopback port, tried again if another process holds it.
        for attempt in 0..<5 {
            let port = Int.random(in: 20_000..<60_000)
            let primary = try EmbeddedPostgres(dataDirectory: base.appendingPathComponent("ledger-primary-\(tag)-\(attempt)"),
                                               options: .init(durable: true, port: port, settings: ["fsync": "off"], loopback: true),
                                               logger: quietLogger)
            do {
                try primary.start()
            } catch {
                try? FileManager.default.removeItem(at: primary.dataDirectory)
                continue
            }
            registerCleanup(primary)
            let standby = try primary.createStandby(dataDirectory: base.appendingPathComponent("ledger-standby-\(tag)-\(attempt)"),
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
