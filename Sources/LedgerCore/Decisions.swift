/// Commands decide; events record. These are the two decisions that depend on state: who may own
/// a transaction, and whether a consumption is covered. Ingestion loads the state as the stream's
/// only writer, asks, and appends the answer in the same transaction.
package enum ClaimDecision: Sendable, Equatable {
    /// The user already owns it: nothing to record.
    case alreadyOwned
    case claim(Claim)
    case transfer(Transfer)
    /// `keep` policy and someone else owns it: refused with `transaction_owned_by_another_user`.
    case refused(owner: String)
}

package enum Decide {
    /// A user presented evidence of `originalTransactionID`.
    package static func claim(_ originalTransactionID: String, by userID: String, currentOwner: String?, policy: RestorePolicy) -> ClaimDecision {
        guard let currentOwner else { return .claim(Claim(originalTransactionID: originalTransactionID, userID: userID)) }
        if currentOwner == userID { return .alreadyOwned }
        switch policy {
        case .transfer: return .transfer(Transfer(originalTransactionID: originalTransactionID, fromUserID: currentOwner, toUserID: userID))
        case .keep: return .refused(owner: currentOwner)
        }
    }

    package enum ConsumptionRefusal: Error, Sendable, Equatable {
        case invalidAmount
        case insufficientBalance(currency: String, balance: Int64, requested: Int64)
    }

    /// A consumption may never take a balance below zero (a refund may; that is a recorded debt).
    package static func consumption(_ request: Consumption, balance: Int64) -> Result<Consumption, ConsumptionRefusal> {
        guard request.amount > 0, !request.currency.isEmpty else { return .failure(.invalidAmount) }
        guard balance >= request.amount else {
            return .failure(.insufficientBalance(currency: request.currency, balance: balance, requested: request.amount))
        }
        return .success(request)
    }
}
