import Configuration

/// A setting that could not be read: which keys are at fault and what is wrong with them. The
/// keys stay keys until the one who built the reader names them, because only the provider knows
/// a key's name for an operator (`ledger.port` is `LEDGER_PORT` in the environment); a part that
/// was handed a scoped reader knows neither its scope nor its provider.
package struct SettingProblem: Sendable, Hashable {
    /// One key, or two that contradict each other; relative to the reader that found the problem
    /// until a caller that scoped the reader puts its scope in front (`SettingsReader.part`).
    package var keys: [ConfigKey]
    /// What is wrong, said after the names: `is '80a': expected a whole number from 0 to 65535`.
    /// Never a secret's value.
    package var complaint: String

    /// The sentence an operator reads, each key named as `name` says (`LEDGER_PORT is '80a': …`).
    package func sentence(naming name: (ConfigKey) -> String) -> String {
        keys.map(name).joined(separator: " and ") + " " + complaint
    }

    /// The same problem seen from a reader `scope` further up.
    func under(_ scope: [String]) -> Self {
        Self(keys: keys.map { ConfigKey(scope + $0.components, context: $0.context) }, complaint: complaint)
    }
}

/// Every setting a part could not read, so that the operator fixes them all in one go.
package struct SettingsError: Error, Sendable, CustomStringConvertible {
    package var problems: [SettingProblem]

    package init(problems: [SettingProblem]) {
        self.problems = problems
    }

    /// With the keys as keys (`ledger.port is '80a': …`); the `ledger` command names variables.
    package var description: String {
        problems.map { $0.sentence(naming: \.description) }.joined(separator: "; ")
    }
}
