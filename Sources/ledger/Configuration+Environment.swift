import Configuration
import LedgerSettings

extension Configuration {
    /// The settings `environment` gives, through swift-configuration's environment provider; a
    /// value that does not parse is an error naming its variable.
    init(environment: [String: String]) throws(ConfigurationError) {
        let provider = Self.provider(environment)
        let read = Result { () throws(SettingsError) in try Configuration(reader: ConfigReader(provider: provider)) }
        self = try read.mapError { ConfigurationError($0, naming: provider) }.get()
    }

    /// The environment as swift-configuration sees it: a key's components joined by `_`, a
    /// camelCase word split, upper-cased — `ledger.port` is `LEDGER_PORT` — and the variables that
    /// hold a password or a key marked secret, so that the provider's description and an access log
    /// (`CONFIG_ACCESS_LOG_FILE`) show them redacted whoever reads them.
    static func provider(_ environment: [String: String]) -> EnvironmentVariablesProvider {
        EnvironmentVariablesProvider(environmentVariables: environment, secretsSpecifier: .specific(secretVariables))
    }

    /// A database URL may carry a password; the secrets keys open every stored secret; OTLP headers
    /// may carry a collector's key.
    static let secretVariables: Set<String> = [
        "LEDGER_DATABASE_URL", "LEDGER_READ_DATABASE_URL", "LEDGER_SECRETS_KEY", "LEDGER_SECRETS_NEW_KEY",
        "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ]
}

/// Settings that could not be read, each naming its variable and what it expects.
struct ConfigurationError: Error, CustomStringConvertible {
    var problems: [String]

    /// `error`'s problems with each key named as `provider` names it (`LEDGER_PORT`): the name an
    /// operator sets, never the key the code reads.
    init(_ error: SettingsError, naming provider: some ConfigProvider) {
        problems = error.problems.map { problem in
            problem.sentence { key in (try? provider.value(forKey: AbsoluteConfigKey(key), type: .string).encodedKey) ?? key.description }
        }
    }

    var description: String {
        "the environment sets the ledger up wrongly (docs/configuration.md lists every variable):\n"
            + problems.map { "  - " + $0 }.joined(separator: "\n")
    }
}
