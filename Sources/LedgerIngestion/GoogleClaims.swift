import Foundation
import GooglePlay
import LedgerCore

/// Google Play purchases presented by the app for a user. Nothing the app sends is believed but
/// the token: the ledger asks Google itself, with the app's service account, and records what
/// Google answers — through the same facts, ownership rules and answer as Apple's evidence.
extension Ingestor {
    /// What the ledger knows of the app on Google Play, and the client to ask Google with.
    struct GoogleApp {
        var settings: GooglePlaySettings
        var client: AndroidPublisherClient
    }

    func googleApp(_ app: AppConfiguration) throws -> GoogleApp {
        guard let settings = app.settings.googlePlay, let account = try app.googleAccount else {
            throw LedgerError(
                .googlePlayNotConfigured,
                "\(app.bundleID) has no Google Play package and service account; configure google_play on the app first")
        }
        return GoogleApp(settings: settings, client: google.client(for: account))
    }

    /// A purchase token the app received from Play Billing for `userID` and `productID`: Google is
    /// asked for the purchase (subscriptionsv2 for a subscription of the catalogue, productsv2
    /// otherwise), the answer checked against the app, the product and the user, kept, recorded;
    /// a paid purchase is then acknowledged (or consumed) with Google by the acknowledger.
    package func claimGooglePurchase(bundleID: String, userID: String, productID: String, token: String) async throws -> UserState {
        try await LedgerError.mapping {
            try Self.validate(userID: userID)
            try Self.validate(purchaseToken: token)
            let app = try await directory.app(bundleID)
            let google = try googleApp(app)
            guard let definition = app.catalogue.definition(of: productID, in: .googlePlay, at: Date()) else {
                throw LedgerError(
                    .unknownProduct,
                    "\(productID) is not a Google Play product of \(bundleID); define it with \"store\": \"google_play\" first")
            }
            let key = GooglePurchaseKey.of(token: token)
            let stream = try await PurchaseStream.read(store, bundleID: bundleID, originalTransactionID: key)
            let claim = try await askGoogle(token, subscription: definition.type == .autoRenewable, app: app, google: google, known: stream)
            guard claim.productIDs.contains(productID) else {
                throw LedgerError(.productMismatch, "Google says this purchase token is for another product than \(productID)")
            }
            if claim.environment == .sandbox, !google.settings.testPurchases {
                throw LedgerError(
                    .environmentNotAllowed, "this is a license tester's purchase, and \(bundleID) does not accept test purchases")
            }
            if let account = claim.accountToken, try await tokens.link(account, to: userID, bundleID: bundleID) == .linkedToAnother {
                throw LedgerError(
                    .appAccountTokenLinkedToAnotherUser,
                    "the purchase's obfuscatedExternalAccountId stands for another user of this app; it was bought on their account")
            }
            let outcome = try await recordGoogle(claim, bundleID: bundleID, user: userID, app: app)
            try await googlePurchases.remember(
                bundleID: bundleID, key: key, token: token, productID: productID, kind: claim.kind, settle: claim.owed,
                paidAt: claim.paidAt, orderID: claim.orderID)
            return try await answer(outcome, bundleID: bundleID, userID: userID)
        }
    }

    /// Google's answer about `token`, read against what the purchase's stream holds: a
    /// subscription's, or a one-time purchase's (a consumable by the catalogue's definition of the
    /// product Google names). `refundedAt`: when a one-time purchase's refund Google shows happened.
    func askGoogle(
        _ token: String, subscription: Bool, app: AppConfiguration, google: GoogleApp, known: PurchaseStream, refundedAt: Date? = nil
    ) async throws -> GoogleClaim {
        if subscription {
            let answer = try await google.client.subscription(package: google.settings.packageName, token: token)
            return GoogleClaim(subscription: answer, token: token, known: known)
        }
        let answer = try await google.client.productV2(package: google.settings.packageName, token: token)
        let product = answer.model.productLineItem?.first?.productId ?? ""
        let consumable = app.catalogue.definition(of: product, in: .googlePlay, at: Date())?.type == .consumable
        return GoogleClaim(product: answer, token: token, known: known, consumable: consumable, refundedAt: refundedAt)
    }

    /// Keeps Google's answer and records its facts; `user` owns the purchase (by `policy`, the
    /// app's restore policy unless given) and only it — the purchase it replaced stays with
    /// whoever owns that one.
    func recordGoogle(
        _ claim: GoogleClaim, bundleID: String, user: String?, app: AppConfiguration, policy: RestorePolicy? = nil
    ) async throws -> FactRecorder.Outcome {
        let item = EvidenceStore.Item(body: String(decoding: claim.raw, as: UTF8.self), kind: claim.evidenceKind, bundleID: bundleID)
        let key = claim.key
        let claimant = FactRecorder.Claimant(
            user: { original in original == key ? user : nil }, policy: policy ?? app.settings.restorePolicy,
            presenter: user, catalogue: app.catalogue)
        var work = try FactRecorder.work(for: claim.events, bundleID: bundleID, evidence: item.digest, claimant: claimant, now: Date())
        let stream = LedgerStream.purchase(bundleID, originalTransactionID: key)
        if let user, !work.contains(where: { $0.stream == stream }) {
            // A pending purchase states no fact yet, but it is the user's from now on.
            work.append(
                FactRecorder.StreamWork(
                    stream: stream, candidates: [], claim: (key, user), policy: claimant.policy, catalogue: app.catalogue))
        }
        guard !work.isEmpty else { return FactRecorder.Outcome() }
        return try await group.record(GroupRecorder.Request(evidence: [item], work: work, bundleID: bundleID, presenter: user))
    }

    /// Play Billing's tokens are opaque text of a few hundred characters.
    static func validate(purchaseToken token: String) throws {
        guard !token.isEmpty, token.utf8.count <= 4096,
            token.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw LedgerError(.invalidPurchaseToken, "purchase_token is the token Play Billing returned: 1–4096 printable ASCII characters")
        }
    }
}

/// Google's answer about one purchase, whichever kind, as the claim and the notifications use it.
struct GoogleClaim: Sendable {
    var key: String
    var kind: GooglePurchases.Kind
    var events: [LedgerEvent]
    var raw: Data
    var productIDs: [String]
    var environment: AppleEnvironment
    var accountToken: UUID?
    /// What Google is still to be told once this is recorded (nil: nothing, or not yet paid).
    var owed: GooglePurchases.Settlement?
    var paidAt: Date?
    /// The purchase this one continues (an upgrade's old token, a resubscription's expired one).
    var lineage: String?

    var evidenceKind: EvidenceStore.Kind { kind == .subscription ? .googleSubscription : .googleProduct }

    /// Google's order id of the purchase, when Google named one.
    var orderID: String? {
        events.compactMap(\.transactionFacts).map(\.transactionID).first { !GooglePurchaseKey.isGoogle($0) }
    }

    init(subscription answer: GoogleEvidence<SubscriptionPurchaseV2>, token: String, known: PurchaseStream) {
        let facts = GoogleSubscriptionFacts(token: token, answer: answer.model, answeredAt: Date())
        key = facts.key
        kind = .subscription
        events = facts.events(known: known.transactions)
        raw = answer.raw
        productIDs = facts.productIDs
        environment = facts.environment
        accountToken = facts.accountToken
        paidAt = facts.isPending ? nil : answer.model.startTime.flatMap(RFC3339.parse)
        owed = facts.isPending || facts.isAcknowledged ? nil : .acknowledge
        lineage = answer.model.linkedPurchaseToken.map(GooglePurchaseKey.of(token:)) ?? facts.continues
    }

    init(
        product answer: GoogleEvidence<ProductPurchaseV2>, token: String, known: PurchaseStream, consumable: Bool, refundedAt: Date? = nil
    ) {
        let facts = GoogleProductFacts(token: token, answer: answer.model, answeredAt: Date())
        key = facts.key
        kind = .product
        events = facts.events(
            refunded: known.refundedShare(of: facts.transactionID), recorded: known.transaction(facts.transactionID) != nil,
            refundedAt: refundedAt)
        raw = answer.raw
        productIDs = facts.productIDs
        environment = facts.environment
        accountToken = facts.accountToken
        paidAt = facts.isPending ? nil : answer.model.purchaseCompletionTime.flatMap(RFC3339.parse)
        owed = Self.owed(facts, consumable: consumable)
    }

    /// A consumable is consumed (which acknowledges it too), anything else acknowledged; nothing
    /// is owed for a purchase not paid, cancelled, or already settled with Google.
    static func owed(_ facts: GoogleProductFacts, consumable: Bool) -> GooglePurchases.Settlement? {
        guard !facts.isPending, facts.state != "CANCELLED" else { return nil }
        if consumable { return facts.isConsumed ? nil : .consume }
        return facts.isAcknowledged ? nil : .acknowledge
    }
}
