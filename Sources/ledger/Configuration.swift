import AppStore
import Foundation
import LedgerHTTP
import LedgerPostgres
import Logging

/// Everything the ledger can be set by, read from the environment here and nowhere else, then
/// passed down as values: no library reads the environment, so a test or another program builds
/// the same parts with the settings it chooses. A command's flags, where it has them, win over
/// the environment (`applying`). docs/configuration.md lists every variable.
struct Configuration: Sendable {
    // The database (every command).
    var databaseURL: String?
    var dataDirectory: String?
    var databaseRole = ApplicationRole.defaultName
    var postgresBinaries: String?
    // The server.
    var host = "127.0.0.1"
    var port = 8080
    var poolSize = 8
    var readDatabaseURLs: [String] = []
    var readReplicaWait = Duration.milliseconds(250)
    var limits = RequestLimits()
    // Apple.
    var appleRootCertificates: String?
    var verifyReceipt = VerifyReceiptConfiguration()
    var logLevel = Logger.Level.info

    /// What this process was started with.
    static let environment = Configuration(environment: ProcessInfo.processInfo.environment)

    init(environment: [String: String]) {
        func text(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        func number(_ name: String) -> Int? { text(name).flatMap { Int($0) } }
        databaseURL = text("LEDGER_DATABASE_URL")
        dataDirectory = text("LEDGER_DATA_DIR")
        databaseRole = text("LEDGER_DATABASE_ROLE") ?? databaseRole
        postgresBinaries = text("LEDGER_POSTGRES_BIN")
        host = text("LEDGER_HOST") ?? host
        port = number("LEDGER_PORT") ?? port
        poolSize = number("LEDGER_POOL_SIZE") ?? poolSize
        readDatabaseURLs = Self.list(text("LEDGER_READ_DATABASE_URL"))
        readReplicaWait = number("LEDGER_READ_REPLICA_WAIT_MS").map { .milliseconds($0) } ?? readReplicaWait
        limits = RequestLimits(maximumBody: number("LEDGER_MAX_BODY_BYTES") ?? RequestLimits.defaultMaximumBody)
        appleRootCertificates = text("LEDGER_APPLE_ROOT_CERTIFICATES")
        verifyReceipt = .fromEnvironment(environment)
        logLevel = text("LEDGER_LOG_LEVEL").flatMap(Logger.Level.init(rawValue:)) ?? logLevel
    }

    /// Comma-separated values, blanks dropped.
    static func list(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// This configuration with `change` applied (a command's flags).
    func applying(_ change: (inout Configuration) -> Void) -> Configuration {
        var copy = self
        change(&copy)
        return copy
    }
}
