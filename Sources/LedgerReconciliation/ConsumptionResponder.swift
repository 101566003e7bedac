import AppStore
import AppStoreServerAPI
import Foundation
import LedgerBackground
import LedgerCore
import LedgerIngestion
import LedgerProjections
import Logging

/// Answers Apple's CONSUMPTION_REQUESTs — Apple asking, before it decides a customer's refund,
/// what the developer knows — with Send Consumption Information v2, computed from the ledger's
/// facts (`ConsumptionAssessment`) and the app's `consumption_policy`, and records the answer as
/// an event, so the audit trail shows what Apple was told.
///
/// Sent only when the app declares that its customers consented (Apple accepts nothing else).
/// Requests wait in `ConsumptionRequests`; a failure (Apple away) is tried again with backoff
/// until Apple's 12 hours run out.
package struct ConsumptionResponder: Sendable {
    let requests: ConsumptionRequests
    let directory: AppDirectory
    let reader: UserStateReader
    let api: AppStoreServerAPIClient
    let holder = UUID()
    /// Told of every round. A round asks Apple once a request, each call as long as Apple takes
    /// (its retries may take a minute and a half): its silence is not checked, only its failures.
    package let heartbeat = Heartbeat("consumption responder", checksSilence: false)
    let logger: Logger
    let observe: @Sendable (_ outcome: String) -> Void

    package init(
        requests: ConsumptionRequests, directory: AppDirectory, reader: UserStateReader, api: AppStoreServerAPIClient,
        logger: Logger, observe: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.requests = requests
        self.directory = directory
        self.reader = reader
        self.api = api
        self.logger = logger
        self.observe = observe
    }

    /// Answers what is waiting (at most `limit`); the outcome of each, by notification UUID.
    @discardableResult
    package func answerPending(limit: Int = 50) async throws -> [String: String] {
        await OutboxRound.run(try await requests.claim(limit: limit, holder: holder), key: \.notificationUUID, observe: observe) {
            pending in
            let outcome = try await answer(pending)
            try await requests.settle(pending, outcome: outcome)
            return outcome
        } handBack: { pending, error in
            // Apple away, the database away: the request stays and is tried again.
            let delay = Duration.seconds(min(3600, 30 << min(pending.attempts, 7)))
            try? await requests.retry(pending, after: delay, failure: "\(error)")
            logger.warning(
                "a CONSUMPTION_REQUEST could not be answered yet; it is tried again",
                metadata: [
                    "app.bundle_id": "\(pending.bundleID)", "apple.notification_uuid": "\(pending.notificationUUID)", "error": "\(error)",
                ])
        }
    }

    /// The responder as a background loop: what is waiting answered every `interval`. A round
    /// fails only when the requests cannot be claimed (the database away); one request Apple did
    /// not take is its own line and waits for its own retry.
    package func loop(every interval: Duration) -> BackgroundLoop {
        .periodic(every: interval, reportingTo: heartbeat, backoff: .storeRound, logger: logger) { try await answerPending() }
    }

    /// One request: the policy checked, the facts read, Apple told, the answer recorded.
    func answer(_ pending: ConsumptionRequests.Pending) async throws -> String {
        let app = try await directory.app(pending.bundleID)
        guard let policy = app.settings.consumptionPolicy else { return "no_consumption_policy" }
        guard policy.customerConsented else { return "not_consented" }
        guard let key = try app.serverAPI else { return "no_app_store_server_api_key" }
        let (known, owner) = try await requests.purchase(pending)
        guard let transaction = known else { return "unknown_transaction" }
        let now = Date()
        var balances: [String: Int64] = [:]
        if let owner { balances = try await reader.ledger(bundleID: pending.bundleID, userID: owner).userState(owner, at: now).balances }
        let product = app.catalogue.definition(of: transaction.productID, at: transaction.purchaseDate)
        let assessed = ConsumptionAssessment.assess(transaction, product: product, owner: owner, balances: balances, at: now)
        let information = ConsumptionInformation(
            customerConsented: true, consumptionPercentage: assessed.consumptionPercentage,
            deliveryStatus: assessed.deliveryStatus, refundPreference: policy.refundPreference,
            sampleContentProvided: policy.sampleContentProvided)
        try await api.sendConsumption(information, for: pending.transactionID, in: pending.environment, as: key)
        try await requests.record(
            ConsumptionAnswer(
                transactionID: pending.transactionID, originalTransactionID: pending.originalTransactionID,
                notificationUUID: pending.notificationUUID,
                environment: pending.environment, customerConsented: true, consumptionPercentage: assessed.consumptionPercentage,
                deliveryStatus: assessed.deliveryStatus, refundPreference: policy.refundPreference,
                sampleContentProvided: policy.sampleContentProvided, sentAt: now), bundleID: pending.bundleID)
        return "sent"
    }
}
