import AppStore
import Foundation
import LedgerCore

/// What to do after one attempt at a request to Apple: try again (after how long) or stop.
/// Pure, so every rule is tested without a network: the client only carries it out.
///
/// Rules: 429 waits for its `Retry-After` — Apple documents a UNIX time in
/// milliseconds, delta seconds are accepted too — or backs off when it has none; 5xx, transport
/// failures and Apple's retryable error codes back off with full jitter; anything else is final.
/// Nothing is tried more than `maxAttempts` times, and no wait reaches past `totalBudget`.
struct RetryPlan: Sendable {
    enum Outcome: Sendable, Equatable {
        case transportFailed
        case answered(status: Int, retryAfter: String?, errorCode: Int?)
    }

    enum Decision: Sendable, Equatable {
        case retry(after: Duration)
        case stop
    }

    /// Apple's codes documented as retryable: AccountNotFoundRetryable, AppNotFoundRetryable,
    /// OriginalTransactionIdNotFoundRetryable, GeneralInternalRetryable.
    static let retryableCodes: Set<Int> = [4_040_002, 4_040_004, 4_040_006, 5_000_001]

    let configuration: ServerAPIConfiguration

    /// `attempts`: made so far, this one included; `elapsed`: since the first began.
    func decide(
        after outcome: Outcome, attempts: Int, elapsed: Duration, now: Date,
        random: (ClosedRange<Int>) -> Int = { Int.random(in: $0) }
    ) -> Decision {
        guard Self.mayPass(outcome), attempts < configuration.patience.maxAttempts else { return .stop }
        var wait = backoff(beforeRetry: attempts - 1, random: random)
        if case .answered(429, let header?, _) = outcome, let asked = Self.retryAfter(header, now: now) {
            wait = asked
        }
        return elapsed + wait < configuration.patience.totalBudget ? .retry(after: wait) : .stop
    }

    static func mayPass(_ outcome: Outcome) -> Bool {
        switch outcome {
        case .transportFailed: true
        case .answered(let status, _, let code): status == 429 || status >= 500 || code.map(retryableCodes.contains) == true
        }
    }

    /// A `Retry-After` value as a wait from `now`: milliseconds since the epoch when it is that
    /// large (Apple's documented form), else seconds; a time already past waits nothing.
    static func retryAfter(_ header: String, now: Date) -> Duration? {
        guard let value = Int64(header.trimmingCharacters(in: .whitespaces)), value >= 0 else { return nil }
        if value > 100_000_000_000 { // after 1973 in milliseconds; 3,000 years in seconds
            let milliseconds = value - Int64((now.timeIntervalSince1970 * 1000).rounded())
            return .milliseconds(max(0, milliseconds))
        }
        return .seconds(value)
    }

    func backoff(beforeRetry retry: Int, random: (ClosedRange<Int>) -> Int) -> Duration {
        configuration.patience.delay(beforeRetry: retry, random: random)
    }
}
