import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres
import LedgerProjections

/// A realistic log for benchmarks, written through the real append path (so hash chains are
/// genuine and `ledger verify` passes): per user, a monthly subscription renewing for up to two
/// years with Apple's notification beside each renewal, auto-renew changes, the odd billing retry
/// with grace, refunds, coin packs and their consumption.
struct EventGenerator {
    let bundleID = "com.example.bench"
    var rng = SystemRandomNumberGenerator()

    /// Appends about `target` events with `writers` concurrent pipelined writers; returns how many.
    mutating func write(
        events target: Int, to store: EventStore, writers: Int = 2, progress: @escaping @Sendable (Int) -> Void
    ) async throws -> Int {
        let bundleID = self.bundleID
        var pending: [[StreamAppend]] = []
        var written = 0
        var user = 0
        var configuration: [StreamAppend] = []
        for definition in [
            ProductDefinition(productID: "pro.monthly", type: .autoRenewable, entitlements: ["pro"]),
            ProductDefinition(productID: "coins.500", type: .consumable, grants: ["coins": 500]),
        ] {
            let (stream, event) = try StoredFacts.newEvent(
                .productConfigured(definition), bundleID: bundleID, id: UUID(),
                occurredAt: Date(timeIntervalSince1970: 1_600_000_000))
            configuration.append(StreamAppend(stream: stream, events: [event]))
        }
        try await store.append(batch: configuration)
        written += configuration.count
        while written < target {
            var batch: [StreamAppend] = []
            var inBatch = 0
            while inBatch < 2_000, written + inBatch < target {
                user += 1
                var byStream: [String: [NewEvent]] = [:]
                var order: [String] = []
                try generateUser(user) { event, date in
                    let (stream, new) = try StoredFacts.newEvent(
                        event, bundleID: bundleID, id: UUID(), occurredAt: date,
                        evidence: "sha256:" + UUID().uuidString.lowercased())
                    if byStream[stream] == nil { order.append(stream) }
                    byStream[stream, default: []].append(new)
                }
                for stream in order {
                    batch.append(StreamAppend(stream: stream, events: byStream[stream]!))
                    inBatch += byStream[stream]!.count
                }
            }
            written += inBatch
            pending.append(batch)
        }
        let batches = pending
        let done = SharedCounter(configuration.count)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for index in stride(from: writer, to: batches.count, by: writers) {
                        try await store.append(batch: batches[index])
                        progress(done.add(batches[index].reduce(0) { $0 + $1.events.count }))
                    }
                }
            }
            try await group.waitForAll()
        }
        return written
    }

    private mutating func generateUser(_ n: Int, emit: (LedgerEvent, Date) throws -> Void) throws {
        let userID = "user-\(n)"
        var clock = Date(timeIntervalSince1970: 1_640_000_000 + Double(Int.random(in: 0..<30_000_000, using: &rng)))
        let original = "2000000\(n)"
        let months = Int.random(in: 1...24, using: &rng)
        for month in 0..<months {
            let id = month == 0 ? original : "\(original)-\(month)"
            let expires = clock + 30 * 86_400
            let facts = TransactionFacts(
                environment: .production, transactionID: id, originalTransactionID: original, productID: "pro.monthly",
                purchaseDate: clock, expiresDate: expires, price: 4990, currency: "EUR", storefront: "FRA", signedDate: clock)
            try emit(
                .appleNotificationReceived(
                    AppleNotification(
                        version: "2", notificationType: month == 0 ? "SUBSCRIBED" : "DID_RENEW",
                        notificationUUID: UUID().uuidString, environment: .production,
                        originalTransactionID: original, signedDate: clock)), clock)
            try emit(month == 0 ? .purchased(facts) : .renewed(facts), clock)
            if month == 0 { try emit(.transactionClaimed(Claim(originalTransactionID: original, userID: userID)), clock + 2) }
            if Int.random(in: 0..<10, using: &rng) == 0 {
                try emit(
                    .renewalFailed(
                        RenewalFacts(
                            environment: .production, originalTransactionID: original, productID: "pro.monthly",
                            willAutoRenew: true, expirationIntent: 2, isInBillingRetry: true,
                            gracePeriodExpiresDate: expires + 6 * 86_400, signedDate: expires)), expires)
            }
            if Int.random(in: 0..<40, using: &rng) == 0 {
                try emit(
                    .refunded(
                        RevocationFacts(
                            environment: .production, transactionID: id, originalTransactionID: original,
                            revocationDate: clock + 86_400, signedDate: clock + 86_400)), clock + 86_400)
            }
            if Int.random(in: 0..<4, using: &rng) == 0 {
                let pack = "coins-\(n)-\(month)"
                try emit(
                    .purchased(
                        TransactionFacts(
                            environment: .production, transactionID: pack, originalTransactionID: pack, productID: "coins.500",
                            purchaseDate: clock + 3_600, price: 990, currency: "EUR", storefront: "FRA", signedDate: clock + 3_600)),
                    clock + 3_600)
                try emit(.transactionClaimed(Claim(originalTransactionID: pack, userID: userID)), clock + 3_602)
                try emit(
                    .consumed(
                        Consumption(
                            userID: userID, currency: "coins", amount: Int64.random(in: 1...400, using: &rng),
                            idempotencyKey: UUID().uuidString)),
                    clock + 7_200)
            }
            clock = expires
        }
        if Bool.random(using: &rng) {
            try emit(
                .autoRenewChanged(
                    RenewalFacts(
                        environment: .production, originalTransactionID: original, productID: "pro.monthly",
                        willAutoRenew: false, signedDate: clock - 86_400)), clock - 86_400)
        }
    }
}

/// A counter shared by writer tasks.
final class SharedCounter: @unchecked Sendable {
    private var value: Int
    private let lock = NSLock()
    init(_ value: Int) { self.value = value }
    func add(_ n: Int) -> Int { lock.lock(); defer { lock.unlock() }; value += n; return value }
}
