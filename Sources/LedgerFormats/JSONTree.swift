import Foundation

/// A parsed JSON document: what `StorageDecoder` decodes from, and a canonical form to compare
/// two texts of the same value by (`sortingKeys()`, `write(into:)`).
///
/// Why not Foundation's coders: a rebuild decodes a million stored events and encodes tens of
/// thousands of timelines, and `JSONDecoder` / `JSONEncoder` cost ~10 µs an event and ~240 µs a
/// timeline there (a `perf` profile of `ledger-bench rebuild` put them above everything else).
/// Stored JSON is ours and simple; a tree of small values and a Codable bridge over it do the
/// same work several times faster (timelines are written by `TimelineJSON`). Numbers keep their
/// text until a field asks for a type.
package enum JSONTree: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONTree])
    case object([(String, JSONTree)])

    package static func == (lhs: JSONTree, rhs: JSONTree) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    package struct SyntaxError: Error, CustomStringConvertible {
        package let offset: Int
        package let reason: String
        package var description: String { "malformed JSON at byte \(offset): \(reason)" }
    }

    /// Parses a whole document (RFC 8259; whitespace as PostgreSQL's jsonb prints it is fine).
    package static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws -> JSONTree {
        var parser = Parser(bytes: bytes)
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw parser.error("trailing characters") }
        return value
    }

    package static func parse(_ data: Data) throws -> JSONTree {
        try data.withUnsafeBytes { try parse($0.bindMemory(to: UInt8.self)) }
    }

    package static func parse(_ text: String) throws -> JSONTree {
        var text = text
        return try text.withUTF8 { try parse($0) }
    }

    /// The value of `key` among an object's members. Objects here are small (a stored fact has
    /// ~20 fields): a linear scan beats hashing, and comparing lengths first skips most full
    /// string comparisons.
    package static func member(_ key: String, of members: [(String, JSONTree)]) -> JSONTree? {
        let length = key.utf8.count
        for (candidate, value) in members where candidate.utf8.count == length && candidate == key { return value }
        return nil
    }

    /// The same document with every object's keys in order: a canonical form, so two texts of
    /// the same value (ours, and PostgreSQL's printing of it) compare equal once rewritten.
    package func sortingKeys() -> JSONTree {
        switch self {
        case .array(let items): .array(items.map { $0.sortingKeys() })
        case .object(let members): .object(members.map { ($0.0, $0.1.sortingKeys()) }.sorted { $0.0 < $1.0 })
        default: self
        }
    }

    /// The document as compact JSON text.
    package func write(into out: inout [UInt8]) {
        switch self {
        case .null: out += "null".utf8
        case .bool(let value): out += (value ? "true" : "false").utf8
        case .number(let text): out += text.utf8
        case .string(let text): Self.writeString(text, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A finite double as JSON: integral values as integers (what JSONEncoder writes, e.g. dates
    /// in milliseconds), others in Swift's shortest round-tripping form, so decoding gives back
    /// the same bits.
    package static func numberText(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 { return String(Int64(value)) }
        return "\(value)"
    }

    /// Runs of bytes that need no escape are appended whole: a timeline is mostly such runs.
    package static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var start = 0
            for index in bytes.indices {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                out += UnsafeBufferPointer(rebasing: bytes[start..<index])
                start = index + 1
                switch byte {
                case UInt8(ascii: "\""): out += #"\""#.utf8
                case UInt8(ascii: "\\"): out += #"\\"#.utf8
                case 0x0A: out += #"\n"#.utf8
                case 0x0D: out += #"\r"#.utf8
                case 0x09: out += #"\t"#.utf8
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    out += #"\u00"#.utf8
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0x0F)])
                }
            }
            out += UnsafeBufferPointer(rebasing: bytes[start...])
        }
        out.append(UInt8(ascii: "\""))
    }
}

private struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    static let maximumDepth = 512

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    func error(_ reason: String) -> JSONTree.SyntaxError { JSONTree.SyntaxError(offset: index, reason: reason) }

    mutating func skipSpace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
    }

    mutating func value(depth: Int) throws -> JSONTree {
        guard depth < Self.maximumDepth else { throw error("nested too deeply") }
        skipSpace()
        guard index < bytes.count else { throw error("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count, memcmp(bytes.baseAddress! + index, word.utf8Start, count) == 0 else {
            throw error("bad literal")
        }
        index += count
    }

    mutating func object(depth: Int) throws -> JSONTree {
        index += 1
        var members: [(String, JSONTree)] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key") }
            let key = try string()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            members.append((key, try value(depth: depth + 1)))
            skipSpace()
            guard index < bytes.count else { throw error("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
            throw error("expected ',' or '}'")
        }
    }

    mutating func array(depth: Int) throws -> JSONTree {
        index += 1
        var items: [JSONTree] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
        while true {
            items.append(try value(depth: depth + 1))
            skipSpace()
            guard index < bytes.count else { throw error("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            throw error("expected ',' or ']'")
        }
    }

    mutating func number() throws -> String {
        let start = index
        while index < bytes.count, case let byte = bytes[index],
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
        {
            index += 1
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    /// A string starting at the opening quote; escapes are rare in stored JSON, so the plain case
    /// is one copy of the bytes.
    mutating func string() throws -> String {
        index += 1
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
            index += 1
        }
        throw error("unterminated string")
    }

    mutating func escapedString(from start: Int) throws -> String {
        var out = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { throw error("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) { // a surrogate pair
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw error("lone surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("bad surrogate pair") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw error("bad \\u escape") }
                    out += Array(String(Character(unicode)).utf8)
                default: throw error("bad escape")
                }
            default:
                out.append(byte)
            }
        }
        throw error("unterminated string")
    }

    mutating func hex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            index += 1
            let digit: UInt32 =
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw error("bad hex digit")
                }
            value = value << 4 | digit
        }
        return value
    }
}
