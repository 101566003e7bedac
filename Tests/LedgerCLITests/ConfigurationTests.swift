import AppStore
import AppStoreServerAPI
import Configuration
import Foundation
import LedgerHTTP
import LedgerSecrets
import LedgerWebhooks
import Logging
import Synchronization
import Testing

@testable import ledger

/// The settings as the `ledger` command reads them: one swift-configuration reader of the
/// environment, each part reading its own keys, and the ledger's strictness kept — a value that
/// does not parse is named with what was expected, all of them at once, and no secret is shown.
/// No database: these read settings and nothing else.
@Suite struct ConfigurationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func everyDocumentedVariableIsReadIntoItsSetting() throws {
        let key = SecretsKey.generate()
        let newKey = SecretsKey.generate()
        let newKeyFile = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "ledger-new-key-\(UUID().uuidString.prefix(8))")
        try Data(newKey.utf8).write(to: newKeyFile)
        defer { try? FileManager.default.removeItem(at: newKeyFile) }
        let settings = try Configuration(environment: [
            "LEDGER_DATABASE_URL": "postgresql://ledger:pw@db.internal/ledger",
            "LEDGER_DATA_DIR": "/srv/ledger/postgres",
            "LEDGER_DATABASE_ROLE": "ledger_runtime",
            "LEDGER_READ_DATABASE_URL": "postgresql://replica-1/ledger, postgresql://replica-2/ledger,",
            "LEDGER_READ_REPLICA_WAIT_MS": "500",
            "LEDGER_DATABASE_DEADLINE": "90s",
            "LEDGER_STUCK_AFTER": "off",
            "LEDGER_POSTGRES_BIN": "/usr/lib/postgresql/17/bin",
            "LEDGER_HOST": "0.0.0.0",
            "LEDGER_PORT": "9090",
            "LEDGER_POOL_SIZE": "16",
            "LEDGER_APPLE_ROOT_CERTIFICATES": "/etc/ledger/AppleRootCA-G3.cer",
            "LEDGER_APPLE_VERIFY_RECEIPT_URL": "http://127.0.0.1:9001/verifyReceipt",
            "LEDGER_APPLE_SANDBOX_VERIFY_RECEIPT_URL": "http://127.0.0.1:9001/sandbox/verifyReceipt",
            "LEDGER_APPLE_EXCLUDE_OLD_TRANSACTIONS": "yes",
            "LEDGER_APPLE_SERVER_API_URL": "http://127.0.0.1:9001/production",
            "LEDGER_APPLE_SERVER_API_SANDBOX_URL": "http://127.0.0.1:9001/sandbox",
            "LEDGER_APPLE_RECONCILE_INTERVAL": "15m",
            "LEDGER_MAX_BODY_BYTES": "2048",
            "LEDGER_REQUEST_DEADLINE": "30s",
            "LEDGER_WEBHOOK_TIMEOUT": "5",
            "LEDGER_WEBHOOK_RETRY_WINDOW": "24h",
            "LEDGER_WEBHOOK_FIRST_RETRY_MS": "250",
            "LEDGER_WEBHOOK_LONGEST_RETRY": "10m",
            "LEDGER_WEBHOOK_CONCURRENCY": "8",
            "LEDGER_WEBHOOK_POLL_MS": "200",
            "LEDGER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1",
            "LEDGER_AUTH_FAILURE_LIMIT": "5",
            "LEDGER_SECRETS_KEY": key,
            "LEDGER_SECRETS_NEW_KEY_FILE": newKeyFile.path,
            "LEDGER_TRUSTED_PROXIES": "10.0.0.1, 10.0.0.2",
            "LEDGER_LOG_LEVEL": "DEBUG",
            "LEDGER_LOG_FORMAT": "json",
            "LEDGER_ACCESS_LOG": "false",
        ])
        #expect(settings.databaseURL == "postgresql://ledger:pw@db.internal/ledger")
        #expect(settings.dataDirectory == "/srv/ledger/postgres")
        #expect(settings.databaseRole == "ledger_runtime")
        #expect(settings.readDatabaseURLs == ["postgresql://replica-1/ledger", "postgresql://replica-2/ledger"])
        #expect(settings.readReplicaWait == .milliseconds(500))
        #expect(settings.databaseDeadline == .seconds(90))
        #expect(settings.stuckAfter == nil)
        #expect(settings.postgresBinaries == "/usr/lib/postgresql/17/bin")
        #expect(settings.host == "0.0.0.0")
        #expect(settings.port == 9090)
        #expect(settings.poolSize == 16)
        #expect(settings.appleRootCertificates == "/etc/ledger/AppleRootCA-G3.cer")
        #expect(settings.verifyReceipt.productionURL == "http://127.0.0.1:9001/verifyReceipt")
        #expect(settings.verifyReceipt.sandboxURL == "http://127.0.0.1:9001/sandbox/verifyReceipt")
        #expect(settings.verifyReceipt.excludeOldTransactions)
        #expect(settings.serverAPI.productionURL == "http://127.0.0.1:9001/production")
        #expect(settings.serverAPI.sandboxURL == "http://127.0.0.1:9001/sandbox")
        #expect(settings.reconcileInterval == .seconds(900))
        #expect(settings.limits.maximumBody == 2048)
        #expect(settings.limits.deadline == .seconds(30))
        #expect(settings.webhooks.attemptTimeout == .seconds(5))
        #expect(settings.webhooks.retryWindow == .seconds(24 * 3600))
        #expect(settings.webhooks.firstRetry == .milliseconds(250))
        #expect(settings.webhooks.longestRetry == .seconds(600))
        #expect(settings.webhooks.concurrency == 8)
        #expect(settings.webhooks.pollInterval == .milliseconds(200))
        #expect(settings.webhooks.targets.allowPrivateNetworks)
        #expect(settings.authenticationFailureLimit == 5)
        #expect(settings.secretsKey?.id == (try SecretsKey(base64: key)).id)
        #expect(settings.newSecretsKey?.id == (try SecretsKey(base64: newKey)).id)
        #expect(settings.trustedProxies == ["10.0.0.1", "10.0.0.2"])
        #expect(settings.logLevel == .debug)
        #expect(settings.logFormat == .json)
        #expect(!settings.accessLog)
    }

    /// Unset and empty are the same: the documented default.
    @Test func anEmptyOrAbsentVariableMeansTheDefault() throws {
        let names = try Self.documentedVariables()
        let empty = try Configuration(environment: Dictionary(uniqueKeysWithValues: names.map { ($0, "") }))
        for settings in [try Configuration(environment: [:]), empty] {
            #expect(settings.databaseURL == nil)
            #expect(settings.databaseRole == "ledger_app")
            #expect(settings.host == "127.0.0.1")
            #expect(settings.port == 8080)
            #expect(settings.poolSize == 8)
            #expect(settings.readDatabaseURLs.isEmpty)
            #expect(settings.readReplicaWait == .milliseconds(250))
            #expect(settings.databaseDeadline == .seconds(10))
            #expect(settings.stuckAfter == .seconds(60))
            #expect(settings.verifyReceipt.productionURL == "https://buy.itunes.apple.com/verifyReceipt")
            #expect(!settings.verifyReceipt.excludeOldTransactions)
            #expect(settings.serverAPI.productionURL == "https://api.storekit.apple.com")
            #expect(settings.serverAPI.sandboxURL == "https://api.storekit-sandbox.apple.com")
            #expect(settings.reconcileInterval == .seconds(3600))
            #expect(settings.limits.maximumBody == 1_048_576)
            #expect(settings.limits.deadline == .seconds(10))
            #expect(settings.webhooks.retryWindow == .seconds(72 * 3600))
            #expect(!settings.webhooks.targets.allowPrivateNetworks)
            #expect(settings.authenticationFailureLimit == 20)
            #expect(settings.secretsKey == nil)
            #expect(settings.logLevel == .info)
            #expect(settings.logFormat == .text)
            #expect(settings.accessLog)
        }
    }

    /// The ledger's variables asked of the environment are exactly the table's in
    /// docs/configuration.md: a key renamed in the code would otherwise quietly stop reading an
    /// operator's variable. OpenTelemetry's are its own, and each one read is named there too.
    @Test func theVariablesReadAreExactlyTheDocumentedOnes() throws {
        let reads = AccessRecorder()
        let provider = Configuration.provider(["OTEL_TRACES_SAMPLER": "parentbased_traceidratio"])
        _ = try Configuration(reader: ConfigReader(provider: provider, accessReporter: reads))
        #expect(reads.names.filter { $0.hasPrefix("LEDGER_") } == (try Self.documentedVariables()))
        let documentation = try String(contentsOf: Self.root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let openTelemetry = reads.names.filter { $0.hasPrefix("OTEL_") }
        #expect(openTelemetry.count == 6)
        for name in openTelemetry { #expect(documentation.contains("`\(name)"), "\(name)") }
    }

    /// OpenTelemetry's variables are read as OpenTelemetry says, leniently: a sampler argument
    /// that is not a ratio is 1, not an error.
    @Test func openTelemetrysVariablesAreReadLeniently() throws {
        let exported = try Configuration(environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0.25",
        ]).tracing
        #expect(exported.isWanted)
        #expect(exported.endpoint == "http://collector:4318")
        #expect(exported.headRatio == 0.25)
        let odd = try Configuration(environment: [
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "lots",
        ]).tracing
        #expect(odd.endpoint == "http://collector:4318/v1/traces")
        #expect(odd.headRatio == 1)
        let disabled = try Configuration(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "TRUE"])
        #expect(!disabled.tracing.isWanted)
        #expect(try Configuration(environment: [:]).tracing.isWanted == false)
        #expect(try Configuration(environment: ["OTEL_TRACES_SAMPLER": "always_on"]).tracing.headRatio == nil)
    }

    @Test func aValueThatDoesNotParseIsNamedWithWhatWasExpected() {
        #expect(throws: ConfigurationError.self) { try Configuration(environment: ["LEDGER_PORT": "80a"]) }
        #expect(problems(["LEDGER_PORT": "80a"]) == ["LEDGER_PORT is '80a': expected a whole number from 0 to 65535"])
        #expect(problems(["LEDGER_POOL_SIZE": "0"]) == ["LEDGER_POOL_SIZE is '0': expected a whole number from 1 to 1000"])
        #expect(problems(["LEDGER_ACCESS_LOG": "sometimes"]) == ["LEDGER_ACCESS_LOG is 'sometimes': expected true or false"])
        #expect(
            problems(["LEDGER_DATABASE_DEADLINE": "off"]) == [
                "LEDGER_DATABASE_DEADLINE is 'off': expected seconds such as 3600, 90s, 15m or 1h"
            ])
    }

    /// Every problem at once, the parts' (receipts, webhooks, request limits) among them, each
    /// named by its full variable: the operator fixes them all in one go.
    @Test func everyProblemIsReportedTogether() {
        let found = problems([
            "LEDGER_PORT": "80a",
            "LEDGER_LOG_LEVEL": "loud",
            "LEDGER_APPLE_RECONCILE_INTERVAL": "hourly",
            "LEDGER_APPLE_EXCLUDE_OLD_TRANSACTIONS": "maybe",
            "LEDGER_WEBHOOK_RETRY_WINDOW": "3d",
            "LEDGER_WEBHOOK_CONCURRENCY": "lots",
            "LEDGER_MAX_BODY_BYTES": "12",
        ])
        #expect(
            Set(found) == [
                "LEDGER_PORT is '80a': expected a whole number from 0 to 65535",
                "LEDGER_LOG_LEVEL is 'loud': expected one of trace, debug, info, notice, warning, error, critical",
                "LEDGER_APPLE_RECONCILE_INTERVAL is 'hourly': expected seconds such as 3600, 90s, 15m or 1h, or off",
                "LEDGER_APPLE_EXCLUDE_OLD_TRANSACTIONS is 'maybe': expected true or false",
                "LEDGER_WEBHOOK_RETRY_WINDOW is '3d': expected seconds such as 3600, 90s, 15m or 1h",
                "LEDGER_WEBHOOK_CONCURRENCY is 'lots': expected a whole number from 1 to 10000",
                "LEDGER_MAX_BODY_BYTES is '12': expected a whole number from 1024 to 1073741824",
            ])
        #expect(found.count == 7)
    }

    /// A key that is not usable, or set twice, is said so without its value; the provider's
    /// description and every access an access log would write show secrets redacted.
    @Test func secretsNeverAppearInProblemsOrReads() throws {
        let notAKey = "hunter2-is-not-a-key"
        let unusable = problems(["LEDGER_SECRETS_KEY": notAKey])
        #expect(unusable.count == 1)
        #expect(unusable.first?.hasPrefix("LEDGER_SECRETS_KEY is not a usable key") == true, "\(unusable)")
        #expect(!unusable.joined().contains(notAKey))
        let twice = problems(["LEDGER_SECRETS_NEW_KEY": notAKey, "LEDGER_SECRETS_NEW_KEY_FILE": "/run/secrets/ledger"])
        #expect(twice == ["LEDGER_SECRETS_NEW_KEY and LEDGER_SECRETS_NEW_KEY_FILE are both set: set one"])

        let environment = [
            "LEDGER_DATABASE_URL": "postgresql://ledger:hunter2@db/ledger",
            "LEDGER_READ_DATABASE_URL": "postgresql://ledger:hunter2@replica/ledger",
            "LEDGER_SECRETS_KEY": SecretsKey.generate(),
            "LEDGER_PORT": "9090",
        ]
        let provider = Configuration.provider(environment)
        #expect(!provider.debugDescription.contains("hunter2"))
        #expect(!provider.debugDescription.contains(environment["LEDGER_SECRETS_KEY"]!))
        #expect(provider.debugDescription.contains("LEDGER_PORT=9090"), "what is not secret is shown")
        let reads = AccessRecorder()
        _ = try Configuration(reader: ConfigReader(provider: provider, accessReporter: reads))
        let lines = reads.lines.joined(separator: "\n")
        #expect(!lines.contains("hunter2"))
        #expect(!lines.contains(environment["LEDGER_SECRETS_KEY"]!))
        #expect(lines.contains("<REDACTED>"))
    }

    /// The problems `environment` gives, as the command prints them (none when it reads).
    func problems(_ environment: [String: String]) -> [String] {
        do throws(ConfigurationError) {
            _ = try Configuration(environment: environment)
            return []
        } catch {
            return error.problems
        }
    }

    /// The `LEDGER_` variables named in the first column of docs/configuration.md's table.
    static func documentedVariables() throws -> Set<String> {
        let text = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        var names: Set<String> = []
        for line in text.split(separator: "\n") where line.hasPrefix("| `LEDGER_") {
            let first = line.split(separator: "|").first ?? ""
            for (index, part) in first.split(separator: "`", omittingEmptySubsequences: false).enumerated() where index % 2 == 1 {
                names.insert(String(part))
            }
        }
        return names
    }
}

/// What an access log would be given: each variable asked of the environment, and each read as
/// swift-configuration renders it (secrets redacted).
final class AccessRecorder: AccessReporter {
    private let events = Mutex<[AccessEvent]>([])

    func report(_ event: AccessEvent) {
        events.withLock { $0.append(event) }
    }

    var names: Set<String> {
        events.withLock { events in
            Set(events.flatMap { $0.providerResults.compactMap { try? $0.result.get().encodedKey } })
        }
    }

    var lines: [String] {
        events.withLock { $0.map(\.description) }
    }
}
