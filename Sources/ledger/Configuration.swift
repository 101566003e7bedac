import AppStore
import AppStoreServerAPI
import Configuration
import Foundation
import GooglePlay
import LedgerHTTP
import LedgerPostgres
import LedgerSecrets
import LedgerSettings
import LedgerWebhooks
import Logging

/// Everything the ledger can be set by, read here through one swift-configuration reader (of the
/// environment) and nowhere else, then passed down as values: a library reads only the scoped
/// reader it is handed, so a test or another program builds the same parts with the settings it
/// chooses. A command's flags, where it has them, win over the environment (`applying`).
/// docs/configuration.md lists every variable.
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
    // Google Play.
    var google = GooglePlayConfiguration()
    /// How often the server reads Apple's notification history; nil: never (`off`).
    var reconcileInterval: Duration? = .seconds(3600)
    var logLevel = Logger.Level.info
    /// Log lines as text for a terminal, or as JSON objects, one a line, for a collector.
    var logFormat = LogFormat.text
    /// One line per answered request (`ledger serve`).
    var accessLog = true
    /// Whether and where traces are exported: OpenTelemetry's own variables.
    var tracing = TracingSettings()
    // Webhooks.
    var webhooks = WebhookPolicy()
    // Guessing: failed authentications allowed per client address and minute, and the proxies
    // whose X-Forwarded-For names the client.
    var authenticationFailureLimit = 20
    var trustedProxies: [String] = []
    // Stored secrets: the key they are sealed under, and the new one during a rotation.
    var secretsKey: SecretsKey?
    var newSecretsKey: SecretsKey?
    // Digests of the log: the signing key's file, and where and how often they are published.
    var digestKeyFile: String?
    var digestInterval = Duration.seconds(3600)
    var digestSinks = DigestPublisher.Sinks()

    /// What this process was started with, or what in it could not be read.
    static let environment = Result<Configuration, ConfigurationError> { () throws(ConfigurationError) in
        try Configuration(environment: ProcessInfo.processInfo.environment)
    }

    /// The settings under `ledger` in `reader`, and OpenTelemetry's under `otel`. A part with
    /// settings of its own reads them from the reader scoped to it and lists its keys there:
    /// `RequestLimits` (here), `VerifyReceiptConfiguration` (`apple`), `ServerAPIConfiguration`
    /// (`apple.serverAPI`), `GooglePlayConfiguration` (`google`), `WebhookPolicy` (`webhook`),
    /// `TracingSettings` (`otel`); the rest are
    /// read in this body. `ledger.port` is `LEDGER_PORT` in the environment, and the table in
    /// docs/configuration.md lists every variable. A value that does not parse is a problem naming
    /// its key; every problem, the parts' included, is thrown at the end, so the operator fixes them
    /// all in one go.
    init(reader: ConfigReader) throws(SettingsError) {
        var read = SettingsReader(reader, scope: "ledger")
        databaseURL = read.text("databaseURL", isSecret: true)
        dataDirectory = read.text("dataDir")
        databaseRole = read.text("databaseRole") ?? databaseRole
        postgresBinaries = read.text("postgresBin")
        host = read.text("host") ?? host
        port = read.number("port", in: 0...65_535) ?? port
        poolSize = read.number("poolSize", in: 1...1_000) ?? poolSize
        readDatabaseURLs = read.list("readDatabaseURL", isSecret: true)
        readReplicaWait = read.milliseconds("readReplicaWaitMs", in: 0...60_000) ?? readReplicaWait
        databaseDeadline = read.interval("databaseDeadline") ?? databaseDeadline
        if let stuck = read.intervalOrOff("stuckAfter") { stuckAfter = stuck }
        limits = read.part([], RequestLimits.init(reader:)) ?? limits
        appleRootCertificates = read.text("apple.rootCertificates")
        verifyReceipt = read.part("apple", VerifyReceiptConfiguration.init(reader:)) ?? verifyReceipt
        serverAPI = read.part("apple.serverAPI", ServerAPIConfiguration.init(reader:)) ?? serverAPI
        if let interval = read.intervalOrOff("apple.reconcileInterval") { reconcileInterval = interval }
        google = read.part("google", GooglePlayConfiguration.init(reader:)) ?? google
        logLevel = read.choice("log.level", of: Logger.Level.self) ?? logLevel
        logFormat = read.choice("log.format", of: LogFormat.self) ?? logFormat
        accessLog = read.flag("accessLog") ?? accessLog
        webhooks = read.part("webhook", WebhookPolicy.init(reader:)) ?? webhooks
        authenticationFailureLimit = read.number("authFailureLimit", in: 1...100_000) ?? authenticationFailureLimit
        trustedProxies = read.list("trustedProxies")
        secretsKey = read.secretsKey("secrets.key", file: "secrets.keyFile")
        newSecretsKey = read.secretsKey("secrets.newKey", file: "secrets.newKeyFile")
        digestKeyFile = read.text("digest.keyFile")
        digestInterval = read.interval("digest.interval") ?? digestInterval
        digestSinks = DigestPublisher.Sinks(
            directory: read.text("digest.directory"), url: read.text("digest.url", isSecret: true),
            secret: read.text("digest.secret", isSecret: true))
        tracing = TracingSettings(reader: reader.scoped(to: "otel"))
        try read.finish()
    }

    /// Comma-separated values, blanks dropped (a flag's value read as the variable is).
    static func list(_ text: String?) -> [String] {
        SettingsReader.list(text)
    }

    /// This configuration with `change` applied (a command's flags).
    func applying(_ change: (inout Configuration) -> Void) -> Configuration {
        var copy = self
        change(&copy)
        return copy
    }
}
