import EmbeddedPostgres
import Foundation
import LedgerAccess
import LedgerEventStore
import LedgerPostgres
import LedgerSecrets
import LedgerTestSupport
import Testing

/// The backup recipe of docs/backup.md, run as an operator runs it with Debian's pgBackRest: the
/// write-ahead log archived as it is written, a full backup, an incremental one; the cluster then
/// destroyed and restored to an instant into a fresh folder. What was acknowledged before the
/// instant is there, nothing after it is, the chain verifies, and the secrets key — which the
/// database does not hold — decides whether a server may serve it.
@Suite(.serialized) struct BackupRestoreTests {
    @Test func aRestoreToAnInstantKeepsExactlyWhatWasAcknowledgedBeforeIt() async throws {
        let pgbackrest = "/usr/bin/pgbackrest"
        guard FileManager.default.isExecutableFile(atPath: pgbackrest) else {
            Issue.record("Debian's pgbackrest is not installed (Tools/dev test installs it)")
            return
        }
        let backups = try Backups()
        defer { backups.remove() }
        let cluster = try await backups.startCluster(named: "primary")
        try await backups.run(pgbackrest, "stanza-create", on: cluster)

        let server = try await TestServer.start(cluster: cluster)
        let key = try await server.key([.ingest, .read])
        let database = PostgresConfiguration.parse(server.configuration.connectionString)["dbname"] ?? ""
        func acknowledge(_ ids: [String]) async throws {
            for id in ids {
                let answer = try await FailoverTests.purchase(server, id, key: key)
                #expect(answer.status == 200, "\(id): \(answer.status)")
            }
        }
        let run = UUID().uuidString.prefix(8).lowercased()
        let first = (0..<10).map { "pitr-\(run)-a\($0)" }
        let second = (0..<10).map { "pitr-\(run)-b\($0)" }
        let third = (0..<10).map { "pitr-\(run)-c\($0)" }

        try await acknowledge(first)
        try await backups.run(pgbackrest, "backup", "--type=full", on: cluster)
        let full = try await backups.labels(pgbackrest, on: cluster).last ?? ""
        try await acknowledge(second)
        // The instant: after every answer above was given, before any purchase below is recorded.
        let instant = try await server.pool.query("SELECT clock_timestamp()::text AS t")[0]["t"].string()
        try await acknowledge(third)
        try await backups.run(pgbackrest, "backup", "--type=incr", on: cluster)
        await server.stop()
        try await cluster.stop()
        try FileManager.default.removeItem(at: cluster.dataDirectory)

        // A fresh folder; the repository's configuration now names it.
        let restored = try backups.cluster(named: "restored")
        try backups.write(for: restored)
        // The full backup named, then its log replayed to the instant: pgBackRest would pick the
        // latest set that ended before it, but it dates sets to the second, and this one ended
        // within the second of the instant.
        try await backups.run(
            pgbackrest, "restore", "--set=\(full)", "--type=time", "--target=\(instant)", "--target-action=promote", on: restored)
        try await restored.start()
        backups.started.withLock { $0.append(restored) }
        let owner = PostgresConfiguration.unixSocket(
            directory: restored.socketDirectory.path, port: restored.options.port, database: database, user: TestCluster.owner)
        // The server accepts connections while it still replays the log (read-only); the restore
        // is done when it has promoted itself at the instant.
        let promoted = try await eventually {
            (try? PostgresConnection.connect(owner).query("SELECT pg_is_in_recovery() AS replaying")[0]["replaying"].bool()) == false
        }
        try #require(promoted, "the restored cluster did not finish its recovery and promote")

        // `ledger verify`: the chain of every stream intact after the restore.
        let pool = PostgresPool(configuration: TestCluster.applicationRole(owner), size: 2, logger: TestCluster.quietLogger)
        let report = try await ChainVerifier(pool: pool).verify()
        #expect(report.isIntact, "\(report.breaks)")
        let recorded = Set(
            try await pool.query(
                "SELECT data->>'transactionID' AS id FROM ledger.events WHERE event_type = 'Purchased' AND data->>'transactionID' LIKE $1",
                ["pitr-\(run)-%"]
            ).map { try $0["id"].string() })
        #expect(recorded == Set(first + second), "acknowledged before the instant: all; after it: none")

        // Another secrets key: refused, saying which key the database wants and what to do.
        let application = TestCluster.applicationRole(owner)
        #expect {
            try SecretVault(keyring: Keyring.ephemeral()).prepare(PostgresConnection.connect(application))
        } throws: { error in
            "\(error)".contains("does not open this database's secrets") && "\(error)".contains("LEDGER_SECRETS_KEY")
        }
        await pool.close()

        // The key kept apart from the database: the restored ledger serves what was acknowledged.
        var runtime = application
        runtime.role = "ledger_app"
        let again = try await TestServer.start(configure: false, connecting: (owner, runtime))
        let readKey = try await again.key([.read])
        for id in first + second {
            let state = try await again.send("GET", "/v1/apps/\(TestServer.bundleID)/users/user-\(id)", key: readKey)
            #expect(state.status == 200)
            #expect(Self.owns(state, "pro"), "\(id) owns what it bought")
        }
        for id in third {
            let state = try await again.send("GET", "/v1/apps/\(TestServer.bundleID)/users/user-\(id)", key: readKey)
            #expect(!Self.owns(state, "pro"), "\(id) bought after the instant")
        }
        await again.stop()
    }

    static func owns(_ state: TestServer.Answer, _ entitlement: String) -> Bool {
        ((state.json["entitlements"] as? [String: any Sendable])?[entitlement] as? [String: any Sendable])?["active"] as? Bool == true
    }
}

/// A pgBackRest repository and the clusters archiving into it, in one folder the postgres user
/// may write to: the configuration an operator keeps in /etc/pgbackrest.conf, written to a file.
private struct Backups {
    let folder: URL
    /// Clusters to stop when the test ends, however it ends (the first is stopped by the test).
    let started = Locked<[EmbeddedPostgres]>([])
    let port = Int.random(in: 20_000..<60_000)
    var configuration: URL { folder.appendingPathComponent("pgbackrest.conf") }

    init() throws {
        folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ledger-backups-\(UUID().uuidString.prefix(8))")
        for part in ["repo", "log", "lock", "spool"] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(part), withIntermediateDirectories: true)
        }
    }

    /// Archiving on, every finished segment pushed to the repository: the settings of docs/backup.md.
    func cluster(named name: String) throws -> EmbeddedPostgres {
        try EmbeddedPostgres(
            dataDirectory: folder.appendingPathComponent(name),
            options: .init(
                durable: true, port: port,
                settings: [
                    "fsync": "off", "max_connections": "400", "archive_mode": "on", "wal_level": "replica",
                    "archive_command": "'pgbackrest --config=\(configuration.path) --stanza=ledger archive-push %p'",
                ]),
            logger: TestCluster.quietLogger)
    }

    func startCluster(named name: String) async throws -> EmbeddedPostgres {
        let cluster = try cluster(named: name)
        try write(for: cluster)
        try await offThePool {
            try cluster.start()
            try TestCluster.prepareRoles(cluster)
        }
        started.withLock { $0.append(cluster) }
        return cluster
    }

    /// Every cluster stopped at once (as a crash would) and the folder gone.
    func remove() {
        for cluster in started.withLock({ $0 }) { try? cluster.stop(mode: "immediate") }
        try? FileManager.default.removeItem(at: folder)
    }

    /// The repository's configuration names the cluster it backs up (its folder and socket).
    func write(for cluster: EmbeddedPostgres) throws {
        try FileManager.default.createDirectory(
            at: cluster.dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let text = """
            [global]
            repo1-path=\(folder.path)/repo
            repo1-retention-full=2
            log-path=\(folder.path)/log
            lock-path=\(folder.path)/lock
            spool-path=\(folder.path)/spool
            log-level-console=error
            log-level-file=info
            start-fast=y

            [ledger]
            pg1-path=\(cluster.dataDirectory.path)
            pg1-socket-path=\(cluster.socketDirectory.path)
            pg1-port=\(cluster.options.port)

            """
        try text.write(to: configuration, atomically: true, encoding: .utf8)
        _ = try ChildProcess.run("/bin/chown", ["-R", "postgres:postgres", folder.path])
    }

    /// The repository's backup sets, oldest first (`pgbackrest info`).
    func labels(_ pgbackrest: String, on cluster: EmbeddedPostgres) async throws -> [String] {
        let output = try await run(pgbackrest, "info", "--output=json", on: cluster)
        let stanzas = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]] ?? []
        return (stanzas.first?["backup"] as? [[String: Any]] ?? []).compactMap { $0["label"] as? String }
    }

    /// pgBackRest as the postgres user (as the cluster's own archive command runs it); its output.
    @discardableResult
    func run(_ pgbackrest: String, _ arguments: String..., on cluster: EmbeddedPostgres) async throws -> String {
        let command = [pgbackrest, "--config=\(configuration.path)", "--stanza=ledger"] + arguments
        let outcome = try await offThePool {
            geteuid() == 0
                ? try ChildProcess.run("/usr/sbin/runuser", ["-u", "postgres", "--"] + command)
                : try ChildProcess.run(command[0], Array(command.dropFirst()))
        }
        guard outcome.status == 0 else {
            throw EmbeddedPostgresError.commandFailed(command: "pgbackrest", status: outcome.status, output: outcome.output)
        }
        return outcome.output
    }
}
