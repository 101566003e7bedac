import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// What the ledger asks Apple on a caller's behalf (App Store Server API): a restoring user's
/// whole history (scope `ingest`), and an order's transactions with who owns each (scope `read`:
/// support's "whose purchase is this?" from the order id on Apple's emailed receipt), and
/// renewal-date extensions (scope `admin`, in `AppleController+Extensions.swift`).
struct AppleController {
    let lookups: AppleLookups
    let audit: AuditLog

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.post("/apps/:bundle_id/users/:user_id/sync", use: sync)
        group.post("/apps/:bundle_id/subscriptions/:original_transaction_id/extend", use: extend)
        group.post("/apps/:bundle_id/products/:product_id/extend", use: extendAll)
        group.get("/apps/:bundle_id/products/:product_id/extend/:request_id", use: extensionStatus)
        group.get("/apps/:bundle_id/orders/:order_id", use: order)
    }

    /// A restoring user's whole history, asked of Apple from one of their transactions.
    @Sendable func sync(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.ingest)
        let body = try await JSONBody.decode(Wire.SyncRequest.self, from: request, context: context)
        let state = try await lookups.sync(bundleID: bundleID, userID: userID, transactionID: body.transaction_id)
        return JSONBody.response(bytes: Wire.userState(state))
    }

    /// An order's transactions as Apple lists them, each with the user who owns it here.
    @Sendable func order(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.read)
        let order = try await lookups.order(bundleID: bundleID, orderID: try context.parameters.require("order_id"))
        return try JSONBody.response(Wire.OrderBody(order))
    }
}
