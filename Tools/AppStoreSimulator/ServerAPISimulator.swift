import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import Synchronization

/// Apple's App Store Server API as the simulator plays it, per app and environment: the
/// transactions Apple knows (grouped by customer), renewal infos, orders, the notification
/// history with each delivery attempt (failed ones included), and the consumption information
/// the developer sent. Requests must carry a bearer JWT signed by the app's registered key
/// (`ServerAPIRoutes` checks it as Apple does: 401 otherwise). Pages are `pageSize` long, and
/// scripted answers (429 with `Retry-After`, 5xx) are served first, in order, to exercise retries.
package final class ServerAPISimulator: Sendable {
    /// The In-App Purchase key an app's requests must be signed with.
    package struct Key: Sendable {
        package var issuerID: String
        package var keyID: String
        package var publicKey: P256.Signing.PublicKey
        package init(issuerID: String, keyID: String, publicKey: P256.Signing.PublicKey) {
            self.issuerID = issuerID
            self.keyID = keyID
            self.publicKey = publicKey
        }
    }

    package enum Scripted: Sendable {
        /// An error answer: HTTP status, `Retry-After` header, Apple's `errorCode`.
        case error(status: Int, retryAfter: String? = nil, errorCode: Int? = nil)
    }

    /// A notification as Apple's history keeps it.
    package struct HistoryEntry: Sendable {
        package var signedPayload: String
        package var firstAttempt: Date
        package var attempts: [(date: Date, result: String)]
        package var transactionID: String?
        package var succeeded: Bool { attempts.contains { $0.result == "SUCCESS" } }
    }

    /// What a developer told Apple in Send Consumption Information.
    package struct ConsumptionAnswer: Sendable {
        package var transactionID: String
        package var body: [String: String]
        package var receivedAt: Date
    }

    /// One request as the simulator saw it, for tests that check pacing and authentication.
    package struct Seen: Sendable {
        package var path: String
        package var at: Date
        package var status: Int
    }

    /// A mass extension as Apple reports its progress (here: done when asked).
    struct MassExtension {
        var productID: String
        var succeeded: Int
        var failed: Int
        var completed: Date
    }

    struct Store {
        var app: SimulatedApp
        var key: Key
        var transactions: [String: SimulatedTransaction] = [:] // by transaction id
        var customers: [String: String] = [:] // transaction id → customer
        /// Customer → their transaction ids in the order added: a history request reads one
        /// customer's, not the whole store (the backfill benchmark keeps thousands).
        var purchases: [String: [String]] = [:]
        var renewals: [String: SimulatedRenewal] = [:]
        var orders: [String: [String]] = [:] // order id → transaction ids
        var appTransactions: [String: SimulatedAppTransaction] = [:] // customer → the app bought on the account
        var extensions: [String: [(requestID: String, at: Date)]] = [:] // original transaction → its renewal-date extensions
        var massExtensions: [String: MassExtension] = [:] // request id → what it did
        var history: [HistoryEntry] = []
        var consumption: [ConsumptionAnswer] = []
        var testNotifications: [String: Int] = [:] // token → index in history
        var notificationURL: String?
        /// Where Apple sends realtime retention requests (Configure Realtime URL).
        var realtimeURL: String?
        /// Finish Transaction calls, by transaction id.
        var finished: [String: Int] = [:]
        /// Retention messages and images by id, each with Apple's review state; default messages
        /// by "product/locale".
        var messages: [String: (header: String, state: String)] = [:]
        var images: [String: (size: String, state: String)] = [:]
        var defaultMessages: [String: String] = [:]
    }

    struct State {
        var stores: [String: Store] = [:] // "<environment>/<bundle id>"
        var scripts: [Scripted] = []
        var seen: [Seen] = []
        var performanceConfig = PerformanceConfig()
        var performanceRuns: [String: PerformanceRun] = [:]
    }

    let state = Mutex(State())
    package let pageSize: Int

    package init(pageSize: Int = 20) { self.pageSize = pageSize }

    static func storeKey(_ environment: String, _ bundleID: String) -> String { environment.lowercased() + "/" + bundleID }

    /// Registers an app (its environment decides whether `/production` or `/sandbox` serves it)
    /// with the key its requests must be signed by, and where its notifications are delivered.
    /// Registering it again changes those and keeps what Apple knows of it (a ledger restarted
    /// elsewhere, a rotated key).
    package func register(_ app: SimulatedApp, key: Key, notificationURL: String? = nil) {
        state.withLock { state in
            let storeKey = Self.storeKey(app.environment, app.bundleID)
            var store = state.stores[storeKey] ?? Store(app: app, key: key)
            store.app = app
            store.key = key
            store.notificationURL = notificationURL
            state.stores[storeKey] = store
        }
    }

    /// Adds transactions Apple knows, bought by `customer` (default: each one's original id).
    package func add(_ transactions: [SimulatedTransaction], customer: String? = nil, to app: SimulatedApp) {
        mutate(app) { store in
            for transaction in transactions {
                let id = transaction.transactionID, owner = customer ?? transaction.originalTransactionID
                if let previous = store.customers[id] { store.purchases[previous]?.removeAll { $0 == id } }
                store.transactions[id] = transaction
                store.customers[id] = owner
                store.purchases[owner, default: []].append(id)
            }
        }
    }

    package func setRenewal(_ renewal: SimulatedRenewal, of app: SimulatedApp) {
        mutate(app) { $0.renewals[renewal.originalTransactionID] = renewal }
    }

    /// The app itself, bought on the account of the customer `transactionID` belongs to (what Get
    /// App Transaction Info answers; without one Apple says 4040019).
    package func setAppTransaction(_ appTransaction: SimulatedAppTransaction, customerOf transactionID: String, of app: SimulatedApp) {
        mutate(app) { store in store.appTransactions[store.customers[transactionID] ?? transactionID] = appTransaction }
    }

    /// An order as on the customer's emailed receipt: its id and the transactions it contains.
    package func addOrder(_ orderID: String, transactionIDs: [String], to app: SimulatedApp) {
        mutate(app) { $0.orders[orderID] = transactionIDs }
    }

    package func script(_ outcomes: [Scripted]) { state.withLock { $0.scripts += outcomes } }

    package func seen() -> [Seen] { state.withLock { $0.seen } }

    package func history(of app: SimulatedApp) -> [HistoryEntry] {
        state.withLock { $0.stores[Self.storeKey(app.environment, app.bundleID)]?.history ?? [] }
    }

    /// How many times each transaction was finished (Finish Transaction).
    package func finishedTransactions(of app: SimulatedApp) -> [String: Int] {
        state.withLock { $0.stores[Self.storeKey(app.environment, app.bundleID)]?.finished ?? [:] }
    }

    package func consumptionAnswers(of app: SimulatedApp) -> [ConsumptionAnswer] {
        state.withLock { $0.stores[Self.storeKey(app.environment, app.bundleID)]?.consumption ?? [] }
    }

    /// Sends a V2 notification body the way Apple does and keeps it in the app's history with
    /// the attempt's result: SUCCESS for 200–206, UNSUCCESSFUL_HTTP_RESPONSE_CODE for another
    /// status, NO_RESPONSE when nothing answered (a ledger that is down). Returns the status, nil
    /// when nothing answered.
    @discardableResult
    package func send(_ body: Data, of app: SimulatedApp, transactionID: String? = nil) async -> Int? {
        let sender = NotificationSender(http: Self.deliveries)
        guard let signed = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["signedPayload"] as? String else {
            return nil
        }
        let url = state.withLock { $0.stores[Self.storeKey(app.environment, app.bundleID)]?.notificationURL }
        let status: Int? = if let url { try? await sender.send(body, to: url) } else { nil }
        let result =
            switch status {
            case .some(200...206): "SUCCESS"
            case .some: "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
            case nil: "NO_RESPONSE"
            }
        let now = Date()
        mutate(app) {
            $0.history.append(
                HistoryEntry(signedPayload: signed, firstAttempt: now, attempts: [(now, result)], transactionID: transactionID))
        }
        return status
    }

    /// Apple records a delivery to a server that is down as failed at once. The shared client
    /// would instead retry connecting until its timeout (a second or more per notification).
    static let deliveries: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout = .init(connect: .seconds(2), read: .seconds(10))
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    func mutate(_ app: SimulatedApp, _ change: (inout Store) -> Void) {
        state.withLock { state in
            let key = Self.storeKey(app.environment, app.bundleID)
            guard var store = state.stores[key] else {
                preconditionFailure("register \(app.bundleID) (\(app.environment)) with the simulator first")
            }
            change(&store)
            state.stores[key] = store
        }
    }
}
