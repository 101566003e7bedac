import AppStore
import AppStoreServerAPI
import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerProjections

/// One piece of Apple's signed evidence, verified for the app: what it says and the piece itself.
struct VerifiedPiece: Sendable {
    var events: [LedgerEvent]
    var item: EvidenceStore.Item
}

/// What the ledger asks Apple itself, through the App Store Server API, on a caller's behalf: a
/// customer's whole history when they restore (sync), and the transactions of an order on the
/// receipt Apple emailed them (support's order lookup). Every signed item Apple answers with is
/// verified like any other JWS (chain to the configured roots, bundle, environment) and recorded
/// as the same facts a StoreKit transaction or a notification would give: one transaction learnt
/// three ways is recorded once, and Apple's signed time still decides the order.
package struct AppleLookups: Sendable {
    let ingestor: Ingestor
    let api: AppStoreServerAPIClient

    package init(ingestor: Ingestor, api: AppStoreServerAPIClient) {
        self.ingestor = ingestor
        self.api = api
    }

    /// Sync on restore: the history, subscription statuses and refunds of the customer whose
    /// purchases `transactionID` (any id of the family) belongs to, recorded for `userID` under
    /// the app's restore policy; answers the user's state with them.
    package func sync(bundleID: String, userID: String, transactionID: String) async throws -> UserState {
        try await LedgerError.mapping {
            let (_, outcome) = try await recordCustomer(of: transactionID, for: userID, bundleID: bundleID)
            return try await ingestor.answer(outcome, bundleID: bundleID, userID: userID)
        }
    }

    /// The customer `transactionID` belongs to, asked of Apple and recorded for `userID` under the
    /// app's restore policy: what sync and backfill share.
    private func recordCustomer(
        of transactionID: String, for userID: String, bundleID: String
    ) async throws
        -> (pieces: [VerifiedPiece], outcome: FactRecorder.Outcome)
    {
        try Identifier.userID.check(userID)
        let app = try await ingestor.directory.app(bundleID)
        var pieces = try await customer(of: transactionID, app)
        if let purchase = try await appPurchase(of: transactionID, for: userID, app) { pieces.append(purchase) }
        return (
            pieces,
            try await ingestor.record(
                pieces, bundleID: bundleID, claimant: .presenter(userID, policy: app.settings.restorePolicy, catalogue: app.catalogue))
        )
    }

    /// The app itself as bought on the customer's account (Get App Transaction Info), for `userID`;
    /// nil when Apple has none for the customer.
    func appPurchase(of transactionID: String, for userID: String, _ app: AppConfiguration) async throws -> VerifiedPiece? {
        let signed = try await Self.firstEnvironment(of: app) { environment, key in
            try await api.appTransactionInfo(transactionID, in: environment, as: key)
        }.1
        guard let signed else { return nil }
        let decoded = try await ingestor.verifier.verifyAppTransaction(signed, expecting: app.expectation)
        return VerifiedPiece(
            events: EvidenceEvents.events(for: decoded, userID: userID),
            item: .init(body: signed, kind: .appTransaction, bundleID: app.bundleID))
    }

    /// What one backfilled customer added: their transactions, and how far the log must be
    /// projected to show them.
    package struct Imported: Sendable {
        /// Every transaction Apple's answers named, recorded now or before.
        package var transactionIDs: Set<String> = []
        /// The last event recorded, if any: what "done" waits to see projected.
        package var position: LogPosition?
        package var transactions: Int { transactionIDs.count }

        mutating func add(_ other: Imported) {
            transactionIDs.formUnion(other.transactionIDs)
            if let next = other.position { position = max(position ?? next, next) }
        }
    }

    /// Backfill at adoption: what `sync` records, without waiting for the projection (the caller
    /// waits once, for the furthest position, when it has imported everything).
    package func backfill(bundleID: String, userID: String, transactionID: String) async throws -> Imported {
        try await LedgerError.mapping {
            let (pieces, outcome) = try await recordCustomer(of: transactionID, for: userID, bundleID: bundleID)
            try Ingestor.refuseKept(outcome)
            return Imported(
                transactionIDs: Set(pieces.flatMap(\.events).compactMap(\.transactionFacts?.transactionID)),
                position: outcome.lastPosition)
        }
    }

    /// Backfill from a legacy app receipt, Apple's migration path off `verifyReceipt`: the receipt
    /// read and verified locally (`verifyAppReceipt`), then the history of each family it names
    /// pulled as above — one family's history usually brings the customer's others, which are
    /// then not asked again. A receipt without in-app purchases imports nothing.
    package func backfill(bundleID: String, userID: String, receipt: String) async throws -> Imported {
        try await LedgerError.mapping {
            let app = try await ingestor.directory.app(bundleID)
            let read = try await ingestor.verifier.verifyAppReceipt(receipt, expecting: app.expectation)
            var imported = Imported()
            for id in read.originalTransactionIDs where !imported.transactionIDs.contains(id) {
                imported.add(try await backfill(bundleID: bundleID, userID: userID, transactionID: id))
            }
            return imported
        }
    }

    /// Everything Apple says of the customer `transactionID` belongs to — history (every page),
    /// subscription statuses, refunds — each signed item verified for the app.
    func customer(of transactionID: String, _ app: AppConfiguration) async throws -> [VerifiedPiece] {
        let (environment, history) = try await Self.firstEnvironment(of: app) { environment, key in
            try await api.transactionHistory(transactionID, in: environment, as: key)
        }
        let key = try Self.key(of: app)
        // Independent questions, asked together: a backfill's lines wait on Apple, not on each other.
        async let asked = api.subscriptionStatuses(transactionID, in: environment, as: key)
        let refunds = try await api.refundHistory(transactionID, in: environment, as: key)
        let statuses = try await asked
        var pieces: [VerifiedPiece] = []
        for signed in history.signedTransactions + refunds { pieces.append(try await transaction(signed, app)) }
        return pieces + (try await statusPieces(statuses, app))
    }

    /// Each subscription's latest transaction and renewal info from Get All Subscription
    /// Statuses, verified for the app (`only`: one subscription's).
    func statusPieces(_ statuses: StatusResponse, _ app: AppConfiguration, only original: String? = nil) async throws -> [VerifiedPiece] {
        var pieces: [VerifiedPiece] = []
        for last in (statuses.data ?? []).flatMap({ $0.lastTransactions ?? [] })
        where original == nil || last.originalTransactionId == original {
            if let signed = last.signedTransactionInfo { pieces.append(try await transaction(signed, app)) }
            if let signed = last.signedRenewalInfo {
                let renewal = try await ingestor.verifier.verifyRenewal(signed, expecting: app.expectation)
                pieces.append(
                    VerifiedPiece(
                        events: EvidenceEvents.events(for: renewal, status: last.status),
                        item: .init(body: signed, kind: .signedRenewalInfo, bundleID: app.bundleID)))
            }
        }
        return pieces
    }

    /// An order's transactions as Apple's order lookup gives them, and who owns each now.
    package struct Order: Sendable {
        package struct Line: Sendable {
            package var transaction: TransactionFacts
            package var revokedAt: Date?
            /// The user who owns its original transaction in this ledger; nil: nobody claimed it yet.
            package var owner: String?
        }
        package var orderID: String
        package var environment: AppleEnvironment
        package var lines: [Line]
    }

    /// Support's "whose purchase is this?" from the order id on Apple's emailed receipt. The
    /// transactions are recorded like a notification's: attributed to the user their
    /// appAccountToken stands for, never taken from an owner.
    package func order(bundleID: String, orderID: String) async throws -> Order {
        try await LedgerError.mapping {
            let app = try await ingestor.directory.app(bundleID)
            let (environment, lookup): (AppleEnvironment, OrderLookupResponse)
            do {
                (environment, lookup) = try await Self.firstEnvironment(of: app) { environment, key in
                    let answer = try await api.lookUpOrder(orderID, in: environment, as: key)
                    // Status 1: not an order of this app in this environment — ask the next one.
                    guard answer.status == 0 else { throw LedgerError(.appleTransactionNotFound, "no such order") }
                    return answer
                }
            } catch let error as LedgerError where error.code == .appleTransactionNotFound {
                throw LedgerError(.appleOrderNotFound, "Apple knows no order \(orderID) of this app in the environments it accepts")
            }
            var pieces: [VerifiedPiece] = []
            for signed in lookup.signedTransactions ?? [] { pieces.append(try await transaction(signed, app)) }
            let events = pieces.flatMap(\.events)
            let holders = try await ingestor.tokenHolders(of: events, bundleID: bundleID)
            let outcome = try await ingestor.record(pieces, bundleID: bundleID, claimant: .tokenHolders(holders))
            if let position = outcome.lastPosition { try await ingestor.freshness.wait(for: position, logger: ingestor.logger) }
            var lines: [Order.Line] = []
            for event in events {
                guard let facts = event.transactionFacts else { continue }
                let owner = try await PurchaseStream.read(
                    ingestor.store, bundleID: bundleID, originalTransactionID: facts.originalTransactionID
                ).owner
                lines.append(Order.Line(transaction: facts, revokedAt: facts.revocationDate, owner: owner))
            }
            return Order(orderID: orderID, environment: environment, lines: lines)
        }
    }

    func transaction(_ signed: String, _ app: AppConfiguration) async throws -> VerifiedPiece {
        let transaction = try await ingestor.verifier.verifyTransaction(signed, expecting: app.expectation)
        return VerifiedPiece(
            events: EvidenceEvents.events(for: transaction),
            item: .init(body: signed, kind: .signedTransaction, bundleID: app.bundleID))
    }

    /// The app's key, or the error that says it must be configured first.
    package static func key(of app: AppConfiguration) throws -> ServerAPICredentials {
        guard let key = try app.serverAPI else {
            throw LedgerError(
                .appleAPINotConfigured,
                "asking Apple needs the app's App Store Server API key; configure app_store_server_api (issuer_id, key_id, private_key) first"
            )
        }
        return key
    }

    /// Asks each environment the app accepts, Production first, until one knows the thing asked:
    /// a sandbox purchase is unknown to production, and App Review's are sandbox ones.
    static func firstEnvironment<T>(
        of app: AppConfiguration, _ ask: (AppleEnvironment, ServerAPICredentials) async throws -> T
    )
        async throws -> (AppleEnvironment, T)
    {
        let key = try key(of: app)
        let environments = [AppleEnvironment.production, .sandbox].filter(app.settings.environments.contains)
        var notFound: LedgerError?
        for environment in environments {
            do {
                return (environment, try await ask(environment, key))
            } catch let error as LedgerError where error.code == .appleTransactionNotFound {
                notFound = error
            }
        }
        throw notFound ?? LedgerError(.appleAPIRefused, "the app accepts neither Production nor Sandbox data, so Apple cannot be asked")
    }
}
