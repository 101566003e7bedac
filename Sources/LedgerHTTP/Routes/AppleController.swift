import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// What the ledger asks Apple on a caller's behalf (App Store Server API): a restoring user's
/// whole history (scope `ingest`), and an order's transactions with who owns each (scope `read`:
/// support's "whose purchase is this?" from the order id on Apple's emailed receipt).
struct AppleController {
    let lookups: AppleLookups
    let audit: AuditLog

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.post("/apps/:bundle_id/users/:user_id/sync") { request, context in
            let (bundleID, userID) = try context.appAndUser(.ingest)
            let body = try await JSONBody.decode(Wire.SyncRequest.self, from: request, context: context)
            let state = try await lookups.sync(bundleID: bundleID, userID: userID, transactionID: body.transaction_id)
            return JSONBody.response(bytes: Wire.userState(state))
        }
        registerExtensions(on: group)
        group.get("/apps/:bundle_id/orders/:order_id") { _, context in
            let bundleID = try context.app(.read)
            let order = try await lookups.order(bundleID: bundleID, orderID: try context.parameters.require("order_id"))
            return try JSONBody.response(Wire.OrderBody(order))
        }
    }
}
