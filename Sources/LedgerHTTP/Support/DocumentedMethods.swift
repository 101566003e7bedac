import Foundation

/// Which methods each path of the API description answers, read from the description itself:
/// a request for a documented path with a method it does not answer gets 405 and `Allow`, as
/// HTTP says, where the router alone would say 404 — the path does exist.
enum DocumentedMethods {
    /// Each path as segments (nil: a `{parameter}`), with its methods in upper case.
    static let paths: [(segments: [String?], methods: [String])] = {
        guard let document = try? JSONSerialization.jsonObject(with: OpenAPIDocument.data) as? [String: Any],
            let paths = document["paths"] as? [String: [String: Any]]
        else { return [] }
        let verbs: Set = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]
        return paths.map { path, operations in
            let segments = path.split(separator: "/").map { $0.hasPrefix("{") ? nil : String($0) }
            return (segments, operations.keys.filter(verbs.contains).map { $0.uppercased() }.sorted())
        }
    }()

    /// The methods `path` answers, or nil when the description has no such path.
    static func allowed(for path: String) -> [String]? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        let matching = paths.filter { documented in
            documented.segments.count == parts.count && zip(documented.segments, parts).allSatisfy { $0 == nil || $0! == $1 }
        }
        return matching.isEmpty ? nil : Array(Set(matching.flatMap(\.methods))).sorted()
    }
}
