import Foundation
import LedgerPostgres
import Logging

/// A private PostgreSQL cluster in a folder of ours, run from the machine's own binaries.
///
/// The newcomer's default (`ledger serve` with no `LEDGER_DATABASE_URL`) and every test's database.
/// It listens on a unix socket only, never on TCP. PostgreSQL refuses to run as root, so when we are
/// root the server programs run as the `postgres` user and the folder is handed to that user.
package struct EmbeddedPostgres: Sendable {
    package struct Options: Sendable {
        /// Durable by default. Tests turn fsync off: they never survive a power cut anyway.
        package var durable: Bool = true
        package var port: Int = 5432
        /// Extra `-c name=value` server settings.
        package var settings: [String: String] = [:]
        /// Listen on 127.0.0.1:`port` too (a standby streams from its primary over loopback).
        package var loopback: Bool = false
        /// Where `initdb` and `pg_ctl` are (`LEDGER_POSTGRES_BIN`); nil: found (`PostgresBinaries.locate`).
        package var binaries: String?
        package init(
            durable: Bool = true, port: Int = 5432, settings: [String: String] = [:], loopback: Bool = false, binaries: String? = nil
        ) {
            self.durable = durable
            self.port = port
            self.settings = settings
            self.loopback = loopback
            self.binaries = binaries
        }
    }

    package let dataDirectory: URL
    package let options: Options
    let binaries: PostgresBinaries
    let logger: Logger

    /// The superuser `initdb` creates; the server itself narrows to `ledger_app` with SET ROLE.
    package static let superuser = "postgres"

    package init(dataDirectory: URL, options: Options = Options(), logger: Logger) throws {
        self.dataDirectory = dataDirectory.standardizedFileURL
        self.options = options
        self.binaries = try PostgresBinaries.locate(configured: options.binaries)
        self.logger = logger
    }

    /// The socket lives beside the data folder (`initdb` wants that one empty) when the path is
    /// short enough for a unix socket (107 bytes on Linux), otherwise under /tmp, named after it.
    package var socketDirectory: URL {
        let beside = URL(fileURLWithPath: dataDirectory.path + "-socket")
        if beside.path.utf8.count + 20 < 100 { return beside }
        return URL(fileURLWithPath: "/tmp/ledger-pg-\(Self.stableDigest(dataDirectory.path))")
    }

    /// FNV-1a: stable across runs (Swift's `hashValue` is seeded per process).
    package static func stableDigest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 36)
    }

    package func configuration(database: String) -> PostgresConfiguration {
        .unixSocket(directory: socketDirectory.path, port: options.port, database: database, user: Self.superuser)
    }

    /// Initialises the cluster if needed and starts it. Returns true when this call started it
    /// (and so should stop it), false when it was already running (another `ledger` owns it).
    @discardableResult
    package func start() throws -> Bool {
        try prepareFolders()
        if !FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("PG_VERSION").path) {
            logger.info("initialising embedded PostgreSQL", metadata: ["postgres.data": "\(dataDirectory.path)"])
            try run(
                binaries.initdb,
                [
                    "-D", dataDirectory.path, "-U", Self.superuser, "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8",
                    "--no-instructions",
                ])
        }
        if isRunning() {
            logger.info("embedded PostgreSQL already running", metadata: ["postgres.data": "\(dataDirectory.path)"])
            return false
        }
        var settings = [
            "listen_addresses": options.loopback ? "127.0.0.1" : "''",
            "unix_socket_directories": "'\(socketDirectory.path)'",
            "unix_socket_permissions": "0700",
            "port": String(options.port),
            "max_connections": "200",
            "idle_in_transaction_session_timeout": "60000",
        ]
        if !options.durable {
            settings.merge(["fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"]) { $1 }
        }
        settings.merge(options.settings) { $1 }
        let serverOptions = settings.sorted { $0.key < $1.key }.map { "-c \($0.key)=\($0.value)" }.joined(separator: " ")
        try run(
            binaries.pgCtl,
            [
                "start", "-w", "-t", "60", "-D", dataDirectory.path,
                "-l", dataDirectory.appendingPathComponent("server.log").path, "-o", serverOptions,
            ])
        logger.info("embedded PostgreSQL started", metadata: ["postgres.socket": "\(socketDirectory.path)"])
        return true
    }

    /// A streaming standby of this running cluster in `dataDirectory`, made as operators make one
    /// (`pg_basebackup -R`: a copy of the data and the settings to follow this primary over
    /// loopback). Not started: `start()` it, and it replays everything the primary commits.
    package func createStandby(dataDirectory: URL, options: Options) throws -> EmbeddedPostgres {
        precondition(self.options.loopback, "a standby streams over loopback: start the primary with loopback: true")
        let standby = try EmbeddedPostgres(dataDirectory: dataDirectory, options: options, logger: logger)
        try standby.prepareFolders()
        try run(
            binaries.pgBasebackup,
            [
                "-D", standby.dataDirectory.path, "-h", "127.0.0.1", "-p", String(self.options.port),
                "-U", Self.superuser, "-R", "-X", "stream", "-c", "fast",
            ])
        return standby
    }

    /// Stops the server: `fast` rolls back open transactions; `immediate` is a crash (for fault tests).
    package func stop(mode: String = "fast") throws {
        guard isRunning() else { return }
        try run(binaries.pgCtl, ["stop", "-w", "-t", "60", "-m", mode, "-D", dataDirectory.path])
    }

    /// Kills the postmaster with SIGKILL, as a machine's death or the OOM killer would: no
    /// shutdown message to clients, no checkpoint (for failover tests).
    package func kill() throws {
        guard let pid = Self.postmasterPID(in: dataDirectory) else { return }
        _ = try run(URL(fileURLWithPath: "/bin/kill"), ["-KILL", String(pid)], asPostgres: false)
        // Its children leave when they see it gone; the folder is reusable once they have.
        for _ in 0..<200 where isRunning() { usleep(50_000) }
    }

    /// The postmaster running on `dataDirectory`, from its `postmaster.pid` (nil: none running).
    package static func postmasterPID(in dataDirectory: URL) -> pid_t? {
        let text = try? String(contentsOf: dataDirectory.appendingPathComponent("postmaster.pid"), encoding: .utf8)
        return text?.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    /// Promotes this standby to a primary and waits until it accepts writes.
    package func promote() throws {
        try run(binaries.pgCtl, ["promote", "-w", "-t", "60", "-D", dataDirectory.path])
    }

    package func isRunning() -> Bool {
        (try? run(binaries.pgCtl, ["status", "-D", dataDirectory.path])) != nil
    }

    /// Creates `name` unless it exists. Names are checked: they are spliced into DDL.
    package func createDatabase(_ name: String) throws {
        precondition(name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }, "database names are plain identifiers")
        let connection = try PostgresConnection.connect(configuration(database: "postgres"))
        let exists = try connection.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])
        if exists.isEmpty { try connection.execute(script: "CREATE DATABASE \(name)") }
    }

    // MARK: - Running as the right user

    private var runsAsPostgresUser: Bool { geteuid() == 0 }

    func prepareFolders() throws {
        let fileManager = FileManager.default
        for folder in [dataDirectory, socketDirectory] {
            // Parents keep ordinary permissions (the postgres user must pass through them); the
            // folder itself is private.
            try fileManager.createDirectory(at: folder.deletingLastPathComponent(), withIntermediateDirectories: true)
            if !fileManager.fileExists(atPath: folder.path) {
                try fileManager.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            }
            if runsAsPostgresUser {
                _ = try run(URL(fileURLWithPath: "/bin/chown"), ["postgres:postgres", folder.path], asPostgres: false)
            }
        }
        if runsAsPostgresUser {
            do {
                try run(URL(fileURLWithPath: "/usr/bin/test"), ["-w", dataDirectory.path, "-a", "-x", socketDirectory.path])
            } catch {
                throw EmbeddedPostgresError.notAccessible(
                    "the postgres user cannot reach \(dataDirectory.path) (a parent folder is closed to it); "
                        + "set LEDGER_DATA_DIR to a folder it can reach, e.g. /var/tmp/ledger")
            }
        }
    }

    /// Runs a server program (as `postgres` when we are root) and returns its output.
    @discardableResult
    func run(_ program: URL, _ arguments: [String], asPostgres: Bool = true) throws -> String {
        let outcome =
            asPostgres && runsAsPostgresUser
            ? try ChildProcess.run("/usr/sbin/runuser", ["-u", "postgres", "--", program.path] + arguments)
            : try ChildProcess.run(program.path, arguments)
        guard outcome.status == 0 else {
            throw EmbeddedPostgresError.commandFailed(
                command: program.lastPathComponent + " " + (arguments.first ?? ""), status: outcome.status, output: outcome.output)
        }
        return outcome.output
    }
}
