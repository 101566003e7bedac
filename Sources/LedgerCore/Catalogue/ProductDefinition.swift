import Foundation

/// The five kinds of in-app product, as the app's configuration names them.
package enum ProductType: String, Codable, Sendable, CaseIterable {
    case consumable
    case nonConsumable = "non_consumable"
    case autoRenewable = "auto_renewable"
    case nonRenewing = "non_renewing"
    case freeSubscription = "free_subscription"

    /// Apple's `type` strings in StoreKit 2 transactions. Unknown values stay unknown (nil):
    /// Apple adds values, and the catalogue is the authority on what a product is.
    package init?(appleType: String) {
        switch appleType {
        case "Consumable": self = .consumable
        case "Non-Consumable": self = .nonConsumable
        case "Auto-Renewable Subscription": self = .autoRenewable
        case "Non-Renewing Subscription": self = .nonRenewing
        default: return nil
        }
    }
}

/// What one product id of one store means to the app: what it unlocks and what it grants. The
/// same id in two stores is two products (a Play subscription's id covers all its base plans).
package struct ProductDefinition: Codable, Sendable, Equatable {
    package var productID: String
    /// The store, when not the App Store (see `Store`): definitions stored before a second store
    /// existed name none and stay as they were.
    package var store: Store?
    package var type: ProductType
    /// Entitlement names it unlocks; several products may unlock the same one ("pro").
    package var entitlements: [String]
    /// Currencies granted per unit bought, e.g. `["coins": 100]`; for an auto-renewable
    /// subscription, per paid period (each renewal grants again, a refunded period takes its back).
    package var grants: [String: Int64]
    /// Whether a subscription's free trials and offer periods grant too (nil: only full-price ones).
    package var grantsOnOffers: Bool?
    /// For non-renewing subscriptions: how long one purchase lasts.
    package var duration: ISODuration?
    /// Offer id (as set up in App Store Connect) → who may receive it; nil: no offers declared.
    package var offers: [String: OfferRule]?

    package init(
        productID: String, type: ProductType, entitlements: [String] = [], grants: [String: Int64] = [:], duration: ISODuration? = nil,
        offers: [String: OfferRule]? = nil, store: Store = .appStore, grantsOnOffers: Bool? = nil
    ) {
        self.grantsOnOffers = grantsOnOffers
        self.productID = productID
        self.store = store.stored
        self.type = type
        self.entitlements = entitlements
        self.grants = grants
        self.duration = duration
        self.offers = offers
    }

    enum CodingKeys: String, CodingKey {
        case productID = "product_id", type, entitlements, grants, duration, offers, store, grantsOnOffers = "grants_on_offers"
    }

    /// What the catalogue knows it by.
    package var key: Catalogue.Key { Catalogue.Key(store: store ?? .appStore, productID: productID) }
}

/// An app's catalogue *as it was* at any instant. Definitions are effective-dated because they
/// arrive as events: changing "coins per pack" tomorrow must not change yesterday's balances.
package struct Catalogue: Sendable, Equatable {
    /// A product is its store's id in its store.
    package struct Key: Hashable, Sendable, Comparable {
        package var store: Store
        package var productID: String

        package init(store: Store, productID: String) {
            self.store = store
            self.productID = productID
        }

        package static func < (a: Key, b: Key) -> Bool { (a.productID, a.store) < (b.productID, b.store) }
    }

    private var history: [Key: [(from: Date, definition: ProductDefinition)]] = [:]
    private var currencies: [String: [(from: Date, definition: CurrencyDefinition)]] = [:]

    package init() {}

    package mutating func define(_ currency: CurrencyDefinition, from date: Date) {
        currencies[currency.code, default: []].append((date, currency))
        currencies[currency.code]!.sort { $0.from < $1.from }
    }

    /// The currency's definition in force at `date` (the first one for a grant made before it was
    /// set up); nil for a currency never set up, which a product's grants still credit, unexpiring.
    package func currency(_ code: String, at date: Date) -> CurrencyDefinition? {
        guard let entries = currencies[code], let first = entries.first else { return nil }
        return entries.last { $0.from <= date }?.definition ?? first.definition
    }

    /// The latest definition of every currency set up.
    package var currentCurrencies: [CurrencyDefinition] {
        currencies.sorted { $0.key < $1.key }.compactMap { $0.value.last?.definition }
    }

    /// Whether a spend may name `code`: set up as a currency, or granted by some product.
    package func knowsCurrency(_ code: String) -> Bool {
        currencies[code] != nil || history.values.contains { $0.contains { $0.definition.grants[code] != nil } }
    }

    package mutating func define(_ definition: ProductDefinition, from date: Date) {
        var entries = history[definition.key] ?? []
        entries.append((date, definition))
        entries.sort { $0.from < $1.from }
        history[definition.key] = entries
    }

    /// The definition in force at `date`. A purchase made before the product was first configured
    /// uses the first definition: apps often configure products after their first sale.
    package func definition(of productID: String, in store: Store = .appStore, at date: Date) -> ProductDefinition? {
        guard let entries = history[Key(store: store, productID: productID)], let first = entries.first else { return nil }
        return entries.last { $0.from <= date }?.definition ?? first.definition
    }

    /// The latest definition of every product, for `GET …/products`.
    package var current: [ProductDefinition] {
        history.sorted { $0.key < $1.key }.compactMap { $0.value.last?.definition }
    }

    package static func == (a: Catalogue, b: Catalogue) -> Bool {
        a.history.mapValues { $0.map(\.definition) } == b.history.mapValues { $0.map(\.definition) }
            && a.history.mapValues { $0.map(\.from) } == b.history.mapValues { $0.map(\.from) }
            && a.currencies.mapValues { $0.map(\.definition) } == b.currencies.mapValues { $0.map(\.definition) }
            && a.currencies.mapValues { $0.map(\.from) } == b.currencies.mapValues { $0.map(\.from) }
    }
}
