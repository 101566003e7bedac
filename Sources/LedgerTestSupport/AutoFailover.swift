import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerSchema
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// A pg_auto_failover formation, run as operators run it: a monitor and two PostgreSQL nodes,
/// each under its own `pg_autoctl` keeper (Debian's `postgresql-15-auto-failover`), on loopback
/// ports. The monitor decides failovers and switchovers; the tests kill, restart and ask.
///
/// The monitor's health checks are made quicker than their defaults (a check a second, a node
/// unhealthy after two), so a failover takes seconds rather than half a minute; everything else
/// is pg_auto_failover's own behaviour, synchronous replication between the two nodes included.
package final class AutoFailover: @unchecked Sendable {
    package struct Node: Sendable {
        package let name: String
        package let port: Int
        package let dataDirectory: URL
    }

    package let monitorPort: Int
    package let nodes: [Node]
    let root: URL
    let monitorDirectory: URL
    let logger: Logger
    private static let autoctl = "/usr/bin/pg_autoctl"

    package static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: autoctl) }

    /// Creates and starts the monitor and two nodes; returns once one is primary and the other
    /// secondary, with the ledger's roles prepared (a DBA's work) on the primary.
    package static func start(logger: Logger = TestCluster.quietLogger) async throws -> AutoFailover {
        try await offThePool { try startBlocking(logger: logger) }
    }

    private static func startBlocking(logger: Logger) throws -> AutoFailover {
        // Once in a CI run the new standby stayed in `catchingup` for the whole wait, the primary in
        // `wait_primary`: the monitor never moved it on. The formation is the test's ground, not
        // what it tests, so a second one is made on other ports, and what the monitor saw of the
        // first is logged; a second failure fails the test with that account.
        do {
            return try formed(logger: logger)
        } catch let first as AutoFailoverError {
            logger.error("pg_auto_failover did not form; a new formation is made", metadata: ["error": "\(first)"])
            return try formed(logger: logger)
        }
    }

    /// A monitor and two nodes on ports below Linux's range for outgoing connections (32768 and
    /// up), so no connection of the suite's own holds one of them.
    private static func formed(logger: Logger) throws -> AutoFailover {
        let formation = try AutoFailover(basePort: Int.random(in: 20_000..<32_000), logger: logger)
        do {
            try formation.createMonitor()
            let (first, second) = (formation.nodes[0], formation.nodes[1])
            try formation.createNode(first)
            // The second node is made from the first's data: it must find a primary to copy.
            try formation.waitForStatesBlocking([first.name: "single"], within: .seconds(90))
            try formation.createNode(second)
            try formation.waitForStatesBlocking([first.name: "primary", second.name: "secondary"], within: .seconds(90))
            try TestCluster.prepareRoles(admin: formation.admin(port: formation.nodes[0].port))
            return formation
        } catch let error as AutoFailoverError {
            let account = AutoFailoverError.notFormed(error, monitor: formation.monitorView(), logs: formation.logTails())
            formation.stop()
            throw account
        }
    }

    /// Each node as the monitor sees it: reported and goal state, health (1 good, 0 bad, -1 not
    /// checked yet), the WAL position reported.
    private func monitorView() -> String {
        guard let connection = try? PostgresConnection.connect(admin(port: monitorPort, database: "pg_auto_failover")),
            let rows = try? connection.query(
                "SELECT nodename, reportedstate::text AS reported, goalstate::text AS goal, health::text AS health, reportedlsn::text AS lsn"
                    + " FROM pgautofailover.node ORDER BY nodeid")
        else { return "the monitor did not answer" }
        return rows.map { row in
            ["nodename", "reported", "goal", "health", "lsn"].map { "\($0)=\(row[$0].optionalString() ?? "-")" }
                .joined(separator: " ")
        }.joined(separator: "; ")
    }

    /// The last lines each keeper wrote.
    private func logTails(lines: Int = 6) -> String {
        (["monitor.log"] + nodes.map { "\($0.name).log" })
            .map { name in
                let text = (try? String(contentsOf: root.appendingPathComponent(name), encoding: .utf8)) ?? ""
                return "\(name): " + text.split(separator: "\n").suffix(lines).joined(separator: " | ")
            }.joined(separator: "\n")
    }

    private init(basePort: Int, logger: Logger) throws {
        root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ledger-paf-\(getpid())-\(UUID().uuidString.prefix(8))")
        monitorPort = basePort
        monitorDirectory = root.appendingPathComponent("monitor")
        let root = self.root
        nodes = (1...2).map { Node(name: "node_\($0)", port: basePort + $0, dataDirectory: root.appendingPathComponent("node\($0)")) }
        self.logger = logger
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        if geteuid() == 0 { try run("/bin/chown", ["postgres:postgres", root.path], asPostgres: false) }
        Self.started.withLock { $0.append(self) }
        Self.cleanup
    }

    /// A superuser's connection settings for the server on `port`.
    package func admin(port: Int, database: String = "postgres") -> PostgresConfiguration {
        PostgresConfiguration(connectionString: "host=localhost port=\(port) dbname='\(database)' user=postgres", connectTimeoutSeconds: 2)
    }

    /// Both nodes in one libpq host list: what servers are given, wanting the primary
    /// (`read-write`) or, for reads, a standby when there is one (`prefer-standby`).
    package func hostList(
        database: String, user: String, sessions: String = "read-write", deadline: Duration? = nil
    ) -> PostgresConfiguration {
        PostgresConfiguration(
            connectionString: "host=localhost,localhost port=\(nodes.map { String($0.port) }.joined(separator: ",")) dbname='\(database)' "
                + "user='\(user)' target_session_attrs=\(sessions)",
            connectTimeoutSeconds: 2, deadline: deadline)
    }

    /// A migrated database owned by the ledger's owner login, created on the primary.
    package func database() async throws -> (owner: PostgresConfiguration, name: String) {
        try await offThePool { try self.databaseBlocking() }
    }

    private func databaseBlocking() throws -> (owner: PostgresConfiguration, name: String) {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        let primary = try primaryNode()
        try PostgresConnection.connect(admin(port: primary.port)).execute(script: "CREATE DATABASE \(name) OWNER \(TestCluster.owner)")
        let owner = hostList(database: String(name), user: TestCluster.owner)
        try Migrator(migrations: LedgerSchema.migrations(), logger: logger).migrate(PostgresConnection.connect(owner))
        return (owner, String(name))
    }

    // MARK: - What the monitor says

    /// Each node's state as the monitor last heard it (`reportedstate`).
    package func states() throws -> [String: String] {
        let rows = try PostgresConnection.connect(admin(port: monitorPort, database: "pg_auto_failover"))
            .query("SELECT nodename, reportedstate::text AS state FROM pgautofailover.node")
        return try Dictionary(uniqueKeysWithValues: rows.map { (try $0["nodename"].string(), try $0["state"].string()) })
    }

    package func primaryNode() throws -> Node {
        let states = try states()
        guard let node = nodes.first(where: { ["single", "primary", "wait_primary"].contains(states[$0.name]) }) else {
            throw AutoFailoverError.noPrimary(states)
        }
        return node
    }

    /// Waits until every named node reports the state given.
    package func waitForStates(_ wanted: [String: String], within limit: Duration) async throws {
        try await offThePool { try self.waitForStatesBlocking(wanted, within: limit) }
    }

    private func waitForStatesBlocking(_ wanted: [String: String], within limit: Duration) throws {
        let start = ContinuousClock.now
        var last: [String: String] = [:]
        while ContinuousClock.now - start < limit {
            last = (try? states()) ?? [:]
            if wanted.allSatisfy({ last[$0.key] == $0.value }) { return }
            usleep(200_000)
        }
        throw AutoFailoverError.timedOut(wanted: wanted, last: last)
    }

    /// Waits until the monitor has made `node` the primary (`wait_primary` or `primary`: its
    /// failover done) and the node accepts writes, and returns when it first did (polled every
    /// 20 ms). A node promoted but still in `stop_replication` takes no commit yet.
    package func waitUntilWritable(_ node: Node, within limit: Duration) async throws -> ContinuousClock.Instant {
        try await offThePool { try self.waitUntilWritableBlocking(node, within: limit) }
    }

    private func waitUntilWritableBlocking(_ node: Node, within limit: Duration) throws -> ContinuousClock.Instant {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            if ["wait_primary", "primary"].contains((try? states())?[node.name]),
                let connection = try? PostgresConnection.connect(admin(port: node.port)),
                let rows = try? connection.query(
                    "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off' AS writable"),
                rows.first?["writable"].optionalString() == "t"
            {
                return ContinuousClock.now
            }
            usleep(20_000)
        }
        throw AutoFailoverError.timedOut(wanted: [node.name: "writable"], last: (try? states()) ?? [:])
    }

    // MARK: - Faults and operations

    /// The node's machine dies: its keeper, the keeper's services and its postmaster, every
    /// process of the node, killed with SIGKILL at once. (Killing the keeper alone is not a
    /// death: its postgres service, renamed and so found only as its child, started the server
    /// again — a second primary the monitor never heard of.)
    package func kill(_ node: Node) throws {
        killEverything(of: node.dataDirectory)
    }

    /// Starts the node's keeper again: a node that was primary rejoins as a secondary.
    package func restart(_ node: Node) throws {
        try keep(node.dataDirectory, log: "\(node.name).log")
    }

    /// A planned switchover, asked of the monitor (which waits for it to complete).
    package func switchover() async throws {
        try await offThePool {
            try self.run(Self.autoctl, ["perform", "switchover", "--pgdata", self.monitorDirectory.path, "--wait", "60"])
        }
    }

    /// Stops every keeper and server of the formation, and removes its folders.
    package func stop() {
        for directory in [monitorDirectory] + nodes.map(\.dataDirectory) { killEverything(of: directory) }
        try? FileManager.default.removeItem(at: root)
    }

    private func killEverything(of directory: URL) {
        var doomed = keepers.withLock { $0[directory.path] ?? [] }
        if let pid = EmbeddedPostgres.postmasterPID(in: directory) { doomed.append(pid) }
        let all = Self.descendants(of: doomed)
        for pid in all { Glibc.kill(pid, SIGSTOP) } // none can start another while the rest die
        for pid in all { Glibc.kill(pid, SIGKILL) }
        keepers.withLock { $0[directory.path] = nil }
    }

    /// `roots` and every process below them, from `/proc/<pid>/stat` (the parent is its fourth field).
    static func descendants(of roots: [pid_t]) -> [pid_t] {
        var children: [pid_t: [pid_t]] = [:]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = pid_t(fields[1]) { children[parent, default: []].append(pid) }
        }
        var found: [pid_t] = []
        var queue = roots
        while let pid = queue.popLast() {
            guard !found.contains(pid) else { continue }
            found.append(pid)
            queue += children[pid] ?? []
        }
        return found
    }

    // MARK: - Making it

    private func createMonitor() throws {
        try run(
            Self.autoctl,
            [
                "create", "monitor", "--pgdata", monitorDirectory.path, "--pgport", String(monitorPort), "--auth", "trust", "--no-ssl",
                "--hostname", "localhost", "--pgctl", try pgCtl(),
            ])
        try keep(monitorDirectory, log: "monitor.log")
        let settings = [
            "health_check_period": 1000, "health_check_timeout": 1000, "health_check_max_retries": 1, "health_check_retry_delay": 500,
            "node_considered_unhealthy_timeout": 2000,
        ]
        let start = ContinuousClock.now
        while true {
            do {
                let monitor = try PostgresConnection.connect(admin(port: monitorPort, database: "pg_auto_failover"))
                for (name, value) in settings.sorted(by: { $0.key < $1.key }) {
                    try monitor.execute(script: "ALTER SYSTEM SET pgautofailover.\(name) = \(value)")
                }
                try monitor.query("SELECT pg_reload_conf()")
                return
            } catch  where ContinuousClock.now - start < .seconds(30) {
                usleep(200_000)
            }
        }
    }

    private func createNode(_ node: Node) throws {
        try keep(
            node.dataDirectory, log: "\(node.name).log",
            create: [
                "create", "postgres", "--pgdata", node.dataDirectory.path, "--pgport", String(node.port), "--auth", "trust", "--no-ssl",
                "--hostname", "localhost", "--name", node.name, "--pgctl", try pgCtl(),
                "--monitor", "postgres://autoctl_node@localhost:\(monitorPort)/pg_auto_failover?sslmode=disable",
            ])
    }

    /// Runs `pg_autoctl run` (or `create … --run`) for `directory` in the background, as a
    /// keeper runs on a node: it starts and watches the server and carries out the monitor's
    /// decisions.
    private func keep(_ directory: URL, log: String, create: [String]? = nil) throws {
        let arguments = create.map { $0 + ["--run"] } ?? ["run", "--pgdata", directory.path]
        let output = root.appendingPathComponent(log).path
        let pid =
            geteuid() == 0
            ? try ChildProcess.spawn("/usr/sbin/runuser", ["-u", "postgres", "--", Self.autoctl] + arguments, outputPath: output)
            : try ChildProcess.spawn(Self.autoctl, arguments, outputPath: output)
        keepers.withLock { $0[directory.path, default: []].append(pid) }
    }

    /// The keeper processes started here, by data folder.
    private let keepers = Locked<[String: [pid_t]]>([:])

    private func pgCtl() throws -> String {
        try PostgresBinaries.locate(configured: nil).pgCtl.path
    }

    @discardableResult
    fileprivate func run(_ program: String, _ arguments: [String], asPostgres: Bool = true) throws -> String {
        let outcome =
            asPostgres && geteuid() == 0
            ? try ChildProcess.run("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments)
            : try ChildProcess.run(program, arguments)
        guard outcome.status == 0 else {
            throw EmbeddedPostgresError.commandFailed(
                command: (program as NSString).lastPathComponent + " " + (arguments.first ?? ""), status: outcome.status,
                output: outcome.output)
        }
        return outcome.output
    }

    /// Formations still running when the test process exits are stopped then.
    private static let started = Locked<[AutoFailover]>([])
    private static let cleanup: Void = { atexit { for formation in AutoFailover.started.withLock({ $0 }) { formation.stop() } } }()
}

package enum AutoFailoverError: Error, CustomStringConvertible {
    case noPrimary([String: String])
    case timedOut(wanted: [String: String], last: [String: String])
    indirect case notFormed(AutoFailoverError, monitor: String, logs: String)

    package var description: String {
        switch self {
        case .noPrimary(let states): "no node is primary: \(states)"
        case .timedOut(let wanted, let last): "pg_auto_failover did not reach \(wanted); last states \(last)"
        case .notFormed(let error, let monitor, let logs): "\(error); the monitor: \(monitor)\n\(logs)"
        }
    }
}
