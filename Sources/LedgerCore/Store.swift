/// The store a purchase was made in. Each store is an adapter that turns its evidence into the
/// same facts; the domain keeps only which store a fact came from.
///
/// A fact names its store only when it is not the App Store: Apple's facts were recorded before a
/// second store existed, and a fact's bytes are its id and its place in a hash chain, so an Apple
/// fact recorded today must be written exactly as it was then. `nil` in a fact is the App Store.
package enum Store: String, Codable, Sendable, CaseIterable, Comparable {
    case appStore = "app_store"
    case googlePlay = "google_play"

    /// What a fact stores for this store: nothing for the App Store.
    package var stored: Store? { self == .appStore ? nil : self }

    /// How a Google Play purchase key begins (`GooglePurchaseKey`); Apple's keys are digits.
    package static let googlePlayKeyPrefix = "gp:"

    /// The store whose purchase a key names: what a row keyed by purchase shows without a column.
    package init(purchaseKey: String) { self = purchaseKey.hasPrefix(Self.googlePlayKeyPrefix) ? .googlePlay : .appStore }

    package static func < (a: Store, b: Store) -> Bool { a.rawValue < b.rawValue }
}
