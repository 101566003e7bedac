/// Commands decide; events record. These are the two decisions that depend on state: who may own
/// a transaction, and whether a consumption is covered. Ingestion loads the state as the stream's
/// only writer, asks, and appends the answer in the same transaction.
package enum ClaimDecision: Sendable, Equatable {
    /// The user already owns it: nothing to record.
    case alreadyOwned
    case claim(Claim)
    case transfer(Transfer)
    /// Someone else owns it and the policy keeps it with them (`keep`, or `transfer_if_no_active`
    /// while it gives them something active): refused with `transaction_owned_by_another_user`.
    case refused(owner: String)
}

package enum Decide {
    /// A user presented evidence of `originalTransactionID`. `activeForOwner` says whether the
    /// purchase gives its current owner an active entitlement now; only `transfer_if_no_active`
    /// asks (callers may answer lazily: it is computed from the owner's history).
    package static func claim(
        _ originalTransactionID: String, by userID: String, currentOwner: String?, policy: RestorePolicy,
        activeForOwner: () -> Bool = { false }
    ) -> ClaimDecision {
        guard let currentOwner else { return .claim(Claim(originalTransactionID: originalTransactionID, userID: userID)) }
        if currentOwner == userID { return .alreadyOwned }
        let transfer = ClaimDecision.transfer(Transfer(originalTransactionID: originalTransactionID, fromUserID: currentOwner, toUserID: userID))
        switch policy {
        case .transfer: return transfer
        case .keep: return .refused(owner: currentOwner)
        case .transferIfNoActive: return activeForOwner() ? .refused(owner: currentOwner) : transfer
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
