import Foundation
import LedgerCore

/// What each piece of verified evidence says, as the domain's events (docs/events.md lists which
/// evidence produces which). Evidence restates what Apple already said as often as it likes; the
/// domain keeps the latest signed snapshot of each transaction, so restating is harmless.
package enum EvidenceEvents {
    /// A StoreKit 2 transaction: its purchase or renewal, and its refund or revocation if Apple
    /// already revoked it.
    package static func events(for transaction: DecodedTransaction) -> [LedgerEvent] {
        let facts = transaction.facts
        let isRenewal =
            transaction.transactionReason == "RENEWAL"
            || (transaction.transactionReason == nil && facts.transactionID != facts.originalTransactionID)
        var events: [LedgerEvent] = [isRenewal ? .renewed(facts) : .purchased(facts)]
        if let revocation = transaction.revocation {
            events.append(revocation.kind == .familyRevoke ? .revoked(revocation) : .refunded(revocation))
        }
        return events
    }

    /// A V2 notification: the notification itself (always, whatever its type), then what its
    /// nested transaction and renewal info state, named for the change the type announces, and a
    /// withdrawal of consent for the app transaction a RESCIND_CONSENT names.
    package static func events(for verified: VerifiedNotificationV2) -> [LedgerEvent] {
        var events: [LedgerEvent] = [.appleNotificationReceived(verified.notification)]
        if verified.notification.notificationType == "RESCIND_CONSENT", let app = verified.appTransaction, let id = app.appTransactionID {
            events.append(
                .consentRescinded(
                    ConsentRescission(
                        appTransactionID: id, environment: app.environment,
                        rescindedAt: verified.notification.signedDate ?? app.signedDate,
                        notificationUUID: verified.notification.notificationUUID)))
        }
        let type = verified.notification.notificationType
        let subtype = verified.notification.subtype
        if let transaction = verified.transaction {
            var transactionEvents = Self.events(for: transaction)
            switch type {
            case "DID_RENEW" where subtype == "BILLING_RECOVERY":
                transactionEvents[0] = .recovered(transaction.facts)
            case "REFUND_REVERSED":
                transactionEvents.append(
                    .refundReversed(
                        RefundReversal(
                            transactionID: transaction.facts.transactionID, originalTransactionID: transaction.facts.originalTransactionID,
                            signedDate: verified.notification.signedDate ?? transaction.facts.signedDate)))
            default: break
            }
            events += transactionEvents
        }
        if let renewal = verified.renewal?.facts {
            switch type {
            case "DID_CHANGE_RENEWAL_PREF", "OFFER_REDEEMED": events.append(.renewalPreferenceChanged(renewal))
            case "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED": events.append(.renewalFailed(renewal))
            case "EXPIRED": events.append(.expired(renewal))
            default: events.append(.autoRenewChanged(renewal))
            }
        }
        return events
    }

    /// The app's own purchase, presented for `userID` (by the app, or pulled from Apple on a sync).
    package static func events(for appTransaction: DecodedAppTransaction, userID: String) -> [LedgerEvent] {
        [
            .appTransactionRecorded(
                AppTransactionFacts(
                    userID: userID, appTransactionID: appTransaction.appTransactionID, environment: appTransaction.environment,
                    originalApplicationVersion: appTransaction.originalApplicationVersion,
                    originalPurchaseDate: appTransaction.originalPurchaseDate,
                    preorderDate: appTransaction.preorderDate, originalPlatform: appTransaction.originalPlatform))
        ]
    }

    /// A subscription's renewal info as Apple's Get All Subscription Statuses states it beside its
    /// status (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked): an expired one
    /// with its reason is `Expired`, one in billing retry or grace `RenewalFailed`, any other the
    /// renewal preference in force (`AutoRenewChanged`, which restates nothing when unchanged).
    package static func events(for renewal: DecodedRenewal, status: Int?) -> [LedgerEvent] {
        let facts = renewal.facts
        switch status {
        case 2 where facts.expirationIntent != nil: return [.expired(facts)]
        case 3, 4: return [.renewalFailed(facts)]
        default: return [facts.isInBillingRetry || facts.gracePeriodExpiresDate != nil ? .renewalFailed(facts) : .autoRenewChanged(facts)]
        }
    }

    /// A verifyReceipt answer (or a V1 notification's unified receipt), stated by Apple at
    /// `statedAt`: every transaction it names, its cancellations, and each subscription's
    /// pending renewal.
    package static func events(for receipt: ReceiptResponse, environment: AppleEnvironment, statedAt: Date) -> [LedgerEvent] {
        var events: [LedgerEvent] = []
        for line in receipt.transactions {
            let facts = line.facts(environment: environment, statedAt: statedAt)
            events.append(facts.transactionID == facts.originalTransactionID ? .purchased(facts) : .renewed(facts))
            if let cancelled = line.cancellationDate {
                let revocation = RevocationFacts(
                    environment: environment, transactionID: line.transactionID,
                    originalTransactionID: line.originalTransactionID, revocationDate: cancelled,
                    reason: line.cancellationReason,
                    kind: line.ownership == .familyShared ? .familyRevoke : .refundFull, signedDate: statedAt)
                events.append(revocation.kind == .familyRevoke ? .revoked(revocation) : .refunded(revocation))
            }
        }
        for pending in receipt.pendingRenewalInfo {
            let facts = pending.facts(environment: environment, statedAt: statedAt)
            events.append(facts.isInBillingRetry || facts.gracePeriodExpiresDate != nil ? .renewalFailed(facts) : .autoRenewChanged(facts))
        }
        return events
    }

    /// A V1 notification: the notification itself, then what its unified receipt states.
    package static func events(for verified: VerifiedNotificationV1) -> [LedgerEvent] {
        var events: [LedgerEvent] = [.appleNotificationReceived(verified.notification)]
        if let receipt = verified.receipt {
            events += Self.events(for: receipt, environment: verified.environment, statedAt: verified.statedAt)
        }
        return events
    }
}
