import Foundation
import LedgerCore

/// A random history as it reached the ledger: a third of Apple's facts late (a renewal, a refund
/// or a purchase's notification recorded up to 40 days after Apple signed it), in the order they
/// arrived, each with the instant it was recorded and numbered as the store numbers arrivals. The
/// app's own facts (claims, transfers, consumptions, grants) are recorded when made, as the server
/// decides them.
package struct LateArrivals {
    package let facts: [RecordedFact]

    package init(_ history: RandomHistory, seed: UInt64) {
        var rng = SplitMix64(state: seed ^ 0x5EED_1A7E)
        let timed = history.facts.map { fact -> (recorded: Date, fact: RecordedFact) in
            let late = fact.isFromApple && Int.random(in: 0..<3, using: &rng) == 0
            return (fact.occurredAt + (late ? Double(Int.random(in: 1...960, using: &rng)) * 3_600 : 0), fact)
        }.sorted { ($0.recorded, $0.fact.sequence) < ($1.recorded, $1.fact.sequence) }
        facts = timed.enumerated().map { index, arrival in
            var fact = arrival.fact
            fact.recordedAt = arrival.recorded
            fact.sequence = Int64(index + 1)
            return fact
        }
    }

    /// Instants at which the ledger had just recorded something: where live answers are taken.
    package var recordingInstants: [Date] { Array(Set(facts.map(\.recordedAt))).sorted() }
}

extension RecordedFact {
    /// Said by Apple (signed), as opposed to decided by the app or support.
    package var isFromApple: Bool {
        switch event {
        case .purchased, .restored, .renewed, .recovered, .autoRenewChanged, .renewalPreferenceChanged, .renewalFailed,
            .expired, .refunded, .revoked, .refundReversed, .appleNotificationReceived, .consentRescinded, .appTransactionRecorded:
            true
        default: false
        }
    }
}
