import Foundation
import GooglePlay
import LedgerBackground
import LedgerCore
import LedgerIngestion
import Logging

/// Tells Google what it must be told of every paid purchase once the ledger recorded it: a
/// subscription or a non-consumable acknowledged, a consumable consumed. Google refunds and
/// revokes a purchase nobody acknowledged within three days, so the outbox (`GooglePurchases`)
/// keeps each one across restarts and outages, and each failure waits longer before the next try.
///
/// Google refuses a second acknowledgement of the same purchase (`invalidPurchaseState`): that
/// answer, and a purchase Google no longer keeps (404, 410), settle the row — there is nothing
/// left to tell — so a crash between Google's confirmation and the row's update costs one
/// refused call, never a lost purchase.
package struct GoogleAcknowledger: Sendable {
    let purchases: GooglePurchases
    let directory: AppDirectory
    let publishers: GooglePublishers
    let holder = UUID()
    /// Told of every round; a round waits on Google, so silence is not checked, only failures.
    package let heartbeat = Heartbeat("google acknowledger", checksSilence: false)
    let logger: Logger
    let observe: @Sendable (_ outcome: String) -> Void

    package init(
        purchases: GooglePurchases, directory: AppDirectory, publishers: GooglePublishers, logger: Logger,
        observe: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.purchases = purchases
        self.directory = directory
        self.publishers = publishers
        self.logger = logger
        self.observe = observe
    }

    /// Settles what is due (at most `limit`); the outcome of each, by purchase key.
    @discardableResult
    package func settleDue(limit: Int = 50) async throws -> [String: String] {
        await OutboxRound.run(try await purchases.claim(limit: limit, holder: holder), key: \.key, observe: observe) { due in
            let outcome = try await settle(due)
            try await purchases.settled(due, note: outcome == "settled" ? nil : outcome)
            return outcome
        } handBack: { due, error in
            let delay = Backoff.outboxRetry.ceiling(afterFailures: due.attempts)
            try? await purchases.retry(due, after: delay, failure: "\(error)")
            logger.warning(
                "Google could not be told of a purchase yet; it is tried again",
                metadata: [
                    "app.bundle_id": "\(due.bundleID)", "google.purchase_key": "\(due.key)", "retry_in": "\(delay)", "error": "\(error)",
                ])
        }
    }

    /// The acknowledger as a background loop: what is due settled every `interval`, and at once
    /// again after a full batch (a launch day's purchases are told to Google as fast as it takes
    /// them). A round fails only when the outbox cannot be read; one purchase Google did not take
    /// waits for its own retry.
    package func loop(every interval: Duration, batch: Int = 50) -> BackgroundLoop {
        .draining(batch: batch, every: interval, reportingTo: heartbeat, backoff: .storeRound, logger: logger) {
            try await settleDue(limit: $0).count
        }
    }

    /// One purchase: Google told, or the reason there is nothing to tell.
    func settle(_ due: GooglePurchases.Unsettled) async throws -> String {
        let app = try await directory.app(due.bundleID)
        guard let settings = app.settings.googlePlay, let account = try app.googleAccount else {
            throw LedgerError(.googlePlayNotConfigured, "\(due.bundleID) has no Google Play service account any more")
        }
        let client = publishers.client(for: account)
        do {
            // A retry may follow a confirmation the outbox never heard of (a crash, a lost answer):
            // Google is asked first, so an acknowledgement is sent once.
            if due.attempts > 1, try await alreadySettled(due, client: client, package: settings.packageName) {
                return "settled before"
            }
            switch (due.kind, due.settlement) {
            case (.subscription, _):
                try await client.acknowledgeSubscription(package: settings.packageName, subscriptionID: due.productID, token: due.token)
            case (.product, .acknowledge):
                try await client.acknowledgeProduct(package: settings.packageName, productID: due.productID, token: due.token)
            case (.product, .consume):
                try await client.consumeProduct(package: settings.packageName, productID: due.productID, token: due.token)
            }
            return "settled"
        } catch let error as LedgerError where [.invalidPurchaseState, .googlePurchaseNotFound, .purchaseTokenExpired].contains(error.code)
        {
            return "nothing to tell: \(error.code)"
        }
    }

    /// Whether Google already has what this row would tell it.
    func alreadySettled(_ due: GooglePurchases.Unsettled, client: AndroidPublisherClient, package: String) async throws -> Bool {
        switch due.kind {
        case .subscription:
            return try await client.subscription(package: package, token: due.token).model.acknowledgementState == .acknowledged
        case .product:
            let facts = GoogleProductFacts(
                token: due.token, answer: try await client.productV2(package: package, token: due.token).model, answeredAt: Date())
            return due.settlement == .consume ? facts.isConsumed : facts.isAcknowledged
        }
    }
}
