import Foundation
import GooglePlay
import LedgerIngestion

/// One piece of evidence as the console shows it: where it came from and how the ledger checked
/// it, the fields that decided what was recorded (for Google's answers and notifications, whose
/// states are spread over nested objects), and the whole body, decoded.
struct EvidencePage {
    var source: String
    var summary: [GoogleEvidenceSummary.Line]
    var body: String

    init(kind: EvidenceStore.Kind?, body: Data) {
        self.body = UserPage.readable(body)
        switch kind {
        case .googleSubscription?:
            source =
                "Google Play's answer about a subscription (androidpublisher subscriptionsv2), asked by the ledger itself with the app's service account."
            summary = GoogleEvidenceSummary.subscription(body) ?? []
        case .googleProduct?:
            source =
                "Google Play's answer about a one-time purchase (androidpublisher productsv2), asked by the ledger itself with the app's service account."
            summary = GoogleEvidenceSummary.product(body) ?? []
        case .googleNotification?:
            source =
                "A Google Play real-time developer notification, pushed by Pub/Sub: its OIDC token was verified against Google's keys, the message's data decoded. It only said that a purchase changed; what changed was asked of Google."
            summary = GoogleEvidenceSummary.notification(body) ?? []
        case .receiptAnswer?:
            source = "Apple's verifyReceipt answer about a receipt, asked by the ledger with the app's shared secret."
            summary = []
        case .receipt?, .notificationV1?:
            source =
                "As received from the app or from Apple; verified with Apple's verifyReceipt or the app's shared secret when it was recorded."
            summary = []
        default:
            source =
                "As received; signed by Apple and verified against Apple's roots (chain, OIDs, validity at its signed date) when it was recorded."
            summary = []
        }
    }
}
