import Crypto
import Foundation

/// One line of a backfill file: a user of the app and how Apple knows their purchases.
package struct BackfillLine: Sendable, Equatable {
    package enum Reference: Sendable, Equatable {
        /// Any transaction id of the customer's (an original transaction id, typically).
        case transaction(String)
        /// A legacy app receipt (base64), for apps that kept receipts rather than ids.
        case receipt(String)
    }
    /// 1-based, counting the header of a CSV file: what an operator finds in an editor.
    package var number: Int
    package var userID: String
    package var reference: Reference

    /// What identifies the line's work across runs and files (a receipt by its digest).
    package init(number: Int, userID: String, reference: Reference) {
        self.number = number
        self.userID = userID
        self.reference = reference
    }

    package var key: String {
        switch reference {
        case .transaction(let id): "transaction:" + id
        case .receipt(let data): "receipt:sha256:" + SHA256.hash(data: Data(data.utf8)).map { String(format: "%02x", $0) }.joined()
        }
    }
}

/// Backfill files as operators export them from their own user tables: CSV with a header row
/// naming `user_id` and `original_transaction_id` or `receipt_data`, or JSON lines with those keys.
package enum BackfillFile {
    package struct Invalid: Error, CustomStringConvertible, Equatable {
        package var line: Int
        package var reason: String
        package var description: String { "line \(line): \(reason)" }
        package init(line: Int, reason: String) {
            self.line = line
            self.reason = reason
        }
    }

    /// Every line, or the first that cannot be read (nothing is imported from a file that is wrong).
    package static func parse(_ text: String) throws -> [BackfillLine] {
        let rows = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
        let firstContent = rows.first { !$0.trimmingCharacters(in: .whitespaces).isEmpty } ?? ""
        return firstContent.trimmingCharacters(in: .whitespaces).hasPrefix("{") ? try jsonLines(rows) : try csv(rows)
    }

    static func jsonLines(_ rows: [String]) throws -> [BackfillLine] {
        try rows.enumerated().compactMap { index, row in
            guard !row.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
            guard let object = try? JSONSerialization.jsonObject(with: Data(row.utf8)) as? [String: Any] else {
                throw Invalid(line: index + 1, reason: "not a JSON object")
            }
            return try line(
                index + 1, user: object["user_id"] as? String,
                transaction: (object["original_transaction_id"] ?? object["transaction_id"]).map { "\($0)" },
                receipt: object["receipt_data"] as? String)
        }
    }

    static func csv(_ rows: [String]) throws -> [BackfillLine] {
        guard let header = rows.first.map(fields) else { return [] }
        guard let user = header.firstIndex(of: "user_id") else { throw Invalid(line: 1, reason: "the header names no user_id column") }
        let transaction = header.firstIndex(of: "original_transaction_id") ?? header.firstIndex(of: "transaction_id")
        let receipt = header.firstIndex(of: "receipt_data")
        guard transaction != nil || receipt != nil else {
            throw Invalid(line: 1, reason: "the header names neither original_transaction_id nor receipt_data")
        }
        return try rows.enumerated().dropFirst().compactMap { index, row in
            guard !row.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
            let values = fields(row)
            func value(_ column: Int?) -> String? {
                column.flatMap { $0 < values.count ? values[$0] : nil }.flatMap { $0.isEmpty ? nil : $0 }
            }
            return try line(index + 1, user: value(user), transaction: value(transaction), receipt: value(receipt))
        }
    }

    static func line(_ number: Int, user: String?, transaction: String?, receipt: String?) throws -> BackfillLine {
        guard let user, !user.isEmpty else { throw Invalid(line: number, reason: "user_id is missing") }
        if let transaction, !transaction.isEmpty { return BackfillLine(number: number, userID: user, reference: .transaction(transaction)) }
        if let receipt, !receipt.isEmpty { return BackfillLine(number: number, userID: user, reference: .receipt(receipt)) }
        throw Invalid(line: number, reason: "neither original_transaction_id nor receipt_data is given")
    }

    /// RFC 4180 fields of one row: commas separate, double quotes enclose, "" is a quote.
    static func fields(_ row: String) -> [String] {
        var fields: [String] = []
        var current = ""
        var quoted = false
        var iterator = row.makeIterator()
        while let character = iterator.next() {
            switch (character, quoted) {
            case ("\"", true):
                if let next = iterator.next() {
                    if next == "\"" {
                        current.append("\"")
                    } else {
                        quoted = false; if next == "," { fields.append(current); current = "" } else { current.append(next) }
                    }
                } else {
                    quoted = false
                }
            case ("\"", false) where current.isEmpty: quoted = true
            case (",", false): fields.append(current); current = ""
            default: current.append(character)
            }
        }
        fields.append(current)
        return fields.map { $0.trimmingCharacters(in: .whitespaces) }
    }
}
