/// A short name for a statement that says what it does and never what it was given: its verb and
/// the first of our objects it names ("SELECT ledger.events", "INSERT ledger.changes",
/// "SELECT ledger.append_streams"). Spans are named by it: a trace shows which statement took the
/// time, and a statement's parameters (user ids, tokens, evidence) never leave the process.
package enum StatementSummary {
    package static func of(_ sql: String) -> String {
        let verb = sql.drop { $0.isWhitespace }.prefix { $0.isLetter }.uppercased()
        guard let object = firstObject(in: sql) else { return verb.isEmpty ? "statement" : verb }
        return verb.isEmpty ? object : "\(verb) \(object)"
    }

    /// The first `ledger.<name>` or `pg_<name>` in the text: the table, view or function it is about.
    private static func firstObject(in sql: String) -> String? {
        let utf8 = Array(sql.utf8)
        let prefixes: [[UInt8]] = [Array("ledger.".utf8), Array("pg_".utf8)]
        var index = 0
        while index < utf8.count {
            for prefix in prefixes where utf8[index...].starts(with: prefix) {
                let startsWord = index == 0 || !isNamePart(utf8[index - 1])
                guard startsWord else { continue }
                var end = index + prefix.count
                while end < utf8.count, isNamePart(utf8[end]) { end += 1 }
                if end > index + prefix.count { return String(decoding: utf8[index..<end], as: UTF8.self) }
            }
            index += 1
        }
        return nil
    }

    private static func isNamePart(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "_") || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }
}
