import Foundation

/// A JSON object from Apple's legacy APIs, read the way they write it: numbers and booleans are
/// usually strings ("1", "true"), sometimes not; each date comes three ways and only the `_ms`
/// field is unambiguous. Unknown fields are ignored, never an error.
struct LegacyFields {
    let object: [String: Any]

    init(_ object: [String: Any]) { self.object = object }

    init?(_ value: Any?) {
        guard let object = value as? [String: Any] else { return nil }
        self.object = object
    }

    func string(_ key: String) -> String? {
        switch object[key] {
        case let text as String: text
        case let number as NSNumber: number.stringValue
        default: nil
        }
    }

    func int(_ key: String) -> Int? { string(key).flatMap { Int($0) } }

    func int64(_ key: String) -> Int64? { string(key).flatMap { Int64($0) } }

    /// "true"/"1" are true, "false"/"0" false; anything else is absent.
    func bool(_ key: String) -> Bool? {
        switch string(key)?.lowercased() {
        case "true", "1": true
        case "false", "0": false
        default: nil
        }
    }

    /// A date from `<name>_ms`; iOS 6-style receipts put milliseconds in `<name>` itself.
    func date(_ name: String) -> Date? {
        if let ms = int64(name + "_ms") { return Date(timeIntervalSince1970: Double(ms) / 1000) }
        if let ms = int64(name) { return Date(timeIntervalSince1970: Double(ms) / 1000) }
        return nil
    }

    /// An array of objects; a lone object (as some V1 notifications send) counts as one.
    func objects(_ key: String) -> [LegacyFields] {
        switch object[key] {
        case let list as [Any]: list.compactMap(LegacyFields.init)
        case let single as [String: Any]: [LegacyFields(single)]
        default: []
        }
    }
}
