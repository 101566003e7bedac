import EmbeddedPostgres
import Foundation
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerSecrets
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `ledger` binary as a newcomer runs it: from an empty folder, on the embedded default.
@Suite(.takingTurns) struct LedgerCommandTests {
    /// The `ledger` executable built beside this test bundle.
    static var ledgerBinary: String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return bundle.appendingPathComponent("ledger").path
    }

    /// The secrets key the tests' servers are given with a database URL (one per test run).
    static let secretsKey = SecretsKey.generate()

    @Test func serveStartsItsOwnPostgresAnswersHealthAndStopsCleanlyOnSIGTERM() async throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ledger-cli-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let dataDir = folder.appendingPathComponent("postgres").path
        let log = folder.appendingPathComponent("serve.log").path
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATA_DIR"] = dataDir
        environment.removeValue(forKey: "LEDGER_DATABASE_URL")
        let served = try await ServeProcess.start(environment: environment, log: log)
        let (pid, port) = (served.pid, served.port)
        let ready = try await poll("http://127.0.0.1:\(port)/readyz", until: 200)
        let health = try await get("http://127.0.0.1:\(port)/healthz")
        #expect(health.0 == 200 && health.1.contains("\"ok\""))
        #expect(
            health.1.contains("\"version\":\"\(BuildInfo.version)\"") && health.1.contains("\"commit\":\"\(BuildInfo.commit)\""),
            "\(health.1)")
        let version = try await ChildProcess.run(Self.ledgerBinary, ["--version"], environment: environment)
        #expect(version.status == 0 && version.output.contains(BuildInfo.description), "\(version.output)")
        #expect(ready?.0 == 200, "readyz: \(String(describing: ready)); log: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        #expect(ready?.1.contains(#""migrations":"ok""#) == true)
        // The embedded database's secrets key was made on first use, readable by its owner only.
        let keyFile = FileManager.default.currentDirectoryPath + "/.ledger/secrets.key"
        let mode = (try? FileManager.default.attributesOfItem(atPath: keyFile))?[.posixPermissions] as? Int
        #expect(mode == 0o600, "\(keyFile): \(String(describing: mode))")

        kill(pid, SIGTERM)
        let status = await ChildProcess.wait(pid)
        #expect(status == 0, "ledger serve exits 0 on SIGTERM")
        #expect(!FileManager.default.fileExists(atPath: dataDir + "/postmaster.pid"), "the embedded cluster was stopped")
        let output = try String(contentsOfFile: log, encoding: .utf8)
        #expect(output.contains("embedded PostgreSQL stopped"))
    }

    @Test func serveStaysUpWhileTheDatabaseIsDownAndRecovers() async throws {
        // Well past the stuck limit, the database still away: its parts wait for it, they are not stuck.
        let served = try await ServedLedger("outage", environment: ["LEDGER_STUCK_AFTER": "2s"])
        defer { served.stop() }
        let (cluster, pid, port) = (served.cluster, served.pid, served.port)

        let url = "http://127.0.0.1:\(port)/readyz"
        #expect(try await poll(url, until: 200)?.0 == 200, "ready at first")
        try await cluster.stop()
        let down = try await poll(url, until: 503)
        #expect(down?.0 == 503, "not ready while the database is down")
        #expect(down?.1.contains("connection_") == true)
        try await Task.sleep(for: .seconds(8)) // the stuck limit and more than one watchdog round
        let waiting = try await get(url)
        #expect(waiting.0 == 503 && waiting.1.contains("failing for") && !waiting.1.contains("stuck"), "\(waiting.1)")
        #expect(ChildProcess.poll(pid) == nil, "the server waits for its database rather than exit")
        #expect(try await get("http://127.0.0.1:\(port)/healthz").0 == 200, "the process itself stays up")
        try await cluster.start()
        #expect(try await poll(url, until: 200)?.0 == 200, "ready again once the database is back")
    }

    @Test func verifyExitsOneAndNamesTheFirstTamperedEvent() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 1, logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        for n in 1...4 { try await store.append([testEvent(data: #"{"n": \#(n)}"#)], to: "user-7") }
        await pool.close()
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = configuration.connectionString

        let clean = try await ChildProcess.run(Self.ledgerBinary, ["verify"], environment: environment)
        #expect(clean.status == 0)
        #expect(clean.output.contains("intact: 4 events in 1 streams"))

        let superuser = try PostgresConnection.connect(TestCluster.superuser(configuration))
        try superuser.execute(
            script: """
                SET session_replication_role = replica;
                UPDATE ledger.events SET data = '{"n": 99}' WHERE stream = 'user-7' AND version = 2;
                """)
        let broken = try await ChildProcess.run(Self.ledgerBinary, ["verify"], environment: environment)
        #expect(broken.status == 1)
        #expect(broken.output.contains("stream user-7 version 2: content changed"), "\(broken.output)")
    }

    @Test func rebuildSwitchesToANewVersionAndReportsProgressLines() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = try await TestCluster.database().connectionString
        let first = try await ChildProcess.run(Self.ledgerBinary, ["rebuild"], environment: environment)
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("rebuilt users v2"))
        #expect(first.output.contains("rebuild: switching"), "plain progress lines when not on a terminal")
        let unknown = try await ChildProcess.run(Self.ledgerBinary, ["rebuild", "nonsense"], environment: environment)
        #expect(unknown.status != 0 && unknown.output.contains("unknown projection"))
    }

    @Test func keysMadeAndRevokedByTheCommandAreInTheAuditLog() async throws {
        var environment = ProcessInfo.processInfo.environment
        let database = try await TestCluster.database()
        environment["LEDGER_DATABASE_URL"] = database.connectionString
        let created = try await ChildProcess.run(
            Self.ledgerBinary, ["keys", "create", "--name", "ops", "--scopes", "admin", "--rate-limit", "50/s"], environment: environment)
        #expect(created.status == 0)
        let secret = created.output.split(separator: "\n").last.map(String.init) ?? ""
        #expect(secret.hasPrefix("lk_"))
        #expect(try await ChildProcess.run(Self.ledgerBinary, ["keys", "list"], environment: environment).output.contains("50/s"))
        #expect(
            try await ChildProcess.run(
                Self.ledgerBinary, ["keys", "create", "--name", "x", "--scopes", "read", "--rate-limit", "0"], environment: environment
            )
            .status
                != 0)
        #expect(try await ChildProcess.run(Self.ledgerBinary, ["keys", "revoke", "ops"], environment: environment).status == 0)
        let rows = try PostgresConnection.connect(TestCluster.superuser(database)).query(
            "SELECT actor, action, target, after::text AS after FROM ledger.audit_log ORDER BY position")
        #expect(try rows.map { try $0["action"].string() } == ["key.created", "key.revoked"])
        #expect(try rows.allSatisfy { try $0["actor"].string().hasPrefix("ledger keys (") && $0["target"].string() == "keys/ops" })
        #expect(try !rows[0]["after"].string().contains(secret), "the key itself is never recorded, only its prefix")
    }

    @Test func migrateIsIdempotentAndHelpIsThere() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = try await TestCluster.database().connectionString
        let again = try await ChildProcess.run(Self.ledgerBinary, ["migrate"], environment: environment)
        #expect(again.status == 0 && again.output.contains("applied 0 migration(s)"))
        let help = try await ChildProcess.run(Self.ledgerBinary, ["help", "serve"])
        #expect(help.status == 0 && help.output.contains("--database-url"))
    }

    @Test func aBadDatabaseURLIsAClearErrorWithoutThePassword() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = "postgresql://ledger:hunter2@127.0.0.1:1/ledger?connect_timeout=2"
        let outcome = try await ChildProcess.run(Self.ledgerBinary, ["migrate"], environment: environment)
        #expect(outcome.status != 0)
        #expect(outcome.output.contains("connection_failed"))
        #expect(!outcome.output.contains("hunter2"))
    }

    /// A setting that does not parse stops the command before it touches anything, naming every
    /// variable at fault; it never quietly becomes the default (a server on another port).
    @Test func aSettingThatDoesNotParseIsAnErrorNamingIt() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = "postgresql://ledger@127.0.0.1:1/ledger?connect_timeout=1"
        environment["LEDGER_PORT"] = "80a"
        environment["LEDGER_APPLE_RECONCILE_INTERVAL"] = "hourly"
        environment["LEDGER_LOG_LEVEL"] = "loud"
        let outcome = try await ChildProcess.run(Self.ledgerBinary, ["serve"], environment: environment)
        #expect(outcome.status != 0)
        #expect(outcome.output.contains("LEDGER_PORT is '80a'"), "\(outcome.output)")
        #expect(outcome.output.contains("LEDGER_APPLE_RECONCILE_INTERVAL is 'hourly'"))
        #expect(outcome.output.contains("LEDGER_LOG_LEVEL is 'loud'"))
        #expect(!outcome.output.contains("connection_failed"), "nothing is tried with settings that are wrong")
    }
}
