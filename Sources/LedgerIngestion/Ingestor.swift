import AppStore
import Foundation
import GooglePlay
import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerPostgres
import LedgerProjections
import Logging

/// A store's evidence in, events out: verify against the app's configuration (Apple's signatures;
/// Google's answer to the ledger's own question), keep the raw evidence, record what it says and
/// (for evidence a user presented) who owns it, then answer the user's state including what was
/// just recorded.
package struct Ingestor: Sendable {
    package let directory: AppDirectory
    let store: EventStore
    let evidence: EvidenceStore
    let recorder: FactRecorder
    let group: GroupRecorder
    let verifier: SignedDataVerifier
    let receipts: VerifyReceiptClient
    let users: UserStateReader
    package let tokens: AppAccountTokens
    /// Apple's CONSUMPTION_REQUESTs waiting for the responder.
    package let consumptionRequests: ConsumptionRequests
    let freshness: ProjectionFreshness
    /// Google Play's Developer API, one client per service account.
    package let google: GooglePublishers
    /// Google purchases' tokens, and the acknowledgements still owed to Google.
    package let googlePurchases: GooglePurchases
    /// Transactions to finish at Apple, for apps whose server finishes them.
    package let appleFinishes: AppleFinishes
    let logger: Logger

    /// `reader` answers the user's state once `freshness` says the projection holds what was recorded.
    package init(
        store: EventStore, evidence: EvidenceStore, directory: AppDirectory, verifier: SignedDataVerifier,
        receipts: VerifyReceiptClient, freshness: ProjectionFreshness, reader: UserStateReader, google: GooglePublishers? = nil,
        logger: Logger, groupWritten: @escaping @Sendable (_ size: Int, _ took: Duration) -> Void = { _, _ in }
    ) {
        self.store = store
        self.directory = directory
        self.freshness = freshness
        self.evidence = evidence
        self.recorder = FactRecorder(store: store)
        self.group = GroupRecorder(
            store: store, evidence: evidence, recorder: recorder, projection: InlineProjection(cache: reader.cache), written: groupWritten)
        self.tokens = AppAccountTokens(store: store)
        self.consumptionRequests = ConsumptionRequests(pool: evidence.pool, store: store)
        self.google = google ?? GooglePublishers(configuration: GooglePlayConfiguration(), logger: logger)
        self.googlePurchases = GooglePurchases(pool: evidence.pool)
        self.appleFinishes = AppleFinishes(pool: evidence.pool)
        self.verifier = verifier
        self.receipts = receipts
        self.users = reader
        self.logger = logger
    }

    /// A StoreKit 2 signed transaction posted by the app for `userID` — or, when the app names no
    /// user, for the user the transaction's `appAccountToken` is linked to.
    package func ingestTransaction(bundleID: String, userID: String?, signedTransaction: String) async throws -> UserState {
        try await LedgerError.mapping {
            if let userID { try Self.validate(userID: userID) }
            let app = try await directory.app(bundleID)
            let transaction = try await verifier.verifyTransaction(signedTransaction, expecting: app.expectation)
            let presenter = try await presenter(userID, token: transaction.facts.appAccountToken, bundleID: bundleID)
            let item = EvidenceStore.Item(body: signedTransaction, kind: .signedTransaction, bundleID: bundleID)
            let events = EvidenceEvents.events(for: transaction)
            let outcome = try await record(
                events, evidence: [item], bundleID: bundleID,
                claimant: .presenter(presenter, policy: app.settings.restorePolicy, catalogue: app.catalogue))
            // Once recorded (the same transaction again re-enqueues nothing): Apple is told it is finished.
            try await appleFinishes.enqueue(events, app: app)
            return try await answer(outcome, bundleID: bundleID, userID: presenter)
        }
    }

    /// The app's own purchase (a StoreKit signed AppTransaction) posted by the app for `userID`:
    /// verified like any JWS, kept, recorded in the user's stream (presenting it again records
    /// nothing), answered with the user's state — which the app's `app_purchase` rule may change.
    package func ingestAppTransaction(bundleID: String, userID: String, signedAppTransaction: String) async throws -> UserState {
        try await LedgerError.mapping {
            try Self.validate(userID: userID)
            let app = try await directory.app(bundleID)
            let decoded = try await verifier.verifyAppTransaction(signedAppTransaction, expecting: app.expectation)
            let digest = try await evidence.store(Data(signedAppTransaction.utf8), kind: .appTransaction, bundleID: bundleID)
            do {
                let outcome = try await recorder.record(
                    EvidenceEvents.events(for: decoded, userID: userID), bundleID: bundleID, evidence: digest,
                    claimant: .presenter(userID, policy: app.settings.restorePolicy, catalogue: app.catalogue))
                return try await answer(outcome, bundleID: bundleID, userID: userID)
            } catch EventStoreError.idempotencyConflict {
                // The fact's id derives from everything it says, so the same id here is the same
                // purchase presented through another signature (the app fetched it again): recorded.
                return try await users.currentState(bundleID: bundleID, userID: userID)
            }
        }
    }

    /// Links `token` to `userID` for the app (the app does this when it chooses the token, before
    /// the purchase). Linking the same pair again is a no-op; a token linked to someone else is a conflict.
    package func linkToken(_ token: UUID, to userID: String, bundleID: String) async throws -> AppAccountTokens.LinkResult {
        try await LedgerError.mapping {
            try Self.validate(userID: userID)
            _ = try await directory.app(bundleID)
            let result = try await tokens.link(token, to: userID, bundleID: bundleID)
            if result == .linkedToAnother {
                throw LedgerError(.appAccountTokenLinkedToAnotherUser, "this appAccountToken already stands for another user of this app")
            }
            return result
        }
    }

    /// The user `token` stands for (support's "whose purchase is this?").
    package func tokenHolder(_ token: UUID, bundleID: String) async throws -> String {
        try await LedgerError.mapping {
            _ = try await directory.app(bundleID)
            guard let user = try await tokens.user(of: token, bundleID: bundleID) else {
                throw LedgerError(.unknownAppAccountToken, "no user of this app is linked to that appAccountToken")
            }
            return user
        }
    }

    /// Who presents a transaction: the user the app names, who then also holds the transaction's
    /// token if it was linked to nobody yet (the first link wins, so naming a user never moves a
    /// token); or, with no user named, the user the token is linked to.
    func presenter(_ userID: String?, token: UUID?, bundleID: String) async throws -> String {
        if let userID {
            if let token { try await tokens.link(token, to: userID, bundleID: bundleID) }
            return userID
        }
        guard let token else {
            throw LedgerError(.missingUserID, "user_id is required unless the transaction carries an appAccountToken linked to a user")
        }
        guard let linked = try await tokens.user(of: token, bundleID: bundleID) else {
            throw LedgerError(
                .unknownAppAccountToken,
                "the transaction's appAccountToken \(token.uuidString.lowercased()) is linked to no user; send user_id, or link the token first",
                kind: .invalid)
        }
        return linked
    }

    /// A legacy receipt posted by the app for `userID`, verified with Apple's verifyReceipt.
    package func ingestReceipt(bundleID: String, userID: String, receiptData: String) async throws -> UserState {
        try await LedgerError.mapping {
            try Self.validate(userID: userID)
            let app = try await directory.app(bundleID)
            guard let secret = try app.sharedSecret else {
                throw LedgerError(.sharedSecretMissing, "legacy receipts need the app's shared_secret; configure it first")
            }
            let verified = try await receipts.verify(receiptData: receiptData, sharedSecret: secret, expecting: app.expectation)
            let receipt = EvidenceStore.Item(body: receiptData, kind: .receipt, bundleID: bundleID)
            // What Apple answered, in brief (the receipt itself is kept too). No optional may reach
            // JSONSerialization: it raises on one instead of throwing.
            var summary: [String: Any] = [
                "status": verified.response.status, "environment": verified.environment.rawValue, "bundle_id": bundleID,
                "transactions": verified.response.transactions.map(\.transactionID),
            ]
            if let requested = verified.response.requestDate { summary["request_date_ms"] = Int64(requested.timeIntervalSince1970 * 1000) }
            let answer = String(decoding: try JSONSerialization.data(withJSONObject: summary, options: .sortedKeys), as: UTF8.self)
            let events = EvidenceEvents.events(
                for: verified.response, environment: verified.environment,
                statedAt: verified.response.requestDate ?? Date())
            let outcome = try await record(
                events, evidence: [receipt, .init(body: answer, kind: .receiptAnswer, bundleID: bundleID, answers: receipt.digest)],
                bundleID: bundleID, claimant: .presenter(userID, policy: app.settings.restorePolicy, catalogue: app.catalogue))
            return try await self.answer(outcome, bundleID: bundleID, userID: userID)
        }
    }

    package enum NotificationResult: Sendable, Equatable {
        case recorded
        case alreadyRecorded
    }

    /// An App Store Server Notification, V1 or V2, for `bundleID`. Recorded whether or not any
    /// user has claimed its transaction yet: a later claim attaches it.
    package func ingestNotification(bundleID: String, body: Data) async throws -> NotificationResult {
        try await LedgerError.mapping {
            let app = try await directory.app(bundleID)
            guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else {
                throw LedgerError(.malformedJSON, "the notification is not a JSON object")
            }
            let events: [LedgerEvent]
            let digest: String
            var consumptionRequest: (AppleNotification, TransactionFacts)?
            if object["signedPayload"] != nil {
                let verified = try await verifier.verifyNotification(body: body, expecting: app.expectation)
                events = EvidenceEvents.events(for: verified)
                digest = try await evidence.store(body, kind: .notificationV2, bundleID: bundleID)
                if verified.notification.notificationType == "CONSUMPTION_REQUEST", let transaction = verified.transaction {
                    consumptionRequest = (verified.notification, transaction.facts)
                }
            } else if VerifiedNotificationV1.looksLikeV1(object) {
                let verified = try VerifiedNotificationV1(
                    body: body, sharedSecret: try app.sharedSecret, expecting: app.expectation, receivedAt: Date())
                events = EvidenceEvents.events(for: verified)
                // The password is the app's secret: it is redacted before the body is kept.
                var redacted = object
                redacted["password"] = "<redacted>"
                digest = try await evidence.store(
                    try JSONSerialization.data(withJSONObject: redacted, options: .sortedKeys),
                    kind: .notificationV1, bundleID: bundleID)
            } else {
                throw LedgerError(.malformed, "neither a V2 notification (signedPayload) nor a V1 one (notification_type)")
            }
            let outcome = try await recorder.record(
                events, bundleID: bundleID, evidence: digest,
                claimant: .tokenHolders(try await tokenHolders(of: events, bundleID: bundleID)))
            // Apple asks before deciding a refund; the consumption responder answers (even when the
            // notification was recorded before: a crash between the two must not lose the request).
            if let (notification, transaction) = consumptionRequest {
                try await consumptionRequests.enqueue(notification, transaction: transaction, bundleID: bundleID)
            }
            try await appleFinishes.enqueue(events, app: app)
            guard outcome.wroteAny, let position = outcome.lastPosition else { return .alreadyRecorded }
            // Like every write: once answered, every read sees it.
            try await freshness.wait(for: position, logger: logger)
            return .recorded
        }
    }

    /// Keeps the evidence and records its events, together with other requests arriving meanwhile
    /// (`GroupRecorder`); events reference the last piece of evidence (a receipt's: Apple's answer).
    func record(
        _ events: [LedgerEvent], evidence: [EvidenceStore.Item], bundleID: String, claimant: FactRecorder.Claimant
    ) async throws -> FactRecorder.Outcome {
        let work = try FactRecorder.work(for: events, bundleID: bundleID, evidence: evidence.last?.digest, claimant: claimant, now: Date())
        return try await group.record(
            GroupRecorder.Request(evidence: evidence, work: work, bundleID: bundleID, presenter: claimant.presenter))
    }

    /// Apple's evidence, each piece verified on its own, recorded together: each event references
    /// its own piece, the pieces' streams are appended as one group request (restatements among
    /// them recorded once, `FactRecorder.plan`).
    func record(_ pieces: [VerifiedPiece], bundleID: String, claimant: FactRecorder.Claimant) async throws -> FactRecorder.Outcome {
        var merged: [FactRecorder.StreamWork] = []
        var index: [String: Int] = [:]
        var ids: Set<UUID> = []
        for piece in pieces {
            for var work in try FactRecorder.work(
                for: piece.events, bundleID: bundleID, evidence: piece.item.digest, claimant: claimant, now: Date())
            {
                work.candidates = work.candidates.filter { ids.insert($0.id).inserted }
                if let at = index[work.stream] {
                    merged[at].candidates += work.candidates
                } else {
                    index[work.stream] = merged.count
                    merged.append(work)
                }
            }
        }
        var digests: Set<String> = []
        let evidence = pieces.map(\.item).filter { digests.insert($0.digest).inserted }
        guard !merged.isEmpty else { return FactRecorder.Outcome() }
        return try await group.record(
            GroupRecorder.Request(evidence: evidence, work: merged, bundleID: bundleID, presenter: claimant.presenter))
    }

    /// original transaction → user, for the transactions among `events` whose appAccountToken is
    /// linked to a user: a notification attributes a purchase nobody claimed yet to them.
    func tokenHolders(of events: [LedgerEvent], bundleID: String) async throws -> [String: String] {
        var holders: [String: String] = [:]
        for event in events {
            guard let facts = event.transactionFacts, let token = facts.appAccountToken, holders[facts.originalTransactionID] == nil else {
                continue
            }
            holders[facts.originalTransactionID] = try await tokens.user(of: token, bundleID: bundleID)
        }
        return holders
    }

    /// The state to answer with, once the projection holds what was just written (so the caller's
    /// next read sees it too): the timeline the writing transaction projected itself, or else —
    /// a request recorded alone, or a replay — from the projection once the worker applied it.
    func answer(_ outcome: FactRecorder.Outcome, bundleID: String, userID: String) async throws -> UserState {
        try Self.refuseKept(outcome)
        if let (timeline, position) = outcome.projected {
            WrittenPosition.current?.record(position)
            return timeline.state(at: Date())
        }
        if let position = outcome.lastPosition {
            try await freshness.wait(for: position, logger: logger)
        }
        return try await users.currentState(bundleID: bundleID, userID: userID, atLeast: outcome.lastPosition)
    }

    /// Returns once the live projection shows everything up to `position` (bounded, as every
    /// write's answer is): for work that records much and answers once, like a backfill.
    package func waitUntilProjected(_ position: LogPosition) async throws {
        try await freshness.wait(for: position, logger: logger)
    }

    /// A restore the app's policy refused (`keep`, or `transfer_if_no_active` while the purchase
    /// gives its owner something active): the purchase stays with its owner, whose id is not disclosed.
    static func refuseKept(_ outcome: FactRecorder.Outcome) throws {
        if let original = outcome.keptByAnother.first {
            throw LedgerError(
                .transactionOwnedByAnotherUser,
                "transaction \(original) belongs to another user of this app, who keeps it under the app's restore policy")
        }
    }

    static func validate(userID: String) throws {
        try Identifier.userID.check(userID)
    }
}
