import AppStore
import AppStoreServerAPI
import Foundation
import LedgerHTTP
import LedgerPostgres
import LedgerSecrets
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
    /// How long the server waits for one answer of PostgreSQL (a COMMIT waiting for a synchronous
    /// standby included) before it drops the connection and the request answers 503.
    var databaseDeadline = Duration.seconds(10)
    /// How long a background part may fail while the database answers, or the listener go
    /// unanswered, before the server stops so that its supervisor restarts it; nil: never (`off`).
    var stuckAfter: Duration? = .seconds(60)
    var limits = RequestLimits()
    // Apple.
    var appleRootCertificates: String?
    var verifyReceipt = VerifyReceiptConfiguration()
    var serverAPI = ServerAPIConfiguration()
    /// How often the server reads Apple's notification history; nil: never (`off`).
    var reconcileInterval: Duration? = .seconds(3600)
    var logLevel = Logger.Level.info
    /// Log lines as text for a terminal, or as JSON objects, one a line, for a collector.
    var logFormat = LogFormat.text
    /// One line per answered request (`ledger serve`).
    var accessLog = true
    // Webhooks.
    var webhooks = WebhookPolicy()
    // Guessing: failed authentications allowed per client address and minute, and the proxies
    // whose X-Forwarded-For names the client.
    var authenticationFailureLimit = 20
    var trustedProxies: [String] = []
    // Stored secrets: the key they are sealed under, and the new one during a rotation.
    var secretsKey: SecretsKey?
    var newSecretsKey: SecretsKey?

    /// What this process was started with, or what in it could not be read.
    static let environment = Result<Configuration, ConfigurationError> { () throws(ConfigurationError) in
        try Configuration(environment: ProcessInfo.processInfo.environment)
    }

    /// The settings `environment` gives; a value that does not parse is an error naming it.
    init(environment: [String: String]) throws(ConfigurationError) {
        var read = EnvironmentReader(environment)
        databaseURL = read.text("LEDGER_DATABASE_URL")
        dataDirectory = read.text("LEDGER_DATA_DIR")
        databaseRole = read.text("LEDGER_DATABASE_ROLE") ?? databaseRole
        postgresBinaries = read.text("LEDGER_POSTGRES_BIN")
        host = read.text("LEDGER_HOST") ?? host
        port = read.number("LEDGER_PORT", in: 0...65_535) ?? port
        poolSize = read.number("LEDGER_POOL_SIZE", in: 1...1_000) ?? poolSize
        readDatabaseURLs = Self.list(read.text("LEDGER_READ_DATABASE_URL"))
        readReplicaWait = read.milliseconds("LEDGER_READ_REPLICA_WAIT_MS", in: 0...60_000) ?? readReplicaWait
        if let deadline = read.interval("LEDGER_DATABASE_DEADLINE") ?? nil { databaseDeadline = deadline }
        if let stuck = read.interval("LEDGER_STUCK_AFTER", offAllowed: true) { stuckAfter = stuck }
        limits = RequestLimits(maximumBody: read.number("LEDGER_MAX_BODY_BYTES", in: 1_024...1_073_741_824) ?? RequestLimits.defaultMaximumBody)
        appleRootCertificates = read.text("LEDGER_APPLE_ROOT_CERTIFICATES")
        verifyReceipt = .fromEnvironment(environment)
        verifyReceipt.excludeOldTransactions = read.flag("LEDGER_APPLE_EXCLUDE_OLD_TRANSACTIONS") ?? verifyReceipt.excludeOldTransactions
        serverAPI = .fromEnvironment(environment)
        if let interval = read.interval("LEDGER_APPLE_RECONCILE_INTERVAL", offAllowed: true) { reconcileInterval = interval }
        logLevel = read.choice("LEDGER_LOG_LEVEL", of: Logger.Level.self) ?? logLevel
        logFormat = read.choice("LEDGER_LOG_FORMAT", of: LogFormat.self) ?? logFormat
        accessLog = read.flag("LEDGER_ACCESS_LOG") ?? accessLog
        if let timeout = read.interval("LEDGER_WEBHOOK_TIMEOUT") ?? nil { webhooks.attemptTimeout = timeout }
        if let window = read.interval("LEDGER_WEBHOOK_RETRY_WINDOW") ?? nil { webhooks.retryWindow = window }
        if let longest = read.interval("LEDGER_WEBHOOK_LONGEST_RETRY") ?? nil { webhooks.longestRetry = longest }
        if let first = read.milliseconds("LEDGER_WEBHOOK_FIRST_RETRY_MS", in: 1...3_600_000) { webhooks.firstRetry = first }
        if let concurrency = read.number("LEDGER_WEBHOOK_CONCURRENCY", in: 1...10_000) { webhooks.concurrency = concurrency }
        if let poll = read.milliseconds("LEDGER_WEBHOOK_POLL_MS", in: 1...3_600_000) { webhooks.pollInterval = poll }
        if let allowed = read.flag("LEDGER_WEBHOOK_ALLOW_PRIVATE_NETWORKS") { webhooks.targets.allowPrivateNetworks = allowed }
        authenticationFailureLimit = read.number("LEDGER_AUTH_FAILURE_LIMIT", in: 1...100_000) ?? authenticationFailureLimit
        trustedProxies = Self.list(read.text("LEDGER_TRUSTED_PROXIES"))
        secretsKey = read.secretsKey("LEDGER_SECRETS_KEY")
        newSecretsKey = read.secretsKey("LEDGER_SECRETS_NEW_KEY")
        guard read.problems.isEmpty else { throw ConfigurationError(problems: read.problems) }
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
