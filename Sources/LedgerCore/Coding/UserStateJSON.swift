import Foundation
import LedgerFormats

/// A user's state as the API answers it (`UserState` in openapi.json), written by hand: it is the
/// hottest answer, and the state inside every change a webhook carries. Absent optionals are
/// written as null, so clients read a fixed shape. `as_of` is the valid time asked about,
/// `known_at` what the ledger knew (default: when it answered), to the microsecond, so
/// `?known_at=` with it answers again exactly this.
package enum UserStateJSON {
    package static func write(_ state: UserState, knownAt: Date? = nil, into json: inout JSONWriter) {
        json.object { json in
            json.key("user_id"); json.value(state.userID)
            json.key("as_of"); json.value(RFC3339.string(state.asOf))
            json.key("known_at"); json.value(RFC3339.microseconds(knownAt ?? state.asOf))
            json.key("consent_rescinded_at"); json.value(state.consentRescindedAt.map(RFC3339.string))
            json.key("app_purchase")
            if let purchase = state.appPurchase {
                json.object { json in
                    json.key("app_transaction_id"); json.value(purchase.appTransactionID)
                    json.key("environment"); json.value(purchase.environment.rawValue)
                    json.key("original_application_version"); json.value(purchase.originalApplicationVersion)
                    json.key("original_purchase_date"); json.value(purchase.originalPurchaseDate.map(RFC3339.string))
                    json.key("original_platform"); json.value(purchase.originalPlatform)
                }
            } else {
                json.value(nil as String?)
            }
            json.key("entitlements")
            json.object { json in
                for (name, e) in state.entitlements.sorted(by: { $0.key < $1.key }) {
                    json.key(name)
                    json.object { json in
                        json.key("active"); json.value(e.active)
                        json.key("product_id"); json.value(e.productID)
                        json.key("expires_at"); json.value(e.expiresAt.map(RFC3339.string))
                        json.key("will_renew"); json.value(e.willRenew)
                        json.key("grace_period_expires_at"); json.value(e.gracePeriodExpiresAt.map(RFC3339.string))
                        json.key("billing_retry"); json.value(e.billingRetry)
                        json.key("ownership"); json.value(e.ownership.rawValue)
                        json.key("original_transaction_id"); json.value(e.originalTransactionID)
                        json.key("since"); json.value(RFC3339.string(e.since))
                    }
                }
            }
            json.key("balances")
            json.object { json in
                for (currency, balance) in state.balances.sorted(by: { $0.key < $1.key }) {
                    json.key(currency); json.value(balance)
                }
            }
            json.key("subscriptions")
            json.array { json in
                for s in state.subscriptions {
                    json.object { json in
                        json.key("original_transaction_id"); json.value(s.originalTransactionID)
                        json.key("product_id"); json.value(s.productID)
                        json.key("status"); json.value(s.status.rawValue)
                        json.key("expires_at"); json.value(s.expiresAt.map(RFC3339.string))
                        json.key("will_renew"); json.value(s.willRenew)
                        json.key("pending_product_id"); json.value(s.pendingProductID)
                        json.key("expiration_intent"); json.value(s.expirationIntent.map(Int64.init))
                        json.key("billing_plan"); json.value(s.billingPlanType)
                        json.key("commitment_expires_at"); json.value(s.commitmentExpiresAt.map(RFC3339.string))
                        json.key("offer_type"); json.value(s.offerType.map(Int64.init))
                        json.key("offer_id"); json.value(s.offerIdentifier)
                        json.key("store"); json.value(s.store.rawValue)
                    }
                }
            }
            json.key("purchases")
            json.array { json in
                for p in state.purchases {
                    json.object { json in
                        json.key("transaction_id"); json.value(p.transactionID)
                        json.key("original_transaction_id"); json.value(p.originalTransactionID)
                        json.key("product_id"); json.value(p.productID)
                        json.key("type"); json.value(p.type?.rawValue)
                        json.key("purchase_date"); json.value(RFC3339.string(p.purchaseDate))
                        json.key("quantity"); json.value(Int64(p.quantity))
                        json.key("revoked_at"); json.value(p.revokedAt.map(RFC3339.string))
                        json.key("store"); json.value((p.store ?? .appStore).rawValue)
                    }
                }
            }
        }
    }
}
