import Foundation
import LedgerPostgres

/// Writes JSON string literals without Foundation's encoder: the append path builds one small
/// array per call, and an encoder allocation there shows up in the single-append benchmark.
enum JSONText {
    static func quoted(_ text: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count + 2)
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
        return String(decoding: out, as: UTF8.self)
    }

    /// The `p_events` argument of `ledger.append_events`: data and metadata as JSON strings.
    static func eventsArgument(_ events: [NewEvent]) -> String {
        var parts: [String] = []
        parts.reserveCapacity(events.count)
        for event in events {
            var object = "{\"id\":\"\(event.id.uuidString.lowercased())\",\"type\":\(quoted(event.type))"
            object += ",\"data\":\(quoted(event.data)),\"metadata\":\(quoted(event.metadata))"
            if let occurredAt = event.occurredAt { object += ",\"occurred_at\":\"\(PostgresTimestamp.format(occurredAt))\"" }
            parts.append(object + "}")
        }
        return "[" + parts.joined(separator: ",") + "]"
    }
}
