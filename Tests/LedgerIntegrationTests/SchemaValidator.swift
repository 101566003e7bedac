import Foundation
import LedgerAccess

/// The subset of JSON Schema (2020-12, as OpenAPI 3.1 uses it) our document uses: type (one or
/// several), required, properties, additionalProperties, items, enum, format date-time, $ref.
/// Returns every violation with its path, so a failing test says exactly what disagrees.
struct SchemaValidator {
    let document: [String: Any]

    func schema(path: String, method: String, status: Int) -> [String: Any]? {
        let paths = document["paths"] as? [String: Any]
        let operation = (paths?[path] as? [String: Any])?[method.lowercased()] as? [String: Any]
        let response = (operation?["responses"] as? [String: Any])?[String(status)] as? [String: Any]
        return ((response?["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"] as? [String: Any]
    }

    func violations(of value: Any, against schema: [String: Any], at path: String = "$") -> [String] {
        if let reference = schema["$ref"] as? String {
            let name = String(reference.split(separator: "/").last!)
            let resolved = ((document["components"] as? [String: Any])?["schemas"] as? [String: Any])?[name] as? [String: Any] ?? [:]
            return violations(of: value, against: resolved, at: path)
        }
        var problems: [String] = []
        if let types = schema["type"].map({ ($0 as? [String]) ?? [$0 as! String] }), !types.contains(where: { Self.matches(value, $0) }) {
            return ["\(path): \(Self.describe(value)) is not \(types.joined(separator: "|"))"]
        }
        if let allowed = schema["enum"] as? [String], let text = value as? String, !allowed.contains(text) {
            problems.append("\(path): \(text) is not one of \(allowed)")
        }
        if schema["format"] as? String == "date-time", let text = value as? String,
            (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)) == nil,
            (try? Date.ISO8601FormatStyle().parse(text)) == nil
        {
            problems.append("\(path): \(text) is not RFC 3339")
        }
        if let object = value as? [String: Any] {
            for name in schema["required"] as? [String] ?? [] where object[name] == nil { problems.append("\(path): missing \(name)") }
            let properties = schema["properties"] as? [String: Any] ?? [:]
            for (name, child) in object {
                if let property = properties[name] as? [String: Any] {
                    problems += violations(of: child, against: property, at: "\(path).\(name)")
                } else if let additional = schema["additionalProperties"] as? [String: Any] {
                    problems += violations(of: child, against: additional, at: "\(path).\(name)")
                } else if schema["additionalProperties"] as? Bool == false {
                    problems.append("\(path): undocumented property \(name)")
                }
            }
        }
        if let array = value as? [Any], let items = schema["items"] as? [String: Any] {
            for (index, element) in array.enumerated() { problems += violations(of: element, against: items, at: "\(path)[\(index)]") }
        }
        return problems
    }

    static func matches(_ value: Any, _ type: String) -> Bool {
        switch type {
        case "null": return value is NSNull
        case "object": return value is [String: Any]
        case "array": return value is [Any]
        case "string": return value is String
        case "boolean": return isBool(value)
        case "integer": return !isBool(value) && (value as? NSNumber).map { $0.doubleValue == $0.doubleValue.rounded() } == true
        case "number": return !isBool(value) && value is NSNumber
        default: return false
        }
    }

    /// JSONSerialization gives booleans as NSNumber on Linux too; tell them apart by their type.
    static func isBool(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return value is Bool }
        return String(cString: number.objCType) == "c" || type(of: value) == Bool.self || "\(type(of: number))".contains("Bool")
    }

    static func describe(_ value: Any) -> String { "\(value)".prefix(60).description }
}
