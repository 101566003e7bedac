import Foundation
import Synchronization

/// Failed authentications counted per client address, in a sliding window: past the limit, the
/// address is told to wait instead of being answered — so guessing API keys or console sign-ins
/// goes no faster than the limit, and costs the database nothing. Counted in this process only:
/// with several servers behind a balancer an address may try the limit on each (docs/security.md).
package final class FailureThrottle: Sendable {
    package let limit: Int
    package let window: Duration
    /// Proxies whose `X-Forwarded-For` is believed (`LEDGER_TRUSTED_PROXIES`).
    package let trustedProxies: Set<String>
    /// Addresses remembered at most; beyond, the oldest failures are forgotten first.
    let capacity: Int
    private let failures = Mutex<[String: [ContinuousClock.Instant]]>([:])
    /// How many addresses have failures on record: none (the usual case) lets a request skip
    /// working out its address and taking the lock.
    private let tracked = Atomic<Int>(0)

    /// Whether any address has failed lately; when not, no address needs to wait.
    package var isTracking: Bool { tracked.load(ordering: .relaxed) > 0 }

    package init(limit: Int = 20, window: Duration = .seconds(60), trustedProxies: Set<String> = [], capacity: Int = 100_000) {
        self.limit = limit
        self.trustedProxies = trustedProxies
        self.window = window
        self.capacity = capacity
    }

    /// How long `address` must wait before its next attempt is heard; nil when it may try now.
    package func wait(for address: String, now: ContinuousClock.Instant = .now) -> Duration? {
        failures.withLock { failures in
            guard let times = failures[address] else { return nil }
            let recent = times.filter { now - $0 < window }
            failures[address] = recent.isEmpty ? nil : recent
            tracked.store(failures.count, ordering: .relaxed)
            guard recent.count >= limit, let oldest = recent.first else { return nil }
            return window - (now - oldest)
        }
    }

    /// The address a request is counted against (`ClientAddress`).
    package func clientAddress(connection: String?, forwardedFor: String?) -> String {
        ClientAddress.of(connection: connection, forwardedFor: forwardedFor, trustedProxies: trustedProxies)
    }

    /// What a request from `address` presenting `secret` meets at the door.
    package enum Gate: Sendable {
        /// The address is under the limit: authenticate as usual.
        case open
        /// Past the limit, a key the ring of live keys holds: a good key still works.
        case key(APIKey)
        /// Past the limit, a guess: wait this many whole seconds; it cost no lookup.
        case wait(seconds: Int)
    }

    /// The gate for a request (`APIKeyStore.authenticateWithoutLookup` past the limit). The API's
    /// keys and the console's sign-ins both pass here.
    package func gate(_ secret: String?, from address: @autoclosure () -> String, keys: APIKeyStore) async -> Gate {
        guard isTracking, let wait = wait(for: address()) else { return .open }
        if let secret, let key = try? await keys.authenticateWithoutLookup(secret) { return .key(key) }
        return .wait(seconds: Self.seconds(wait))
    }

    /// Whole seconds to wait, at least one: what `Retry-After` says.
    package static func seconds(_ wait: Duration) -> Int {
        max(1, Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0))
    }

    /// A failed attempt from `address`.
    package func recordFailure(from address: String, now: ContinuousClock.Instant = .now) {
        failures.withLock { failures in
            if failures.count >= capacity, failures[address] == nil {
                // Forget the addresses whose last failure is oldest (a flood of addresses cannot grow this without bound).
                let oldest = failures.sorted { ($0.value.last ?? now) < ($1.value.last ?? now) }.prefix(capacity / 10).map(\.key)
                for key in oldest { failures[key] = nil }
            }
            var times = failures[address, default: []].filter { now - $0 < window }
            times.append(now)
            // Only the last `limit` matter: the wait is counted from the oldest of them.
            failures[address] = Array(times.suffix(limit))
            tracked.store(failures.count, ordering: .relaxed)
        }
    }
}

/// The address a request comes from: the connection's, or — when the connection is a trusted
/// proxy's — the last address in `X-Forwarded-For` that is not itself a trusted proxy. A client
/// can write anything into that header; only what a trusted proxy appended counts.
package enum ClientAddress {
    package static func of(connection: String?, forwardedFor: String?, trustedProxies: Set<String>) -> String {
        let peer = connection ?? "unknown"
        guard trustedProxies.contains(peer), let forwardedFor else { return peer }
        let hops = forwardedFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return hops.last { !trustedProxies.contains($0) } ?? hops.first ?? peer
    }
}
