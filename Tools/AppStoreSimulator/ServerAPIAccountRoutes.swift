import Foundation
import Hummingbird

/// The App Store Server API's endpoints about a customer's account rather than one purchase
/// history, by Apple's paths and with Apple's shapes and errors.
extension ServerAPISimulator {
    static let noAppTransaction = ScriptedError(status: 404, body: ["errorCode": 4_040_019, "errorMessage": "No AppTransaction exists for the customer."])

    func registerAccountRoutes(on router: Router<BasicRequestContext>) {
        // Get App Transaction Info: the app bought on the account of any of the customer's transactions.
        router.get("/:endpoint/inApps/v1/transactions/appTransactions/:id") { request, context in
            try self.answer(request, context) { store, id in
                guard let customer = store.customers[id] else { throw Self.notFound }
                guard let appTransaction = store.appTransactions[customer] else { throw Self.noAppTransaction }
                return ["signedAppTransactionInfo": try store.app.signedAppTransaction(appTransaction)]
            }
        }
    }
}
