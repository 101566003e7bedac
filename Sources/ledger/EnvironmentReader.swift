import Foundation
import LedgerSecrets
import Logging

/// Reads the ledger's settings from environment variables, refusing a value it cannot read rather
/// than quietly using the default: `LEDGER_PORT=80a` must stop the server with a sentence naming
/// the variable, not start it on 8080. Absent or empty means the default. Every problem is
/// collected, so an operator fixes them all in one go.
struct EnvironmentReader {
    let environment: [String: String]
    private(set) var problems: [String] = []

    init(_ environment: [String: String]) {
        self.environment = environment
    }

    func text(_ name: String) -> String? {
        environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A whole number within `range`.
    mutating func number(_ name: String, in range: ClosedRange<Int>) -> Int? {
        guard let text = text(name) else { return nil }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
            problems.append("\(name) is '\(text)': expected a whole number from \(range.lowerBound) to \(range.upperBound)")
            return nil
        }
        return value
    }

    /// Milliseconds, a whole number within `range`.
    mutating func milliseconds(_ name: String, in range: ClosedRange<Int>) -> Duration? {
        number(name, in: range).map { .milliseconds($0) }
    }

    /// An interval: seconds with an optional unit (`3600`, `90s`, `15m`, `1h`); with `offAllowed`,
    /// `off` or `0` for none (`.some(nil)`).
    mutating func interval(_ name: String, offAllowed: Bool = false) -> Duration?? {
        guard let text = text(name) else { return nil }
        let value = text.trimmingCharacters(in: .whitespaces).lowercased()
        if offAllowed, value == "off" || value == "0" { return .some(nil) }
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600]
        let (digits, unit) = units[value.last ?? " "].map { (value.dropLast(), $0) } ?? (Substring(value), 1)
        guard let number = Int(digits), number > 0 else {
            problems.append("\(name) is '\(text)': expected seconds such as 3600, 90s, 15m or 1h" + (offAllowed ? ", or off" : ""))
            return nil
        }
        return .some(.seconds(number * unit))
    }

    /// One of `choices` (their raw values).
    mutating func choice<Choice: RawRepresentable & CaseIterable>(_ name: String, of type: Choice.Type) -> Choice? where Choice.RawValue == String {
        guard let text = text(name) else { return nil }
        guard let value = Choice(rawValue: text.lowercased()) else {
            problems.append("\(name) is '\(text)': expected one of \(Choice.allCases.map(\.rawValue).joined(separator: ", "))")
            return nil
        }
        return value
    }

    /// A secrets key from `name` (base64 of 32 bytes) or from the file `name_FILE` names (what a
    /// secret manager mounts); both set is a mistake, said as one.
    mutating func secretsKey(_ name: String) -> SecretsKey? {
        let fileName = name + "_FILE"
        switch (text(name), text(fileName)) {
        case (nil, nil):
            return nil
        case (.some, .some):
            problems.append("\(name) and \(fileName) are both set: set one")
            return nil
        case (let value?, nil):
            do { return try SecretsKey(base64: value) } catch {
                problems.append("\(name) is not a usable key: \(error)") // never the value: it is a secret
                return nil
            }
        case (nil, let path?):
            do { return try SecretsKey(file: URL(fileURLWithPath: path)) } catch {
                problems.append("\(fileName) (\(path)) does not hold a usable key: \(error)")
                return nil
            }
        }
    }

    /// `true` or `false` (also `1`/`0`, `yes`/`no`).
    mutating func flag(_ name: String) -> Bool? {
        guard let text = text(name) else { return nil }
        switch text.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default:
            problems.append("\(name) is '\(text)': expected true or false")
            return nil
        }
    }
}

/// Settings that could not be read, each naming its variable and what it expects.
struct ConfigurationError: Error, CustomStringConvertible {
    var problems: [String]
    var description: String {
        "the environment sets the ledger up wrongly (docs/configuration.md lists every variable):\n" + problems.map { "  - " + $0 }.joined(separator: "\n")
    }
}
