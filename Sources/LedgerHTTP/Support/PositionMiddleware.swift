import HTTPTypes
import Hummingbird
import LedgerCore
import LedgerFormats

/// Read-your-writes across servers and replicas, for clients that want it: a write's answer
/// carries `Ledger-Position` (the log position it reflects, `WrittenPosition`), and a read that
/// sends it back as `Ledger-Read-After` is answered only from a node that has applied it —
/// whichever server or replica it reaches. Without the header a server still answers each
/// client's reads after its own writes; the header covers the hop to another server.
struct PositionMiddleware<Context: RequestContext>: RouterMiddleware {
    static var responseHeader: HTTPField.Name { HTTPField.Name("Ledger-Position")! }
    static var requestHeader: HTTPField.Name { HTTPField.Name("Ledger-Read-After")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let written = WrittenPosition()
        var response = try await WrittenPosition.$current.withValue(written) { try await next(request, context) }
        if let position = written.position { response.headers[Self.responseHeader] = position.description }
        return response
    }

    /// The position a read must reflect, from its `Ledger-Read-After` header.
    static func readAfter(_ request: Request) throws -> LogPosition? {
        guard let text = request.headers[requestHeader] else { return nil }
        guard let position = LogPosition(text) else {
            throw LedgerError(.invalidPosition, "Ledger-Read-After is the Ledger-Position of an earlier answer, e.g. 1234.5678")
        }
        return position
    }
}
