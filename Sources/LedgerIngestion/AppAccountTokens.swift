import Foundation
import LedgerEventStore

/// Which of the app's users an `appAccountToken` stands for. An app passes a UUID of its own to
/// StoreKit's `purchase(options: [.appAccountToken(…)])`; Apple signs it into the transaction
/// and into every notification about it, so a notification can name its user although Apple
/// knows none.
///
/// A link is an event of its own stream, `token:<bundle>:<uuid>` (the stream name is the index
/// a lookup needs; the users projection ignores the stream). The first link wins and is never
/// moved: a token that could be re-pointed would let one user's evidence attribute purchases to
/// another. Links come from the app (`PUT …/users/{u}/app-account-tokens/{token}`, before the
/// purchase) or are learnt when a user presents a transaction carrying an unlinked token.
package struct AppAccountTokens: Sendable {
    let store: EventStore

    package init(store: EventStore) {
        self.store = store
    }

    package enum LinkResult: Sendable, Equatable {
        case linked
        case alreadyLinked
        /// The token stands for someone else already; who stays unsaid.
        case linkedToAnother
    }

    struct Link: Codable {
        var appAccountToken: UUID
        var userID: String
    }

    static let eventType = "AppAccountTokenLinked"

    static func stream(bundleID: String, token: UUID) -> String {
        "token:\(bundleID):\(token.uuidString.lowercased())"
    }

    /// The user `token` stands for in the app, nil when it was never linked.
    package func user(of token: UUID, bundleID: String) async throws -> String? {
        let events = try await store.read(stream: Self.stream(bundleID: bundleID, token: token), limit: 1)
        guard let first = events.first else { return nil }
        return try JSONDecoder().decode(Link.self, from: Data(first.data.utf8)).userID
    }

    /// Links `token` to `userID` unless it already stands for someone.
    @discardableResult
    package func link(_ token: UUID, to userID: String, bundleID: String) async throws -> LinkResult {
        let stream = Self.stream(bundleID: bundleID, token: token)
        let data = String(decoding: try JSONEncoder().encode(Link(appAccountToken: token, userID: userID)), as: UTF8.self)
        let event = NewEvent(id: StableID.make(stream, Self.eventType, userID), type: Self.eventType, data: data, occurredAt: Date())
        do {
            let result = try await store.append([event], to: stream, expectedVersion: .noStream)
            return result.wasReplay ? .alreadyLinked : .linked
        } catch EventStoreError.wrongExpectedVersion {
            return try await user(of: token, bundleID: bundleID) == userID ? .alreadyLinked : .linkedToAnother
        }
    }
}
