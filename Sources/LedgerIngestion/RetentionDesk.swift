import AppStore
import AppStoreServerAPI
import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerFormats
import LedgerPostgres
import LedgerProjections

/// Apple's realtime retention requests (Retention Messaging), answered from the subscriber's
/// history: Apple asks, while a customer looks at the page where they may cancel, what to show
/// them; the app's rules are tried in order against what the ledger knows of the subscription's
/// owner — paid time, renewals, billing trouble, refunds — and the first that holds answers. An
/// offer is signed only for a user its catalogue rule makes eligible; otherwise the next rule.
/// Every answer to a known user is a `RetentionDecided` fact of theirs.
package struct RetentionDesk: Sendable {
    let ingestor: Ingestor
    /// Decisions are facts at no particular version of the user's stream: committed in groups.
    let decisions: GroupedAppends

    package init(ingestor: Ingestor) {
        self.ingestor = ingestor
        self.decisions = GroupedAppends(store: ingestor.store)
    }

    /// The request Apple signs (`DecodedRealtimeRequestBody`); every field is Apple's required one.
    struct Request: Decodable {
        var originalTransactionId: String
        var productId: String
        var userLocale: String
        var requestIdentifier: String
    }

    private struct Body: Decodable { var signedPayload: String }

    /// What Apple is answered: the `RealtimeResponseBody` (one member, or none when nothing
    /// applies — Apple then shows the default it keeps), and the decision recorded, if any.
    package struct Answer: Sendable {
        package var body: [UInt8]
        /// `message`, `alternate_product`, `promotional_offer`, or `none`.
        package var kind: String
        package var decision: RetentionDecision?
    }

    /// Verifies Apple's request (chain to the configured roots, Apple's markers, validity at its
    /// signed date, this app's Apple app id, an environment the app accepts) and answers it.
    package func answer(bundleID: String, body: Data, now: Date = Date()) async throws -> Answer {
        try await LedgerError.mapping {
            let app = try await ingestor.directory.app(bundleID)
            guard let settings = app.settings.retention else {
                throw LedgerError(
                    .retentionNotConfigured, "\(bundleID) has no retention rules; PUT /v1/apps/\(bundleID)/retention first")
            }
            guard let signed = try? JSONDecoder().decode(Body.self, from: body).signedPayload else {
                throw LedgerError(.malformed, "the body is Apple's {\"signedPayload\": …}")
            }
            let verified = try await ingestor.verifier.verify(signed, as: .realtimeRequest, expecting: app.expectation)
            guard let request = try? StorageDecoder.decode(Request.self, from: verified.tree) else {
                throw LedgerError(
                    .malformed, "the realtime request lacks originalTransactionId, productId, userLocale or requestIdentifier")
            }
            let read = try await ingestor.users.ledger(bundleID: bundleID, owning: request.originalTransactionId)
            let owner = read.owner
            let ledger = owner == nil ? nil : read.ledger
            let subject =
                if let owner, let ledger {
                    RetentionSubject.of(
                        ledger, userID: owner, originalTransactionID: request.originalTransactionId, productID: request.productId,
                        locale: request.userLocale, now: now)
                } else {
                    RetentionSubject(productID: request.productId, locale: request.userLocale, history: nil)
                }
            let chosen = try choose(settings, subject: subject, request: request, app: app, owner: owner, ledger: ledger, now: now)
            let kind = chosen.answer?.kind ?? "none"
            guard let owner, chosen.answer != nil else { return Answer(body: chosen.body, kind: kind, decision: nil) }
            let decision = RetentionDecision(
                userID: owner, requestID: request.requestIdentifier, originalTransactionID: request.originalTransactionId,
                productID: request.productId, locale: request.userLocale, environment: verified.environment, rule: chosen.rule,
                answer: kind, messageID: chosen.answer?.message.uuidString.lowercased() ?? "",
                alternateProductID: chosen.alternateProduct, offerID: chosen.offer, skipped: chosen.skipped, decidedAt: now)
            try await record(decision, with: chosen.signature.map { [.offerSigned($0)] } ?? [], bundleID: bundleID)
            return Answer(body: chosen.body, kind: kind, decision: decision)
        }
    }

    /// Records the decision (and the offer it signed) on the user's stream, at whatever version it
    /// has: an append at any version takes the stream's row lock inside `append_events`, so the
    /// many requests Apple sends at once about one subscriber (its performance test sends a
    /// hundred about one) queue there instead of failing; concurrent ones commit together. The
    /// ids derive from Apple's request id, so a request Apple sends again is recorded once.
    private func record(_ decision: RetentionDecision, with others: [LedgerEvent], bundleID: String) async throws {
        let id = StableID.make(bundleID, "retention", decision.requestID)
        var events: [NewEvent] = []
        var stream = ""
        for (index, event) in ([LedgerEvent.retentionDecided(decision)] + others).enumerated() {
            let made = try StoredFacts.newEvent(
                event, bundleID: bundleID, id: index == 0 ? id : StableID.make(bundleID, "retention", decision.requestID, String(index)),
                occurredAt: decision.decidedAt)
            stream = made.stream
            events.append(made.event)
        }
        do {
            try await decisions.append(events, to: stream)
        } catch EventStoreError.idempotencyConflict(_, let ids) where ids.contains(id.uuidString.lowercased()) {
            // Apple sent this request before: its decision stands as first recorded (the id is
            // the request's; the content differs only by when it was decided).
        }
    }

    /// The answer chosen, its body for Apple, and what to record beside the decision.
    struct Chosen {
        var answer: RetentionAnswer?
        var rule: String?
        var alternateProduct: String?
        var offer: String?
        var skipped: [String] = []
        var signature: OfferSignature?
        var body: [UInt8] = Array("{}".utf8)
    }

    /// The first rule that holds and can be given; the default message when none can; nothing
    /// when there is no default either.
    private func choose(
        _ settings: RetentionSettings, subject: RetentionSubject, request: Request, app: AppConfiguration, owner: String?,
        ledger: AppLedger?, now: Date
    ) throws -> Chosen {
        var chosen = Chosen()
        for rule in RetentionPolicy.matching(settings, subject) {
            switch rule.answer {
            case .message(let message):
                chosen.body = Self.body("message", ["messageIdentifier": message.uuidString.lowercased()])
            case .alternateProduct(let message, let product, let plan):
                var fields = ["messageIdentifier": message.uuidString.lowercased(), "productId": product]
                fields["billingPlanType"] = plan
                chosen.body = Self.body("alternateProduct", fields)
                chosen.alternateProduct = product
            case .promotionalOffer(let message, let offer):
                switch try offerSignature(
                    offer, version: settings.offerSignature, request: request, app: app, owner: owner, ledger: ledger, now: now)
                {
                case .refused(let why):
                    chosen.skipped.append("\(rule.name): \(why)")
                    continue
                case .signed(let member, let signature):
                    chosen.body = Self.body(
                        "promotionalOffer", ["messageIdentifier": message.uuidString.lowercased()], signature: member)
                    chosen.offer = offer
                    chosen.signature = signature
                }
            }
            chosen.answer = rule.answer
            chosen.rule = rule.name
            return chosen
        }
        if let message = settings.defaultMessage {
            chosen.answer = .message(message)
            chosen.body = Self.body("message", ["messageIdentifier": message.uuidString.lowercased()])
        }
        return chosen
    }

    enum OfferOutcome {
        /// The answer's signature member (`promotionalOfferSignatureV2` or `…V1`) and the fact.
        case signed((key: String, value: SignatureValue), OfferSignature)
        case refused(String)
    }

    enum SignatureValue {
        case jws(String)
        case legacy([String: String], timestamp: Int64)
    }

    /// One of the viewed product's catalogue offers signed for the owner, if the offer's rule makes
    /// them eligible and the app has a key to sign with; otherwise why not.
    private func offerSignature(
        _ offerID: String, version: RetentionSettings.OfferSignatureVersion, request: Request, app: AppConfiguration,
        owner: String?, ledger: AppLedger?, now: Date
    ) throws -> OfferOutcome {
        guard let owner, let ledger else { return .refused("nobody the ledger knows owns the subscription") }
        guard let product = app.products.first(where: { $0.productID == request.productId }),
            let rule = product.offers?[offerID]
        else {
            return .refused("\(request.productId) declares no offer \(offerID) in the catalogue")
        }
        let decision = OfferEligibility.decide(rule, entitlements: product.entitlements, timeline: ledger.timeline(of: owner), now: now)
        guard decision.eligible else { return .refused(decision.reason) }
        guard let key = try? AppleLookups.key(of: app) else { return .refused("the app has no In-App Purchase key to sign offers with") }
        let signer = OfferSigner(credentials: key)
        let nonce = UUID()
        let fact = { (kind: OfferSignature.Kind, transaction: String?) in
            OfferSignature(
                userID: owner, kind: kind, productID: request.productId, offerID: offerID, eligible: true,
                nonce: nonce.uuidString.lowercased(), transactionID: transaction, keyID: signer.keyID, signedAt: now,
                reason: "retention: " + decision.reason)
        }
        switch version {
        case .v2:
            let jws = try signer.promotionalOffer(
                productID: request.productId, offerID: offerID, transactionID: request.originalTransactionId, nonce: nonce, at: now)
            return .signed(("promotionalOfferSignatureV2", .jws(jws)), fact(.promotionalOffer, request.originalTransactionId))
        case .v1:
            let username = OfferDesk.applicationUsername(of: owner, in: ledger)
            let legacy = try signer.legacyPromotionalOffer(
                productID: request.productId, offerID: offerID, applicationUsername: username, nonce: nonce, at: now)
            var fields = [
                "encodedSignature": legacy.signature, "productId": request.productId, "nonce": legacy.nonce, "keyId": legacy.keyID,
                "offerIdentifier": offerID,
            ]
            if !username.isEmpty { fields["appAccountToken"] = username }
            return .signed(
                ("promotionalOfferSignatureV1", .legacy(fields, timestamp: legacy.timestamp)), fact(.promotionalOfferLegacy, nil))
        }
    }
}
