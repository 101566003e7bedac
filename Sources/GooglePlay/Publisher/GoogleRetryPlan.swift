import Foundation
import LedgerCore

/// What to do after one attempt at the Developer API: try again (after how long) or stop. Pure,
/// so each rule is tested without a network.
///
/// Rules: 429 and 5xx and transport failures may pass; 429 and 503 wait as `Retry-After` says
/// (delta seconds or an HTTP date), others back off with full jitter; no wait reaches past the
/// total budget — then the call ends at once as unavailable, saying how long Google asked for.
struct GoogleRetryPlan: Sendable {
    enum Outcome: Sendable, Equatable {
        case transportFailed
        case answered(status: Int, retryAfter: String?)
    }

    enum Decision: Sendable, Equatable {
        case retry(after: Duration)
        /// Give up; `wait` is what the next attempt would have waited (the caller's Retry-After).
        case stop(wait: Duration)
    }

    let patience: Patience

    static func mayPass(_ outcome: Outcome) -> Bool {
        switch outcome {
        case .transportFailed: true
        case .answered(let status, _): status == 429 || status >= 500
        }
    }

    /// `attempts`: made so far, this one included; `elapsed`: since the first began.
    func decide(
        after outcome: Outcome, attempts: Int, elapsed: Duration, now: Date, random: (ClosedRange<Int>) -> Int = { Int.random(in: $0) }
    ) -> Decision {
        var wait = patience.delay(beforeRetry: attempts - 1, random: random)
        if case .answered(_, let header?) = outcome, let asked = Self.retryAfter(header, now: now) { wait = asked }
        guard Self.mayPass(outcome), attempts < patience.maxAttempts, elapsed + wait < patience.totalBudget else {
            return .stop(wait: wait)
        }
        return .retry(after: wait)
    }

    /// `Retry-After` as a wait: delta seconds, or an HTTP date (RFC 9110); a date past waits nothing.
    static func retryAfter(_ header: String, now: Date) -> Duration? {
        let text = header.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(text) { return seconds >= 0 ? .seconds(seconds) : nil }
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.timeZone = TimeZone(identifier: "GMT")
        format.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = format.date(from: text) else { return nil }
        return .milliseconds(max(0, Int64((date.timeIntervalSince(now) * 1000).rounded())))
    }

    /// Whole seconds for a `Retry-After` of our own, at least one.
    static func seconds(_ wait: Duration) -> Int {
        max(1, Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up)))
    }
}
