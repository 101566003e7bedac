import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Delivers notifications to a ledger the way Apple does: a POST of the body, a retry when the
/// answer is outside 200–206 — plus what Apple also does in practice, redeliveries of the same
/// notification and deliveries out of signing order.
package struct NotificationSender: Sendable {
    let http: HTTPClient

    package init(http: HTTPClient = .shared) { self.http = http }

    /// POSTs one body; returns the HTTP status.
    package func send(_ body: Data, to url: String) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await http.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }

    /// Delivers every body `1 + redeliveries` times, in the given order or shuffled; returns the
    /// statuses in delivery order.
    package func deliver(_ bodies: [Data], to url: String, redeliveries: Int = 0, shuffled: Bool = false) async throws -> [Int] {
        var deliveries = bodies.flatMap { Array(repeating: $0, count: 1 + redeliveries) }
        if shuffled { deliveries.shuffle() }
        var statuses: [Int] = []
        for body in deliveries { statuses.append(try await send(body, to: url)) }
        return statuses
    }
}
