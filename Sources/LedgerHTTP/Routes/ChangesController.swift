import Foundation
import Hummingbird
import LedgerAccess
import LedgerChanges
import LedgerCore
import LedgerIngestion

/// The change feed, `GET /v1/apps/{bundle_id}/changes`: changes in log order after a cursor, for
/// servers that cannot receive webhooks and to catch up after an outage; with `wait`, a long poll.
struct ChangesController {
    let directory: AppDirectory
    let feed: ChangeFeed

    static let longestWait = 30

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.get("/apps/:bundle_id/changes", use: changes)
    }

    @Sendable func changes(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.read)
        _ = try await directory.app(bundleID)
        let wait = try Self.wait(request)
        let page = try await feed.page(
            bundleID: bundleID, after: try request.cursor(), limit: try request.pageLimit(), wait: .seconds(wait))
        // The bodies are already JSON, exactly as webhooks deliver them: spliced, not re-encoded.
        var bytes = Array(#"{"changes":["#.utf8)
        for (index, body) in page.bodies.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += body.utf8
        }
        bytes += Array(#"],"next_after":\#(page.next)}"#.utf8)
        return JSONBody.response(bytes: bytes)
    }

    /// How long a long poll may wait for a change, in seconds; 0 (answer at once) when not given.
    static func wait(_ request: Request) throws -> Int {
        try request.uri.queryParameters["wait"].map { text -> Int in
            guard let seconds = Int(String(text)), (0...Self.longestWait).contains(seconds) else {
                throw LedgerError(.invalidWait, "wait is 0–\(Self.longestWait) seconds")
            }
            return seconds
        } ?? 0
    }
}
