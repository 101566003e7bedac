import Foundation

/// What the ledger can say of a purchase whose refund a customer asked Apple for
/// (CONSUMPTION_REQUEST): was it delivered, and how much of it was used. Pure: decided on the
/// facts the ledger holds, so the same request always gets the same answer.
package enum ConsumptionAssessment {
    package struct Result: Sendable, Equatable {
        /// DELIVERED, or UNDELIVERED_OTHER when no user of this ledger received it.
        package var deliveryStatus: String
        /// Thousandths of a percent (0…100,000); nil when the ledger cannot say.
        package var consumptionPercentage: Int?
    }

    /// - Consumables: the share of the credit the owner no longer holds. The balance left is
    ///   counted as this purchase's first, so the ledger never claims more use than it can prove:
    ///   100 coins bought, 30 left → 70 % consumed; 500 left → 0 %.
    /// - Subscriptions and passes: the share of the paid period elapsed at `instant`.
    /// - Anything else (non-consumables): not stated.
    package static func assess(
        _ transaction: TransactionFacts, product: ProductDefinition?, owner: String?,
        balances: [String: Int64], at instant: Date
    ) -> Result {
        guard owner != nil else { return Result(deliveryStatus: "UNDELIVERED_OTHER", consumptionPercentage: nil) }
        let full = 100_000
        if let product, product.type == .consumable, !product.grants.isEmpty {
            let credited = product.grants.mapValues { $0 * Int64(transaction.quantity) }
            let total = credited.values.reduce(0, +)
            guard total > 0 else { return Result(deliveryStatus: "DELIVERED", consumptionPercentage: nil) }
            let used = credited.reduce(Int64(0)) { sum, entry in sum + entry.value - min(max(balances[entry.key] ?? 0, 0), entry.value) }
            return Result(deliveryStatus: "DELIVERED", consumptionPercentage: Int(used * Int64(full) / total))
        }
        if let expires = transaction.expiresDate, expires > transaction.purchaseDate {
            let elapsed = instant.timeIntervalSince(transaction.purchaseDate) / expires.timeIntervalSince(transaction.purchaseDate)
            return Result(deliveryStatus: "DELIVERED", consumptionPercentage: Int((min(max(elapsed, 0), 1) * Double(full)).rounded(.down)))
        }
        return Result(deliveryStatus: "DELIVERED", consumptionPercentage: nil)
    }
}
