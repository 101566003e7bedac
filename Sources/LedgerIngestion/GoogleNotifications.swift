import Foundation
import GooglePlay
import LedgerCore
import LedgerProjections
import Logging

/// Google Play's real-time developer notifications, pushed by Pub/Sub. A notification only says
/// that a purchase changed: it is authenticated (the push's OIDC token), kept as evidence, and
/// answered by asking Google for the purchase and recording what changed. The answer is 2xx only
/// once that is recorded, so Pub/Sub's redelivery never loses one; a redelivery of a message
/// recorded already is answered at once.
extension Ingestor {
    package func ingestGoogleNotification(bundleID: String, authorization: String?, body: Data) async throws -> NotificationResult {
        try await LedgerError.mapping {
            let app = try await directory.app(bundleID)
            let google = try googleApp(app)
            guard let audience = google.settings.pushAudience, let email = google.settings.pushServiceAccountEmail else {
                throw LedgerError(
                    .googlePlayNotConfigured, "\(bundleID) has no Pub/Sub push configured; set google_play.pubsub on the app first")
            }
            let verifier = PubSubPushVerifier(
                keys: self.google.keySet, expecting: .init(audience: audience, serviceAccountEmail: email))
            _ = try await verifier.verify(authorization: authorization)
            let push = try PubSubPush.decode(body)
            let notification = try push.developerNotification()
            guard notification.model.packageName == google.settings.packageName else {
                throw LedgerError(
                    .packageMismatch, "the notification is about another package than \(bundleID)'s (\(google.settings.packageName))")
            }
            let messageID = push.message.messageID
            if try await googlePurchases.notificationSeen(bundleID: bundleID, messageID: messageID) { return .alreadyRecorded }
            let digest = try await evidence.store(notification.raw, kind: .googleNotification, bundleID: bundleID)
            var outcome = FactRecorder.Outcome()
            let eventTime = Date(timeIntervalSince1970: Double(notification.model.eventTimeMillis) / 1000)
            switch notification.model.kind {
            case .subscription(let body):
                outcome = try await refreshGooglePurchase(body.purchaseToken, subscription: true, app: app, google: google)
            case .oneTimeProduct(let body):
                outcome = try await refreshGooglePurchase(body.purchaseToken, subscription: false, app: app, google: google)
            case .voidedPurchase(let body):
                outcome = try await refreshGooglePurchase(
                    body.purchaseToken, subscription: body.productType == 1, app: app, google: google, voided: (body, eventTime))
            case .pendingRefundReview(let body):
                try await answerRefundReview(body, app: app, google: google)
            case .test, .unknown:
                break // kept as evidence; nothing about a purchase to record
            }
            try await googlePurchases.rememberNotification(bundleID: bundleID, messageID: messageID, evidence: digest)
            guard outcome.wroteAny, let position = outcome.lastPosition else { return .alreadyRecorded }
            try await freshness.wait(for: position, logger: logger)
            return .recorded
        }
    }

    /// Asks Google for the purchase `token` names and records what changed. The purchase keeps
    /// its owner; one nobody owns yet goes to the user its account id is linked to, or else to
    /// the owner of the purchase it continues (an upgrade's, a resubscription's) — never away
    /// from an owner: a notification decides nothing about ownership.
    func refreshGooglePurchase(
        _ token: String, subscription: Bool, app: AppConfiguration, google: GoogleApp,
        voided: (notification: VoidedPurchaseNotification, at: Date)? = nil
    ) async throws -> FactRecorder.Outcome {
        try Self.validate(purchaseToken: token)
        let bundleID = app.bundleID
        let key = GooglePurchaseKey.of(token: token)
        let stream = try await PurchaseStream.read(store, bundleID: bundleID, originalTransactionID: key)
        var claim = try await askGoogle(token, subscription: subscription, app: app, google: google, known: stream, refundedAt: voided?.at)
        // A subscription's answer shows no refund: the voided order's is recorded as its notice says.
        if subscription, let voided, let order = voided.notification.orderId {
            claim.events.append(
                .refunded(
                    RevocationFacts(
                        environment: claim.environment, transactionID: order, originalTransactionID: key, revocationDate: voided.at,
                        kind: .refundFull, signedDate: Date(), store: .googlePlay)))
        }
        var owner = stream.owner
        if owner == nil, let account = claim.accountToken { owner = try await tokens.user(of: account, bundleID: bundleID) }
        if owner == nil, let lineage = claim.lineage {
            owner = try await PurchaseStream.read(store, bundleID: bundleID, originalTransactionID: lineage).owner
        }
        let outcome = try await recordGoogle(claim, bundleID: bundleID, user: owner, app: app, policy: .keep)
        try await googlePurchases.remember(
            bundleID: bundleID, key: key, token: token, productID: claim.productIDs.first ?? "", kind: claim.kind, settle: claim.owed,
            paidAt: claim.paidAt, orderID: claim.orderID)
        return outcome
    }

    /// A refund or chargeback Google's voided purchases list names: recorded against the purchase
    /// the ledger knows by that token (its kind remembered when it was claimed or notified); one the
    /// ledger never saw moved nothing in its books and is skipped. Whether anything new was recorded.
    package func recordGoogleVoided(_ voided: VoidedPurchase, bundleID: String) async throws -> Bool {
        try await LedgerError.mapping {
            let app = try await directory.app(bundleID)
            let google = try googleApp(app)
            let key = GooglePurchaseKey.of(token: voided.purchaseToken)
            guard let kind = try await googlePurchases.kind(bundleID: bundleID, key: key) else { return false }
            let at = voided.voidedTimeMillis.map { Date(timeIntervalSince1970: Double($0.value) / 1000) } ?? Date()
            let notification = VoidedPurchaseNotification(
                purchaseToken: voided.purchaseToken, orderId: voided.orderId, productType: kind == .subscription ? 1 : 2,
                refundType: voided.voidedQuantity == nil ? 1 : 2)
            let outcome = try await refreshGooglePurchase(
                voided.purchaseToken, subscription: kind == .subscription, app: app, google: google, voided: (notification, at))
            guard outcome.wroteAny, let position = outcome.lastPosition else { return false }
            try await freshness.wait(for: position, logger: logger)
            return true
        }
    }

    /// A chargeback Google asks the developer's view on (within 24 hours): answered with
    /// `orders.reviewrefund` from the ledger's facts — how much of the purchase was used
    /// (`ConsumptionAssessment`, as Apple's CONSUMPTION_REQUEST is answered) and the app's
    /// preference — when the app's `consumption_policy` says its customers consented. Otherwise,
    /// or for an order the ledger never recorded, the notification is only kept.
    func answerRefundReview(_ review: PendingRefundReviewNotification, app: AppConfiguration, google: GoogleApp) async throws {
        guard let policy = app.settings.consumptionPolicy, policy.customerConsented, let refundToken = review.pendingRefundToken,
            let order = review.orderId, let found = try await googlePurchases.purchase(bundleID: app.bundleID, orderID: order)
        else { return }
        let stream = try await PurchaseStream.read(store, bundleID: app.bundleID, originalTransactionID: found.key)
        guard let transaction = stream.transaction(order) ?? stream.transactions.last else { return }
        var balances: [String: Int64] = [:]
        if let owner = stream.owner { balances = try await users.currentState(bundleID: app.bundleID, userID: owner).balances }
        let product = app.catalogue.definition(of: transaction.productID, in: .googlePlay, at: transaction.purchaseDate)
        let used = ConsumptionAssessment.assess(transaction, product: product, owner: stream.owner, balances: balances, at: Date())
        let preference: AndroidPublisherClient.RefundReview.Preference =
            switch policy.refundPreference {
            case "DECLINE"?: .decline
            case "GRANT_FULL"?, "GRANT_PRORATED"?: .approve
            default: .neutral
            }
        try await google.client.reviewRefund(
            package: google.settings.packageName, orderID: order,
            .init(
                pendingRefundToken: refundToken, preference: preference, sampleContentProvided: policy.sampleContentProvided,
                consumptionPercentageMilliunits: used.consumptionPercentage))
        logger.info(
            "a Google Play refund review was answered",
            metadata: ["app.bundle_id": "\(app.bundleID)", "google.preference": "\(preference.rawValue)"])
    }
}
