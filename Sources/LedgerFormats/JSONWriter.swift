import Foundation

/// The one way this package writes JSON by hand: straight into bytes, objects and arrays with
/// their commas, strings escaped once (`JSONTree.writeString`).
///
/// Why by hand: Foundation's `JSONEncoder` was most of the cost of a cached user-state answer and
/// ~240 µs a timeline in a rebuild (profiled); the appends' argument is built per call. Two kinds
/// of member: `key` + `value` write `null` for nil (API answers keep their fields), `field` skips
/// a nil (stored timelines stay small).
///
/// Its small members are `@inlinable`: the HTTP edge writes a user-state answer with some fifty
/// calls of them, and across a module boundary each would be an opaque call with its closure.
@frozen
package struct JSONWriter {
    /// The JSON written so far.
    package var bytes: [UInt8]
    @usableFromInline var needsComma = false

    @inlinable
    package init(bytes: [UInt8] = [], reservingCapacity capacity: Int = 0) {
        self.bytes = bytes
        self.bytes.reserveCapacity(capacity)
    }

    /// The bytes as text.
    package var text: String { String(decoding: bytes, as: UTF8.self) }

    @inlinable
    package mutating func object(_ body: (inout JSONWriter) -> Void) {
        enclosed(by: "{", "}", body)
    }

    @inlinable
    package mutating func array(_ body: (inout JSONWriter) -> Void) {
        enclosed(by: "[", "]", body)
    }

    /// An object or an array: what `body` writes inside the brackets is separated afresh, and the
    /// whole is one value to whatever follows it.
    @inlinable
    mutating func enclosed(by open: Unicode.Scalar, _ close: Unicode.Scalar, _ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: open))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: close))
        needsComma = true
    }

    /// A member holding an array of `items`, each written by `element`.
    @inlinable
    package mutating func array<T>(_ name: StaticString, _ items: [T], _ element: (inout JSONWriter, T) -> Void) {
        key(name)
        array { json in for item in items { element(&json, item) } }
    }

    /// A key inside an object; the next value written is its value.
    @inlinable
    package mutating func key(_ name: String) {
        separate()
        JSONTree.writeString(name, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A key known at compile time (no escaping, no allocation: the hot path of timelines).
    @inlinable
    package mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes += UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        bytes += "\":".utf8
        needsComma = false
    }

    @inlinable
    package mutating func value(_ text: String?) {
        separate()
        if let text { JSONTree.writeString(text, into: &bytes) } else { bytes += "null".utf8 }
        needsComma = true
    }

    @inlinable
    package mutating func value(_ number: Int64?) {
        separate()
        bytes += (number.map(String.init) ?? "null").utf8
        needsComma = true
    }

    @inlinable
    package mutating func value(_ flag: Bool?) {
        separate()
        bytes += (flag.map { $0 ? "true" : "false" } ?? "null").utf8
        needsComma = true
    }

    /// JSON text already written elsewhere (a stored document), inserted as it is.
    @inlinable
    package mutating func raw(_ json: String) {
        separate()
        bytes += json.utf8
        needsComma = true
    }

    @inlinable
    package mutating func field(_ name: StaticString, _ text: String?) {
        guard let text else { return }
        key(name)
        value(text)
    }

    @inlinable
    package mutating func field(_ name: StaticString, _ flag: Bool?) {
        guard let flag else { return }
        key(name)
        value(flag)
    }

    @inlinable
    package mutating func field(_ name: StaticString, _ number: Int64?) {
        guard let number else { return }
        key(name)
        value(number)
    }

    /// A date as milliseconds since 1970, as `LedgerEvent.encoder` stores dates.
    @inlinable
    package mutating func field(_ name: StaticString, _ date: Date?) {
        guard let date else { return }
        key(name)
        bytes += JSONTree.numberText(1000.0 * date.timeIntervalSince1970).utf8
        needsComma = true
    }

    /// `text` as a JSON string literal.
    package static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 2)
        JSONTree.writeString(text, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    @inlinable
    mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = false
    }
}
