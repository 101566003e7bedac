import AppStore
import AppStoreServerAPI
import Foundation
import LedgerHTTP
import LedgerPostgres
import LedgerWebhooks
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
    var serverAPI = ServerAPIConfiguration()
    /// How often the server reads Apple's notification history; nil: never (`off`).
    var reconcileInterval: Duration? = .seconds(3600)
    var logLevel = Logger.Level.info
    // Webhooks.
    var webhooks = WebhookPolicy()

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
        serverAPI = .fromEnvironment(environment)
        if let text = text("LEDGER_APPLE_RECONCILE_INTERVAL") { reconcileInterval = Self.interval(text) ?? reconcileInterval }
        logLevel = text("LEDGER_LOG_LEVEL").flatMap(Logger.Level.init(rawValue:)) ?? logLevel
        if let timeout = text("LEDGER_WEBHOOK_TIMEOUT").flatMap(Self.interval) ?? nil { webhooks.attemptTimeout = timeout }
        if let window = text("LEDGER_WEBHOOK_RETRY_WINDOW").flatMap(Self.interval) ?? nil { webhooks.retryWindow = window }
        if let longest = text("LEDGER_WEBHOOK_LONGEST_RETRY").flatMap(Self.interval) ?? nil { webhooks.longestRetry = longest }
        if let first = number("LEDGER_WEBHOOK_FIRST_RETRY_MS"), first > 0 { webhooks.firstRetry = .milliseconds(first) }
        if let concurrency = number("LEDGER_WEBHOOK_CONCURRENCY"), concurrency > 0 { webhooks.concurrency = concurrency }
        if let poll = number("LEDGER_WEBHOOK_POLL_MS"), poll > 0 { webhooks.pollInterval = .milliseconds(poll) }
    }

    /// Comma-separated values, blanks dropped.
    static func list(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// `off`, or seconds with an optional unit: `3600`, `90s`, `15m`, `1h`. Unreadable: nil.
    static func interval(_ text: String) -> Duration?? {
        let value = text.trimmingCharacters(in: .whitespaces).lowercased()
        if value == "off" || value == "0" { return .some(nil) }
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600]
        let (digits, unit) = units[value.last ?? " "].map { (value.dropLast(), $0) } ?? (Substring(value), 1)
        guard let number = Int(digits), number > 0 else { return nil }
        return .some(.seconds(number * unit))
    }

    /// This configuration with `change` applied (a command's flags).
    func applying(_ change: (inout Configuration) -> Void) -> Configuration {
        var copy = self
        change(&copy)
        return copy
    }
}
