import Foundation
import Synchronization

extension SimulatedGooglePlay {
    /// A new subscription purchase (pending ones have no start and no order yet paid); its token.
    package func purchaseSubscription(
        package packageName: String, productID: String, basePlanID: String = "monthly", accountID: String? = nil,
        pending: Bool = false, test: Bool = false, linkedPurchaseToken: String? = nil, period: TimeInterval = 30 * 86_400,
        now: Date = Date()
    ) -> String {
        let token = newToken()
        let subscription = SimulatedSubscription(
            token: token, packageName: packageName, productID: productID, basePlanID: basePlanID,
            state: SimulatedSubscription.state(pending ? "PENDING" : "ACTIVE"), start: pending ? nil : now,
            expiry: now.addingTimeInterval(period), autoRenew: true, acknowledged: false, accountID: accountID,
            linkedPurchaseToken: linkedPurchaseToken, canceledBy: nil, autoResume: nil, orderIDs: [newOrderID()], test: test, period: period
        )
        state.withLock { $0.subscriptions[token] = subscription }
        return token
    }

    /// Changes a subscription as Play would; the RTDN type Play sends for it.
    @discardableResult
    package func change(_ token: String, _ change: SimulatedSubscription.Change, now: Date = Date()) -> Int? {
        state.withLock { $0.subscriptions[token]?.apply(change, now: now) }
    }

    /// An upgrade or downgrade: a new token linked to the old, which ends as replaced.
    package func upgrade(_ token: String, to productID: String, now: Date = Date()) -> String? {
        guard let old = subscription(token) else { return nil }
        let new = purchaseSubscription(
            package: old.packageName, productID: productID, accountID: old.accountID, linkedPurchaseToken: token, now: now)
        state.withLock { state in
            state.subscriptions[token]?.state = SimulatedSubscription.state("EXPIRED")
            state.subscriptions[token]?.autoRenew = false
            state.subscriptions[token]?.canceledBy = "replacement"
            state.subscriptions[token]?.expiry = now
        }
        return new
    }

    package func subscription(_ token: String) -> SimulatedSubscription? { state.withLock { $0.subscriptions[token] } }

    /// A new one-time purchase; its token.
    package func purchaseProduct(
        package packageName: String, productID: String, quantity: Int = 1, accountID: String? = nil, pending: Bool = false,
        test: Bool = false, now: Date = Date()
    ) -> String {
        let token = newToken()
        let product = SimulatedProduct(
            token: token, packageName: packageName, productID: productID, orderID: newOrderID(), purchaseState: pending ? 2 : 0,
            quantity: quantity, refundableQuantity: quantity, consumed: false, acknowledged: false, purchased: now, accountID: accountID,
            test: test)
        state.withLock { $0.products[token] = product }
        return token
    }

    /// A pending one-time purchase paid (`true`, RTDN 1) or abandoned (`false`, RTDN 2).
    @discardableResult
    package func settlePendingProduct(_ token: String, paid: Bool) -> Int? {
        state.withLock { state in
            guard state.products[token]?.purchaseState == 2 else { return nil }
            state.products[token]?.purchaseState = paid ? 0 : 1
            return paid ? 1 : 2
        }
    }

    package func product(_ token: String) -> SimulatedProduct? { state.withLock { $0.products[token] } }

    /// A refund of `quantity` items of a one-time purchase (all remaining when nil): a partial one
    /// is listed with `voidedQuantity`; the last refund voids the purchase and carries none.
    package func refundProduct(_ token: String, quantity: Int? = nil, reason: Int = 1, source: Int = 0, at: Date = Date()) {
        state.withLock { state in
            guard var product = state.products[token] else { return }
            let refunded = min(quantity ?? product.refundableQuantity, product.refundableQuantity)
            product.refundableQuantity -= refunded
            let partial = product.refundableQuantity > 0
            if !partial { product.purchaseState = 1 }
            state.products[token] = product
            state.voided.append(
                SimulatedVoided(
                    packageName: product.packageName, token: token, orderID: product.orderID, purchased: product.purchased, voided: at,
                    source: source, reason: reason, quantity: partial ? refunded : nil, isSubscription: false))
        }
    }

    /// A refund or chargeback of a subscription's latest order: listed with `type=1` only.
    package func voidSubscription(_ token: String, reason: Int = 7, source: Int = 2, at: Date = Date()) {
        state.withLock { state in
            guard let subscription = state.subscriptions[token] else { return }
            state.voided.append(
                SimulatedVoided(
                    packageName: subscription.packageName, token: token, orderID: subscription.orderIDs.last ?? "",
                    purchased: subscription.start ?? at, voided: at, source: source, reason: reason, quantity: nil, isSubscription: true))
        }
    }
}
