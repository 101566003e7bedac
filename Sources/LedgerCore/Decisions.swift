import Foundation

/// Commands decide; events record. These are the decisions that depend on state: who may own a
/// transaction, whether a consumption is covered, and what a merge of two accounts moves. Ingestion loads the state as the stream's
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
        // An erased owner holds on to nothing: whoever presents the purchase next takes it.
        if ErasedUser.isPseudonym(currentOwner) {
            return .transfer(
                Transfer(originalTransactionID: originalTransactionID, fromUserID: currentOwner, toUserID: userID, reason: "owner_erased"))
        }
        let transfer = ClaimDecision.transfer(
            Transfer(originalTransactionID: originalTransactionID, fromUserID: currentOwner, toUserID: userID))
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

/// What merging one account into another moves besides its purchases (each of which moves by
/// its own `ownershipTransferred`): what the account holds on its own stream — its balances,
/// credits and debts alike, and its active promotional grants. Recorded on both accounts' streams
/// in one transaction; once recorded the account holds nothing, so deciding again moves nothing.
package struct AccountMerge: Sendable, Equatable {
    /// The reason every merged fact carries.
    package static let reason = "merged"
    package var fromEvents: [LedgerEvent] = []
    package var intoEvents: [LedgerEvent] = []
    package var isEmpty: Bool { fromEvents.isEmpty && intoEvents.isEmpty }
}

extension Decide {
    /// `balances`: the merged account's balances now, once its purchases moved (what is left is
    /// what its own facts added: spends, and currency moved in earlier). `userFacts`: its own
    /// stream's facts. `intoGrantIDs`: the grant ids the receiving account already has (a grant
    /// moved under one of them is renamed, so neither is lost).
    package static func merge(
        from: String, into: String, balances: [String: Int64], userFacts: [LedgerEvent], intoGrantIDs: Set<String>, now: Date
    ) -> AccountMerge {
        var merge = AccountMerge()
        for (currency, amount) in balances.sorted(by: { $0.key < $1.key }) where amount != 0 {
            merge.fromEvents.append(
                .balanceMoved(
                    BalanceMove(userID: from, counterpartUserID: into, currency: currency, amount: -amount, reason: AccountMerge.reason)))
            merge.intoEvents.append(
                .balanceMoved(
                    BalanceMove(userID: into, counterpartUserID: from, currency: currency, amount: amount, reason: AccountMerge.reason)))
        }
        var grants: [String: PromotionalGrant] = [:]
        var order: [String] = []
        for fact in userFacts {
            switch fact {
            case .promotionalGranted(let grant):
                if grants[grant.grantID] == nil { order.append(grant.grantID) }
                grants[grant.grantID] = grant
            case .promotionalRevoked(let revocation): grants[revocation.grantID] = nil
            default: break
            }
        }
        for id in order {
            guard let grant = grants[id], grant.expiresAt.map({ $0 > now }) ?? true else { continue }
            merge.fromEvents.append(.promotionalRevoked(PromotionalRevocation(grantID: id, userID: from, reason: AccountMerge.reason)))
            var moved = grant
            moved.userID = into
            moved.grantID = intoGrantIDs.contains(id) ? "\(id)-merged" : id
            moved.startsAt = max(grant.startsAt, now)
            moved.reason = "\(AccountMerge.reason): \(grant.reason)"
            merge.intoEvents.append(.promotionalGranted(moved))
        }
        return merge
    }
}
