import Foundation
import GooglePlay
import LedgerCore
import LedgerFormats
import LedgerProjections

/// Asking Google again about purchases the ledger already knows: a user's on demand (sync), and
/// every subscription of an app on `ledger reconcile` — what Pub/Sub never delivered (a push
/// endpoint down for longer than Pub/Sub's seven days of retries, a topic set up late) is then
/// read from Google's own answer, which always states the purchase's whole present.
extension Ingestor {
    /// What asking Google about one purchase came to.
    package enum GoogleRefresh: String, Sendable {
        /// Google's answer stated something the ledger had not recorded; it is now.
        case changed
        /// Nothing new.
        case unchanged
        /// Google no longer keeps the token (410, or 404): it is not asked about again.
        case gone
    }

    /// Asks Google about every Google Play purchase `userID` holds in this app and records what
    /// changed; answers with the user's state. A token Google no longer keeps is skipped.
    package func syncGooglePurchases(bundleID: String, userID: String) async throws -> UserState {
        try await LedgerError.mapping {
            try Self.validate(userID: userID)
            let app = try await directory.app(bundleID)
            let google = try googleApp(app)
            let state = try await users.currentState(bundleID: bundleID, userID: userID)
            let keys = Set(
                state.subscriptions.filter { $0.store == .googlePlay }.map(\.originalTransactionID)
                    + state.purchases.filter { $0.store == .googlePlay }.map(\.originalTransactionID))
            var last: LogPosition?
            for known in try await googlePurchases.known(bundleID: bundleID, keys: keys.sorted()) {
                let (_, outcome) = try await refresh(known, app: app, google: google)
                if let position = outcome?.lastPosition { last = max(last ?? position, position) }
            }
            if let last { try await freshness.wait(for: last, logger: logger) }
            return try await users.currentState(bundleID: bundleID, userID: userID)
        }
    }

    /// Asks Google about one purchase the ledger knows and records what changed.
    package func refreshGooglePurchase(_ known: GooglePurchases.Known, bundleID: String) async throws -> GoogleRefresh {
        try await LedgerError.mapping {
            let app = try await directory.app(bundleID)
            let (result, outcome) = try await refresh(known, app: app, google: try googleApp(app))
            if let position = outcome?.lastPosition { try await freshness.wait(for: position, logger: logger) }
            return result
        }
    }

    private func refresh(
        _ known: GooglePurchases.Known, app: AppConfiguration, google: GoogleApp
    ) async throws -> (GoogleRefresh, FactRecorder.Outcome?) {
        do {
            let outcome = try await refreshGooglePurchase(known.token, subscription: known.kind == .subscription, app: app, google: google)
            try await googlePurchases.refreshed(bundleID: app.bundleID, key: known.key, gone: false)
            return (outcome.wroteAny ? .changed : .unchanged, outcome)
        } catch let error as LedgerError where error.code == .purchaseTokenExpired || error.code == .googlePurchaseNotFound {
            try await googlePurchases.refreshed(bundleID: app.bundleID, key: known.key, gone: true)
            return (.gone, nil)
        }
    }
}
