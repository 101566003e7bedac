import Foundation

/// The rows of one result, copied out of libpq's `PGresult` so it can cross threads.
package struct PostgresRows: Sendable, RandomAccessCollection {
    package let columns: [String]
    let cells: [String?]
    /// Rows touched by INSERT/UPDATE/DELETE (`PQcmdTuples`), 0 otherwise.
    package let affectedRows: Int

    /// No rows (what a statement that was not sent returned).
    package init() { self.init(columns: [], cells: [], affectedRows: 0) }

    init(columns: [String], cells: [String?], affectedRows: Int) {
        self.columns = columns
        self.cells = cells
        self.affectedRows = affectedRows
    }

    package var startIndex: Int { 0 }
    package var endIndex: Int { columns.isEmpty ? 0 : cells.count / columns.count }
    package subscript(position: Int) -> PostgresRow {
        PostgresRow(rows: self, offset: position * columns.count)
    }
}

/// One row; cells are read by column index or by name.
package struct PostgresRow: Sendable {
    let rows: PostgresRows
    let offset: Int

    package subscript(index: Int) -> PostgresCell {
        PostgresCell(column: rows.columns[index], text: rows.cells[offset + index])
    }

    package subscript(name: String) -> PostgresCell {
        guard let index = rows.columns.firstIndex(of: name) else {
            return PostgresCell(column: name, text: nil, missing: true)
        }
        return self[index]
    }
}

/// A single value in text format, with typed accessors that throw `.decoding` on bad input.
package struct PostgresCell: Sendable {
    package let column: String
    package let text: String?
    var missing = false

    package var isNull: Bool { text == nil }

    package func string() throws -> String { try value() }
    package func optionalString() -> String? { text }

    package func int64() throws -> Int64 {
        let raw = try value()
        guard let parsed = Int64(raw) else { throw failure("an integer") }
        return parsed
    }

    package func int() throws -> Int { Int(try int64()) }

    package func uint64() throws -> UInt64 {
        let raw = try value()
        guard let parsed = UInt64(raw) else { throw failure("an unsigned integer") }
        return parsed
    }

    package func bool() throws -> Bool {
        switch try value() {
        case "t", "true": return true
        case "f", "false": return false
        default: throw failure("a boolean")
        }
    }

    package func uuid() throws -> UUID {
        let raw = try value()
        guard let parsed = Self.canonicalUUID(raw) ?? UUID(uuidString: raw) else { throw failure("a UUID") }
        return parsed
    }

    /// PostgreSQL's text form of a uuid (36 characters, hyphens at 8, 13, 18 and 23), read from the
    /// bytes: Foundation's parser on Linux goes through `sscanf`, 1 % of the machine's CPU at 32
    /// ingestion connections (every event read back has an id). Anything else: nil.
    package static func canonicalUUID(_ text: String) -> UUID? {
        var text = text
        return text.withUTF8 { bytes -> UUID? in
            guard bytes.count == 36 else { return nil }
            var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let complete = withUnsafeMutableBytes(of: &uuid) { octets -> Bool in
                var index = 0, octet = 0
                while index < 36 {
                    if index == 8 || index == 13 || index == 18 || index == 23 {
                        guard bytes[index] == UInt8(ascii: "-") else { return false }
                        index += 1
                        continue
                    }
                    guard let high = Hex.nibble(bytes[index]), let low = Hex.nibble(bytes[index + 1]) else { return false }
                    octets[octet] = high << 4 | low
                    octet += 1
                    index += 2
                }
                return true
            }
            return complete ? UUID(uuid: uuid) : nil
        }
    }

    package func date() throws -> Date {
        guard let parsed = PostgresTimestamp.parse(try value()) else { throw failure("a timestamp") }
        return parsed
    }

    package func bytes() throws -> [UInt8] {
        guard let parsed = Hex.decode(try value()) else { throw failure("bytea") }
        return parsed
    }

    private func value() throws -> String {
        guard let text else {
            throw PostgresError(code: .decoding, message: missing ? "no column \(column)" : "column \(column) is NULL")
        }
        return text
    }

    private func failure(_ expected: String) -> PostgresError {
        PostgresError(code: .decoding, message: "column \(column) is not \(expected)")
    }
}
