import Foundation
import LedgerCore

/// Writes JSON straight into bytes, for the hot answers (a user's state): Foundation's
/// `JSONEncoder` was most of the cost of a cached user-state query (profiled).
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    private var needsComma = false

    init() { bytes.reserveCapacity(1024) }

    mutating func object(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    mutating func array(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A key inside an object; the next value written is its value.
    mutating func key(_ name: String) {
        separate()
        string(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    mutating func value(_ text: String?) {
        separate()
        if let text { string(text) } else { bytes += Array("null".utf8) }
        needsComma = true
    }

    mutating func value(_ number: Int64?) {
        separate()
        bytes += Array((number.map(String.init) ?? "null").utf8)
        needsComma = true
    }

    mutating func value(_ flag: Bool?) {
        separate()
        bytes += Array((flag.map { $0 ? "true" : "false" } ?? "null").utf8)
        needsComma = true
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = false
    }

    private mutating func string(_ text: String) {
        JSONTree.writeString(text, into: &bytes)
    }
}
