import Foundation

/// Apple restates what it said — a StoreKit transaction fetched again, the same receipt asked
/// again, a notification that repeats a renewal — each time with a new `signedDate`. Such a
/// statement fills a slot: a transaction's snapshot, a subscription's renewal state, a
/// transaction's revocation. A new fact that says what the latest fact of its slot said, apart
/// from when Apple said it, adds nothing and is not recorded; only the latest counts, so
/// auto-renew turned off and then on again is two changes, not a repeat.
extension LedgerEvent {
    /// The slot this fact fills; nil for facts that are never restated (decisions, configuration).
    package var restatementSlot: String? {
        switch self {
        case .purchased(let facts), .restored(let facts), .renewed(let facts), .recovered(let facts):
            "transaction:" + facts.transactionID
        case .autoRenewChanged(let renewal), .renewalPreferenceChanged(let renewal), .renewalFailed(let renewal), .expired(let renewal):
            "renewal:" + renewal.originalTransactionID
        case .refunded(let revocation), .revoked(let revocation): "revocation:" + revocation.transactionID
        case .refundReversed(let reversal): "revocation:" + reversal.transactionID
        default: nil
        }
    }

    /// True when `self` says what `earlier` said, whenever Apple said each.
    package func restates(_ earlier: LedgerEvent) -> Bool {
        restatementSlot != nil && stated(at: .distantPast) == earlier.stated(at: .distantPast)
    }

    /// This fact as if Apple had signed it at `date`.
    func stated(at date: Date) -> LedgerEvent {
        switch self {
        case .purchased(var facts): facts.signedDate = date; return .purchased(facts)
        case .restored(var facts): facts.signedDate = date; return .restored(facts)
        case .renewed(var facts): facts.signedDate = date; return .renewed(facts)
        case .recovered(var facts): facts.signedDate = date; return .recovered(facts)
        case .autoRenewChanged(var renewal): renewal.signedDate = date; return .autoRenewChanged(renewal)
        case .renewalPreferenceChanged(var renewal): renewal.signedDate = date; return .renewalPreferenceChanged(renewal)
        case .renewalFailed(var renewal): renewal.signedDate = date; return .renewalFailed(renewal)
        case .expired(var renewal): renewal.signedDate = date; return .expired(renewal)
        case .refunded(var revocation): revocation.signedDate = date; return .refunded(revocation)
        case .revoked(var revocation): revocation.signedDate = date; return .revoked(revocation)
        case .refundReversed(var reversal): reversal.signedDate = date; return .refundReversed(reversal)
        default: return self
        }
    }
}
