import Foundation
import GooglePlay
import GooglePlaySimulator
import LedgerCore
import Testing

/// The subscription endpoints against the simulated Google: each lifecycle change read back as
/// Google shows it, and what the developer asks of Google.
@Suite struct SubscriptionClientTests {
    static let package = GoogleTestbed.packageName

    @Test func eachLifecycleChangeReadsBackAsGoogleShowsIt() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let token = google.simulator.purchaseSubscription(package: Self.package, productID: "premium_monthly", accountID: "u_7f3a9c")
        let bought = try await google.client.subscription(package: Self.package, token: token)
        #expect(bought.model.subscriptionState == .active && bought.model.acknowledgementState == .pending)
        #expect(bought.model.externalAccountIdentifiers?.obfuscatedExternalAccountId == "u_7f3a9c")
        #expect(bought.model.lineItems?.first?.productId == "premium_monthly" && bought.model.startTime != nil)
        #expect(String(decoding: bought.raw, as: UTF8.self).contains("premium_monthly"), "Google's bytes are kept")
        let steps: [(SimulatedSubscription.Change, Int, SubscriptionPurchaseV2.SubscriptionState)] = [
            (.renew, 2, .active), (.enterGracePeriod, 6, .inGracePeriod), (.hold, 5, .onHold), (.recover, 1, .active),
            (.pause(until: Date().addingTimeInterval(86_400)), 10, .paused), (.recover, 1, .active), (.cancel, 3, .canceled),
            (.restart, 7, .active), (.revoke, 12, .expired),
        ]
        for (change, notification, state) in steps {
            #expect(google.simulator.change(token, change) == notification)
            let read = try await google.client.subscription(package: Self.package, token: token).model
            #expect(read.subscriptionState == state, "after \(change)")
            switch state {
            case .paused: #expect(read.pausedStateContext?.autoResumeTime != nil)
            case .canceled: #expect(read.canceledStateContext?.userInitiatedCancellation != nil)
            case .expired: #expect(read.canceledStateContext?.developerInitiatedCancellation != nil)
            case .active: #expect(read.canceledStateContext == nil && read.lineItems?.first?.autoRenewingPlan?.autoRenewEnabled == true)
            default: break
            }
        }
    }

    @Test func anUpgradeMintsANewTokenLinkedToTheOld() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let old = google.simulator.purchaseSubscription(package: Self.package, productID: "premium_monthly")
        let new = try #require(google.simulator.upgrade(old, to: "premium_yearly"))
        let upgraded = try await google.client.subscription(package: Self.package, token: new).model
        #expect(upgraded.linkedPurchaseToken == old && upgraded.lineItems?.first?.productId == "premium_yearly")
        let replaced = try await google.client.subscription(package: Self.package, token: old).model
        #expect(replaced.subscriptionState == .expired && replaced.canceledStateContext?.replacementCancellation != nil)
    }

    @Test func aPendingPurchaseHasNoStartAndCannotBeAcknowledged() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let token = google.simulator.purchaseSubscription(package: Self.package, productID: "premium_monthly", pending: true)
        let pending = try await google.client.subscription(package: Self.package, token: token).model
        #expect(pending.subscriptionState == .pending && pending.startTime == nil)
        let refusal = await #expect(throws: LedgerError.self) {
            try await google.client.acknowledgeSubscription(package: Self.package, subscriptionID: "premium_monthly", token: token)
        }
        #expect(refusal?.code == .invalidPurchaseState && refusal?.message.contains(String(token.prefix(8)) + "…") == true)
        #expect(refusal?.message.contains(token) == false, "never the whole token")
        #expect(google.simulator.change(token, .cancelPending) == 20)
        #expect(
            try await google.client.subscription(package: Self.package, token: token).model.subscriptionState == .pendingPurchaseCanceled)
    }

    @Test func acknowledgingOnceWorksAndTwiceIsRefused() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let token = google.simulator.purchaseSubscription(package: Self.package, productID: "premium_monthly")
        try await google.client.acknowledgeSubscription(
            package: Self.package, subscriptionID: "premium_monthly", token: token, obfuscatedAccountID: "u_1")
        #expect(try await google.client.subscription(package: Self.package, token: token).model.acknowledgementState == .acknowledged)
        let again = await #expect(throws: LedgerError.self) {
            try await google.client.acknowledgeSubscription(package: Self.package, subscriptionID: "premium_monthly", token: token)
        }
        #expect(again?.code == .invalidPurchaseState)
    }

    @Test func cancelRevokeAndDeferChangeWhatGoogleKnows() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let token = google.simulator.purchaseSubscription(package: Self.package, productID: "premium_monthly")
        let before = try await google.client.subscription(package: Self.package, token: token).model
        let etag = try #require(before.etag)
        let deferred = try await google.client.deferSubscription(package: Self.package, token: token, etag: etag, by: .seconds(7 * 86_400))
        let expiry = try #require(google.simulator.subscription(token)?.expiry)
        #expect(deferred.model.itemExpiryTimeDetails?.first?.expiryTime == ISO8601DateFormatter.google.string(from: expiry))
        let stale = await #expect(throws: LedgerError.self) {
            try await google.client.deferSubscription(package: Self.package, token: token, etag: etag, by: .seconds(86_400))
        }
        #expect(stale?.code == .googleAPIRefused, "an etag read before the deferral no longer matches")
        try await google.client.cancelSubscription(package: Self.package, token: token, .developerRequestedStopPayments)
        let canceled = try await google.client.subscription(package: Self.package, token: token).model
        #expect(canceled.subscriptionState == .canceled && canceled.canceledStateContext?.developerInitiatedCancellation != nil)
        try await google.client.revokeSubscription(package: Self.package, token: token, .itemBasedRefund(productID: "premium_monthly"))
        #expect(try await google.client.subscription(package: Self.package, token: token).model.subscriptionState == .expired)
    }

    @Test func theTokenProblemsEachHaveTheirRefusal() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let token = google.simulator.purchaseSubscription(package: "com.example.other", productID: "premium_monthly")
        let other = await #expect(throws: LedgerError.self) { try await google.client.subscription(package: Self.package, token: token) }
        #expect(other?.code == .packageMismatch)
        let unknown = await #expect(throws: LedgerError.self) {
            try await google.client.subscription(package: Self.package, token: "abcdefghijklmnop.AO-J1Ounknown")
        }
        #expect(unknown?.code == .googlePurchaseNotFound && unknown?.kind == .notFound && unknown?.message.contains("abcdefgh…") == true)
        let ours = google.simulator.purchaseSubscription(package: Self.package, productID: "premium_monthly")
        google.simulator.change(ours, .expire)
        google.simulator.change(ours, .forget)
        let gone = await #expect(throws: LedgerError.self) { try await google.client.subscription(package: Self.package, token: ours) }
        #expect(gone?.code == .purchaseTokenExpired && gone?.message.contains("final") == true)
        #expect(google.apiCalls().count == 3, "none of these is retried")
    }
}

extension ISO8601DateFormatter {
    static var google: ISO8601DateFormatter {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return format
    }
}
