import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerTestSupport

/// `ledger serve` as an operator runs it on their own PostgreSQL: a cluster of its own, a
/// database named `ledger`, the tests' secrets key, a port of its own and its output in a file;
/// listening when made.
final class ServedLedger {
    let cluster: EmbeddedPostgres
    let database: PostgresConfiguration
    let port: Int
    let log: String
    let pid: pid_t

    /// `tag` names the log file; `environment` adds to (or overrides) the settings.
    init(_ tag: String, environment extra: [String: String] = [:]) async throws {
        cluster = try await TestCluster.privateCluster()
        database = try await TestCluster.database(on: cluster, named: "ledger")
        log = NSTemporaryDirectory() + "ledger-\(tag)-\(UUID().uuidString.prefix(8)).log"
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = database.connectionString
        environment["LEDGER_SECRETS_KEY"] = LedgerCommandTests.secretsKey
        environment.merge(extra) { $1 }
        let process = try await ServeProcess.start(environment: environment, log: log)
        (pid, port) = (process.pid, process.port)
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// What the server has written so far.
    var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// Ends it if it still runs (SIGKILL), and reaps it.
    func stop() {
        kill(pid, SIGKILL)
        _ = ChildProcess.wait(pid)
    }
}
