import Configuration
import Foundation

/// Reads settings through swift-configuration's `ConfigReader` by the ledger's rules, which are
/// stricter than its typed accessors: `reader.int(forKey:)` answers nil for `80a`, as if it were
/// unset, and `LEDGER_PORT=80a` would start a server on 8080. So values are read as text through
/// the reader (a provider's secrets and any access reporter still see every read) and parsed here:
/// a value that does not parse is a problem naming its key and what was expected; every problem is
/// kept, so an operator fixes them all in one go; absent or empty means the default.
package struct SettingsReader {
    /// The reader the keys given to this one are relative to.
    package let reader: ConfigReader
    /// Where `reader` sits below the reader problems are reported against.
    let scope: [String]
    package private(set) var problems: [SettingProblem] = []

    /// Reads keys relative to `reader` (a part's `init(reader:)`, handed a scoped reader).
    package init(_ reader: ConfigReader) {
        self.reader = reader
        self.scope = []
    }

    /// Reads keys under `scope` of `reader`; problems keep the scope in their keys, so the one who
    /// built `reader` can name them.
    package init(_ reader: ConfigReader, scope: ConfigKey) {
        self.reader = reader.scoped(to: scope)
        self.scope = scope.components
    }

    /// The text of `key`, nil when absent or empty. A secret (a password in a URL, a key) is marked
    /// so, and an access reporter or a provider's description shows it redacted.
    package func text(_ key: ConfigKey, isSecret: Bool = false) -> String? {
        reader.string(forKey: key, isSecret: isSecret).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Comma-separated values, blanks dropped; none when absent.
    package func list(_ key: ConfigKey, isSecret: Bool = false) -> [String] {
        Self.list(text(key, isSecret: isSecret))
    }

    /// Comma-separated values, blanks dropped (also a flag's value).
    package static func list(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// A whole number within `range`.
    package mutating func number(_ key: ConfigKey, in range: ClosedRange<Int>) -> Int? {
        guard let text = text(key) else { return nil }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
            report(key, "is '\(text)': expected a whole number from \(range.lowerBound) to \(range.upperBound)")
            return nil
        }
        return value
    }

    /// Milliseconds, a whole number within `range`.
    package mutating func milliseconds(_ key: ConfigKey, in range: ClosedRange<Int>) -> Duration? {
        number(key, in: range).map { .milliseconds($0) }
    }

    /// An interval: seconds with an optional unit (`3600`, `90s`, `15m`, `1h`).
    package mutating func interval(_ key: ConfigKey) -> Duration? {
        interval(key, offAllowed: false) ?? nil
    }

    /// An interval, or `off` (also `0`) for none: `.some(nil)`; nil when absent.
    package mutating func intervalOrOff(_ key: ConfigKey) -> Duration?? {
        interval(key, offAllowed: true)
    }

    private mutating func interval(_ key: ConfigKey, offAllowed: Bool) -> Duration?? {
        guard let text = text(key) else { return nil }
        let value = text.trimmingCharacters(in: .whitespaces).lowercased()
        if offAllowed, value == "off" || value == "0" { return .some(nil) }
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600]
        let (digits, unit) = units[value.last ?? " "].map { (value.dropLast(), $0) } ?? (Substring(value), 1)
        guard let number = Int(digits), number > 0 else {
            report(key, "is '\(text)': expected seconds such as 3600, 90s, 15m or 1h" + (offAllowed ? ", or off" : ""))
            return nil
        }
        return .some(.seconds(number * unit))
    }

    /// One of `Choice`'s cases, by raw value in any case.
    package mutating func choice<Choice: RawRepresentable & CaseIterable>(_ key: ConfigKey, of type: Choice.Type) -> Choice?
    where Choice.RawValue == String {
        guard let text = text(key) else { return nil }
        guard let value = Choice(rawValue: text.lowercased()) else {
            report(key, "is '\(text)': expected one of \(Choice.allCases.map(\.rawValue).joined(separator: ", "))")
            return nil
        }
        return value
    }

    /// `true` or `false` (also `1`/`0`, `yes`/`no`).
    package mutating func flag(_ key: ConfigKey) -> Bool? {
        guard let text = text(key) else { return nil }
        switch text.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default:
            report(key, "is '\(text)': expected true or false")
            return nil
        }
    }

    /// A problem found by a reading of its own (a key in a file, two settings that contradict each
    /// other); `complaint` must not hold a secret's value.
    package mutating func report(_ keys: ConfigKey..., complaint: String) {
        problems.append(SettingProblem(keys: keys.map { ConfigKey(scope + $0.components, context: $0.context) }, complaint: complaint))
    }

    private mutating func report(_ key: ConfigKey, _ complaint: String) {
        report(key, complaint: complaint)
    }

    /// A part's settings, read by its `init(reader:)` under `scope` of this reader. Its problems are
    /// kept here with their keys from the top, and it is nil when it had any: the command stops.
    package mutating func part<Part>(_ scope: ConfigKey, _ read: (ConfigReader) throws(SettingsError) -> Part) -> Part? {
        do throws(SettingsError) {
            return try read(reader.scoped(to: scope))
        } catch {
            problems += error.problems.map { $0.under(self.scope + scope.components) }
            return nil
        }
    }

    /// Throws every problem found, if any; a part's `init(reader:)` ends with it.
    package func finish() throws(SettingsError) {
        guard problems.isEmpty else { throw SettingsError(problems: problems) }
    }
}
