import Foundation
import Hummingbird

/// An `application/x-www-form-urlencoded` body.
struct Form {
    private var fields: [String: String] = [:]

    init<Context: RequestContext>(_ request: Request, _ context: Context) async throws {
        let body = try await request.body.collect(upTo: 64 * 1024)
        var components = URLComponents()
        components.percentEncodedQuery = String(buffer: body).replacingOccurrences(of: "+", with: "%20")
        for item in components.queryItems ?? [] where fields[item.name] == nil { fields[item.name] = item.value ?? "" }
    }

    subscript(_ name: String) -> String? { fields[name] }
}
