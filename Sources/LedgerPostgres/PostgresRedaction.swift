import Foundation

/// Takes the values a statement was given out of the server's texts before anyone sees them.
///
/// PostgreSQL quotes input in a few known places — `invalid input syntax for type uuid: "…"`,
/// `Key (col)=(…) already exists`, `Failing row contains (…)`, `Token "…" is invalid` — and a
/// message may repeat a bound value anywhere. Both are removed; identifiers (`role "ledger_app"
/// does not exist`) stay, because they are what an operator needs to act. The ledger's own
/// errors (SQLSTATE `LE…`, raised by schema/ functions) carry versions and event ids on purpose
/// and are left as they are.
enum PostgresRedaction {
    static let placeholder = "…"

    /// Redacts a server error's message and detail; `parameters` are the bound values' texts.
    static func redact(_ error: PostgresError, parameters: [String?] = []) -> PostgresError {
        guard !(error.sqlState ?? "").hasPrefix("LE") else { return error }
        var copy = error
        copy.message = scrub(quotedInput(in: error.message), parameters: parameters)
        copy.detail = error.detail.map { scrub(valueLists(in: $0), parameters: parameters) }
        return copy
    }

    /// Every bound value of four or more characters, wherever the server repeated it.
    static func scrub(_ text: String, parameters: [String?]) -> String {
        var text = text
        for (index, value) in parameters.enumerated() {
            guard let value, value.utf8.count >= 4, text.contains(value) else { continue }
            text = text.replacingOccurrences(of: value, with: "$\(index + 1)")
        }
        return text
    }

    /// `…: "value"` at the end of a message (invalid input, malformed literals).
    static func quotedInput(in message: String) -> String {
        guard let colon = message.range(of: ": \"", options: .backwards) else { return message }
        return message[..<colon.upperBound] + placeholder + "\""
    }

    /// `Key (columns)=(values) …`, `Failing row contains (values).` and `Token "value" is invalid.`
    static func valueLists(in detail: String) -> String {
        var detail = detail
        if let start = detail.range(of: ")=("), let end = detail.range(of: ")", options: .backwards), start.upperBound <= end.lowerBound {
            detail.replaceSubrange(start.upperBound..<end.lowerBound, with: placeholder)
        }
        if let start = detail.range(of: "Failing row contains ("), let end = detail.range(of: ")", options: .backwards),
            start.upperBound <= end.lowerBound
        {
            detail.replaceSubrange(start.upperBound..<end.lowerBound, with: placeholder)
        }
        if let start = detail.range(of: "Token \""), let end = detail.range(of: "\" is invalid"), start.upperBound <= end.lowerBound {
            detail.replaceSubrange(start.upperBound..<end.lowerBound, with: placeholder)
        }
        return detail
    }
}
