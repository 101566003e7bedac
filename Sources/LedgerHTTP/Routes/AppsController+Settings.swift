import Foundation
import LedgerCore
import LedgerIngestion

/// An app's body turned into its settings, each field refused with the rule it breaks.
extension AppsController {
    static func settings(from body: Wire.AppBody) throws -> AppSettings {
        let names = body.environments ?? ["Production", "Sandbox"]
        let environments = try names.map { name in
            guard let environment = AppleEnvironment(rawValue: name) else {
                throw LedgerError(.invalidEnvironment, "environments are Production, Sandbox, Xcode or LocalTesting, not \(name)")
            }
            return environment
        }
        guard !environments.isEmpty else { throw LedgerError(.invalidEnvironment, "name at least one environment") }
        if environments.contains(.production), environments.contains(where: { $0 == .xcode || $0 == .localTesting }) {
            throw LedgerError(.invalidEnvironment, "Xcode and LocalTesting data are never accepted beside Production")
        }
        let policy =
            try body.restore_policy.map { name in
                guard let policy = RestorePolicy(rawValue: name) else {
                    throw LedgerError(.invalidRestorePolicy, "restore_policy is transfer, keep or transfer_if_no_active")
                }
                return policy
            } ?? .transfer
        if let id = body.apple_app_id, id <= 0 { throw LedgerError(.invalidAppleAppID, "apple_app_id is a positive number") }
        let consumption = try body.consumption_policy.map { given in
            if let preference = given.refund_preference, !ConsumptionPolicy.refundPreferences.contains(preference) {
                throw LedgerError(.invalidConsumptionPolicy, "refund_preference is DECLINE, GRANT_FULL or GRANT_PRORATED")
            }
            return ConsumptionPolicy(
                customerConsented: given.customer_consented, refundPreference: given.refund_preference,
                sampleContentProvided: given.sample_content_provided ?? false)
        }
        return AppSettings(
            environments: environments, appleAppID: body.apple_app_id, restorePolicy: policy, consumptionPolicy: consumption,
            appPurchase: try body.app_purchase.map(Self.appPurchase), googlePlay: try body.google_play.map(Self.googlePlay),
            serverFinishesTransactions: body.server_finishes_transactions == true ? true : nil)
    }

    /// The app on Google Play. A package name is an Android application id: dot-separated parts,
    /// each a letter followed by letters, digits or underscores.
    static func googlePlay(_ body: Wire.GooglePlayBody) throws -> GooglePlaySettings {
        let parts = body.package_name.split(separator: ".", omittingEmptySubsequences: false)
        let valid =
            body.package_name.utf8.count <= 255 && parts.count >= 2
            && parts.allSatisfy { part in
                part.first.map { $0.isASCII && $0.isLetter } == true
                    && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            }
        guard valid else {
            throw LedgerError(.invalidGooglePlay, "google_play.package_name is an Android application id such as com.example.game")
        }
        if let pubsub = body.pubsub {
            guard !pubsub.audience.isEmpty, pubsub.audience.utf8.count <= 2048, pubsub.service_account_email.contains("@") else {
                throw LedgerError(
                    .invalidGooglePlay, "google_play.pubsub names the push subscription's audience and the service account Pub/Sub signs as"
                )
            }
        }
        return GooglePlaySettings(
            packageName: body.package_name, pushAudience: body.pubsub?.audience,
            pushServiceAccountEmail: body.pubsub?.service_account_email,
            testPurchases: body.test_purchases ?? false)
    }

    static func appPurchase(_ body: Wire.AppPurchaseBody) throws -> AppPurchaseRule {
        for name in body.entitlements { try Identifier.appPurchaseEntitlement.check(name) }
        guard !body.entitlements.isEmpty else {
            throw LedgerError(.invalidAppPurchase, "app_purchase.entitlements names at least one entitlement")
        }
        var before: Date?
        if let text = body.originally_purchased_before {
            guard let date = RFC3339.parseInstant(text) else {
                throw LedgerError(.invalidAppPurchase, "originally_purchased_before is an RFC 3339 time or a date (2025-06-01)")
            }
            before = date
        }
        if let version = body.originally_before_version,
            version.isEmpty || version.utf8.count > 64 || !version.allSatisfy({ $0.isNumber || $0 == "." || $0.isLetter })
        {
            throw LedgerError(.invalidAppPurchase, "originally_before_version is a version such as 2.0 or a build number")
        }
        guard body.originally_before_version != nil || before != nil else {
            throw LedgerError(.invalidAppPurchase, "app_purchase needs originally_before_version, originally_purchased_before, or both")
        }
        return AppPurchaseRule(
            entitlements: body.entitlements, originallyBeforeVersion: body.originally_before_version, originallyPurchasedBefore: before)
    }
}
