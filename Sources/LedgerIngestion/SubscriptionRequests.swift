import AppStore
import AppStoreServerAPI
import Foundation
import LedgerCore
import LedgerEventStore
import LedgerProjections

/// What support and the app ask Apple to do on their behalf: extend one subscription's renewal
/// date, extend every active subscriber of a product, and keep a user's appAccountToken on their
/// purchases. Apple's limits are checked before asking — so the answer is a clear 4xx, not a
/// refusal from Apple an hour of retries later — and each request Apple accepted is a fact.
extension AppleLookups {
    /// One subscription's extension, as Apple answered it.
    package struct Extended: Sendable {
        package var originalTransactionID: String
        package var webOrderLineItemID: String?
        package var effectiveDate: Date?
    }

    /// Extends the subscription `originalTransactionID` by `days` at Apple, then records the
    /// request and restates the subscription as Apple now states it (its later expiry), so the
    /// answer and every read after it show the new date; Apple's RENEWAL_EXTENDED notification
    /// restates it again, changing nothing.
    package func extend(
        bundleID: String, originalTransactionID: String, days: Int, reasonCode: Int, requestID: String,
        actor: String, now: Date = Date()
    ) async throws -> Extended {
        try await LedgerError.mapping {
            try Self.checkExtension(days: days, reasonCode: reasonCode, requestID: requestID)
            let app = try await ingestor.directory.app(bundleID)
            let key = try Self.key(of: app)
            let stream = try await PurchaseStream.read(ingestor.store, bundleID: bundleID, originalTransactionID: originalTransactionID)
            guard let latest = stream.facts.compactMap(\.event.transactionFacts).max(by: { $0.purchaseDate < $1.purchaseDate }) else {
                throw LedgerError(
                    .unknownTransaction, "the ledger knows no purchase \(originalTransactionID) of \(bundleID); sync or post it first")
            }
            guard latest.expiresDate != nil else {
                throw LedgerError(.notASubscription, "\(originalTransactionID) is not an auto-renewable subscription")
            }
            if latest.ownership == .familyShared {
                throw LedgerError(
                    .familySharedNotSupported, "a family-shared subscription is extended through the family member who bought it")
            }
            let earlier = stream.facts.compactMap { fact -> RenewalExtension? in
                if case .renewalExtended(let e) = fact.event { e } else { nil }
            }
            // Apple takes the same request id again as the same request: a retry does not count twice.
            let retry = earlier.contains { $0.requestID == requestID }
            if !retry,
                Set(earlier.filter({ now.timeIntervalSince($0.requestedAt) < 365 * 86_400 }).map(\.requestID)).count
                    >= RenewalExtension.perYear
            {
                throw LedgerError(
                    .extensionLimitReached,
                    "\(originalTransactionID) was extended \(RenewalExtension.perYear) times in the last 365 days: Apple allows no more")
            }
            let answer = try await api.extendRenewalDate(
                originalTransactionID: originalTransactionID, days: days, reasonCode: reasonCode,
                requestID: requestID, in: latest.environment, as: key)
            guard answer.success != false else {
                throw LedgerError(.extensionIneligible, "Apple did not extend \(originalTransactionID)")
            }
            let effective = answer.effectiveDate.map { Date(timeIntervalSince1970: $0 / 1000) }
            let request = RenewalExtension(
                originalTransactionID: originalTransactionID, days: days, reasonCode: reasonCode, requestID: requestID,
                actor: actor, requestedAt: now, effectiveDate: effective, webOrderLineItemID: answer.webOrderLineItemId)
            var last =
                retry
                ? nil
                : try await ingestor.recorder.record([.renewalExtended(request)], bundleID: bundleID, evidence: nil, claimant: .nobody)
                    .lastPosition
            // The subscription as Apple states it now. Apple's notification says it again if this fails.
            if let statuses = try? await api.subscriptionStatuses(originalTransactionID, in: latest.environment, as: key) {
                let pieces = try await statusPieces(statuses, app, only: originalTransactionID)
                if !pieces.isEmpty, let position = try await ingestor.record(pieces, bundleID: bundleID, claimant: .nobody).lastPosition {
                    last = max(last ?? position, position)
                }
            }
            if let last { try await ingestor.waitUntilProjected(last) }
            return Extended(
                originalTransactionID: originalTransactionID, webOrderLineItemID: answer.webOrderLineItemId, effectiveDate: effective)
        }
    }

    /// Extends every active subscriber of `productID` at Apple (in `storefronts`, or all); Apple
    /// works through them and later sends a RENEWAL_EXTENSION / SUMMARY. Returns the request id.
    package func extendAll(
        bundleID: String, productID: String, days: Int, reasonCode: Int, requestID: String, storefronts: [String],
        environment asked: AppleEnvironment?, actor: String, now: Date = Date()
    ) async throws -> String {
        try await LedgerError.mapping {
            try Self.checkExtension(days: days, reasonCode: reasonCode, requestID: requestID)
            for storefront in storefronts where storefront.count != 3 || !storefront.allSatisfy({ $0.isASCII && $0.isUppercase }) {
                throw LedgerError(.invalidStorefront, "storefronts are ISO 3166-1 alpha-3 codes such as USA, not \(storefront)")
            }
            let app = try await ingestor.directory.app(bundleID)
            guard let product = app.products.first(where: { $0.productID == productID }) else {
                throw LedgerError(.unknownProduct, "no product \(productID) is configured for \(bundleID)")
            }
            guard product.type == .autoRenewable else {
                throw LedgerError(
                    .notASubscription, "\(productID) is \(product.type.rawValue): only auto-renewable subscriptions are extended")
            }
            let environment = try Self.extensionEnvironment(of: app, asked: asked)
            let accepted = try await api.extendForAllActiveSubscribers(
                productID: productID, days: days, reasonCode: reasonCode, requestID: requestID,
                storefronts: storefronts, in: environment, as: try Self.key(of: app))
            let request = MassRenewalExtension(
                productID: productID, days: days, reasonCode: reasonCode, requestID: accepted, storefronts: storefronts,
                environment: environment, actor: actor, requestedAt: now)
            _ = try await ingestor.recorder.record(
                [.massRenewalExtensionRequested(request)], bundleID: bundleID, evidence: nil, claimant: .nobody)
            return accepted
        }
    }

    /// How far Apple got with a mass extension.
    package func extensionStatus(
        bundleID: String, productID: String, requestID: String, environment asked: AppleEnvironment?
    ) async throws -> MassExtensionStatus {
        try await LedgerError.mapping {
            let app = try await ingestor.directory.app(bundleID)
            return try await api.massExtensionStatus(
                productID: productID, requestID: requestID, in: try Self.extensionEnvironment(of: app, asked: asked),
                as: try Self.key(of: app))
        }
    }

    /// The environment asked for, if the app takes it; by default Production when the app takes
    /// it, else the sandbox: a mass extension acts on one environment's subscribers.
    static func extensionEnvironment(of app: AppConfiguration, asked: AppleEnvironment?) throws -> AppleEnvironment {
        if let asked {
            guard asked == .production || asked == .sandbox, app.settings.environments.contains(asked) else {
                throw LedgerError(.invalidEnvironment, "environment is Production or Sandbox, one the app accepts")
            }
            return asked
        }
        return app.settings.environments.contains(.production) ? .production : .sandbox
    }

    /// Apple's limits, checked before asking: 1–90 days, a reason code 0–3, a request id.
    static func checkExtension(days: Int, reasonCode: Int, requestID: String) throws {
        guard (1...RenewalExtension.maximumDays).contains(days) else {
            throw LedgerError(.invalidDays, "days is 1–\(RenewalExtension.maximumDays): Apple extends a renewal date by at most 90 days")
        }
        guard (0...3).contains(reasonCode) else {
            throw LedgerError(
                .invalidReasonCode, "reason_code is 0 (undeclared), 1 (customer satisfaction), 2 (other) or 3 (service issue or outage)")
        }
        guard (1...128).contains(requestID.utf8.count),
            requestID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else {
            throw LedgerError(
                .invalidRequestID,
                "request_id is 1–128 letters, digits, '-' or '_' (a UUID is usual); sending it again repeats the same request")
        }
    }
}

extension AppleLookups {
    /// What became of one purchase when a user's appAccountToken was sent to Apple.
    package struct TokenAtApple: Sendable, Equatable {
        package var originalTransactionID: String
        /// `sent`; `already_at_apple` (Apple's latest transaction carries it); `already_sent`;
        /// `family_shared` (Apple keeps no token on a shared copy); or the code Apple's refusal has here.
        package var status: String
    }

    /// Sets `token` at Apple on each purchase `userID` owns whose latest transaction carries no
    /// token or another one, so Apple's later notifications and purchases made outside the app
    /// carry it. Each purchase Apple took it for is a fact, and is not sent again. Nil when the
    /// app has no In-App Purchase key (nothing can be sent).
    package func sendToken(_ token: UUID, of userID: String, bundleID: String, now: Date = Date()) async throws -> [TokenAtApple]? {
        try await LedgerError.mapping {
            let app = try await ingestor.directory.app(bundleID)
            guard let key = try app.serverAPI else { return nil }
            // One read: the user's purchases with what was already sent to Apple about them.
            let ledger = try await ingestor.users.ledger(bundleID: bundleID, userID: userID, withEvidence: true)
            let owned = Set(ledger.transactions(ownedBy: userID).map(\.originalTransactionID))
            var results: [TokenAtApple] = []
            for original in owned.sorted() {
                let facts = ledger.facts(ofTransaction: original)
                guard let latest = facts.compactMap(\.event.transactionFacts).max(by: { $0.signedDate < $1.signedDate }),
                    latest.environment == .production || latest.environment == .sandbox
                else { continue }
                let sent = facts.contains { if case .appAccountTokenSent(let t) = $0.event { t.appAccountToken == token } else { false } }
                let status: String
                if latest.appAccountToken == token {
                    status = "already_at_apple"
                } else if sent {
                    status = "already_sent"
                } else if latest.ownership == .familyShared {
                    status = "family_shared"
                } else {
                    do {
                        try await api.setAppAccountToken(token, originalTransactionID: original, in: latest.environment, as: key)
                        _ = try await ingestor.recorder.record(
                            [
                                .appAccountTokenSent(
                                    AppAccountTokenSent(
                                        originalTransactionID: original, appAccountToken: token, userID: userID, sentAt: now))
                            ],
                            bundleID: bundleID, evidence: nil, claimant: .nobody)
                        status = "sent"
                    } catch let error as LedgerError {
                        status = error.code.rawValue
                    }
                }
                results.append(TokenAtApple(originalTransactionID: original, status: status))
            }
            return results
        }
    }
}
