import Foundation

/// A value that can be bound as a query parameter, in PostgreSQL's text format.
///
/// Every query is parameterised: SQL text is always a constant and values travel separately,
/// so no input can change what a statement does.
package protocol PostgresBindable: Sendable {
    var postgresText: String { get }
}

extension String: PostgresBindable { package var postgresText: String { self } }
extension Substring: PostgresBindable { package var postgresText: String { String(self) } }
extension Int: PostgresBindable { package var postgresText: String { String(self) } }
extension Int64: PostgresBindable { package var postgresText: String { String(self) } }
extension Int32: PostgresBindable { package var postgresText: String { String(self) } }
extension UInt64: PostgresBindable { package var postgresText: String { String(self) } }
extension Double: PostgresBindable { package var postgresText: String { String(self) } }
extension Bool: PostgresBindable { package var postgresText: String { self ? "t" : "f" } }
extension UUID: PostgresBindable { package var postgresText: String { uuidString.lowercased() } }

extension Date: PostgresBindable {
    /// RFC 3339 with microseconds and an explicit UTC offset: exact and unambiguous for `timestamptz`.
    package var postgresText: String { PostgresTimestamp.format(self) }
}

/// `bytea` parameters in hex form.
package struct PostgresBytes: PostgresBindable, Hashable {
    package var bytes: [UInt8]
    package init(_ bytes: [UInt8]) { self.bytes = bytes }
    package var postgresText: String { "\\x" + Hex.encode(bytes) }
}

/// A `text[]` parameter, in PostgreSQL's array literal syntax with every element quoted.
package struct PostgresTextArray: PostgresBindable {
    package var elements: [String]
    package init(_ elements: [String]) { self.elements = elements }
    package var postgresText: String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(elements.reduce(2) { $0 + $1.utf8.count + 3 })
        for (index, element) in elements.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            Self.appendQuoted(element, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// One element, quoted, with `"` and `\` escaped — on the UTF-8 bytes, the runs between
    /// escapes appended whole: Foundation's `replacingOccurrences` went through UTF-16 and was the
    /// top of an ingestion profile, and a byte-by-byte append was still 1 % of it at 32
    /// connections (timelines and evidence bodies are kilobytes travelling in these arrays).
    static func appendQuoted(_ element: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var element = element
        element.withUTF8 { bytes in
            var start = 0
            for index in bytes.indices where bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "\\") {
                out += UnsafeBufferPointer(rebasing: bytes[start..<index])
                out.append(UInt8(ascii: "\\"))
                start = index // the escaped byte opens the next run
            }
            out += UnsafeBufferPointer(rebasing: bytes[start...])
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// A `text[]` (or, cast, any array) parameter whose elements may be NULL.
package struct PostgresNullableTextArray: PostgresBindable {
    package var elements: [String?]
    package init(_ elements: [String?]) { self.elements = elements }
    package var postgresText: String {
        "{"
            + elements.map { element in
                guard let element else { return "NULL" }
                var out: [UInt8] = []
                PostgresTextArray.appendQuoted(element, to: &out)
                return String(decoding: out, as: UTF8.self)
            }.joined(separator: ",") + "}"
    }
}

/// Hexadecimal text, as PostgreSQL prints `bytea` and as digests are shown to people.
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes `abcd…` or PostgreSQL's `\xabcd…`. Nil for anything that is not even-length hex.
    package static func decode(_ text: String) -> [UInt8]? {
        var utf8 = Substring(text).utf8
        if utf8.starts(with: "\\x".utf8) { utf8 = utf8.dropFirst(2) }
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var high: UInt8?
        for char in utf8 {
            guard let nibble = nibble(char) else { return nil }
            if let h = high { out.append(h << 4 | nibble); high = nil } else { high = nibble }
        }
        return out
    }

    /// One hex digit's value, either case; nil for anything else.
    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
