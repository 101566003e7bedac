import Foundation
import LedgerEventStore

/// Which of the app's users an `appAccountToken` stands for. An app passes a UUID of its own to
/// StoreKit's `purchase(options: [.appAccountToken(…)])`; Apple signs it into the transaction
/// and into every notification about it, so a notification can name its user although Apple
/// knows none.
///
/// A link is an event of its own stream, `token:<bundle>:<uuid>` (the stream name is the index
/// a lookup needs; the users projection ignores the stream). The first link wins: a token that
/// the app could re-point would let one user's evidence attribute purchases to another. Links
/// come from the app (`PUT …/users/{u}/app-account-tokens/{token}`, before the purchase) or are
/// learnt when a user presents a transaction carrying an unlinked token. Only a merge of two
/// accounts moves a link, with a second event on the stream: the holder is the latest link.
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
        /// Absent on a first link; `merged` on a link moved from `fromUserID`.
        var reason: String? = nil
        var fromUserID: String? = nil
    }

    static let eventType = "AppAccountTokenLinked"

    static func stream(bundleID: String, token: UUID) -> String {
        "token:\(bundleID):\(token.uuidString.lowercased())"
    }

    /// The user `token` stands for in the app, nil when it was never linked.
    package func user(of token: UUID, bundleID: String) async throws -> String? {
        try Self.holder(of: try await store.read(stream: Self.stream(bundleID: bundleID, token: token)))
    }

    static func holder(of events: [RecordedEvent]) throws -> String? {
        guard let last = events.last(where: { $0.type == eventType }) else { return nil }
        return try JSONDecoder().decode(Link.self, from: Data(last.data.utf8)).userID
    }

    /// The tokens that stand for `userID` now.
    package func tokens(of userID: String, bundleID: String) async throws -> [UUID] {
        let prefix = "token:\(bundleID):"
        var held: [UUID] = []
        for stream in try await store.streams(prefix: prefix, holding: Self.eventType, forUser: userID) {
            guard let token = UUID(uuidString: String(stream.dropFirst(prefix.count))) else { continue }
            if try await user(of: token, bundleID: bundleID) == userID { held.append(token) }
        }
        return held
    }

    /// Moves the link of `token` from `from` to `to` (two accounts merged); nothing when it
    /// stands for someone else by now. Returns whether it moved.
    @discardableResult
    package func move(_ token: UUID, from: String, to: String, bundleID: String) async throws -> Bool {
        let stream = Self.stream(bundleID: bundleID, token: token)
        return try await store.serialized(on: stream) { locked in
            let events = try locked.events()
            guard try Self.holder(of: events) == from else { return false }
            let link = Link(appAccountToken: token, userID: to, reason: "merged", fromUserID: from)
            let data = String(decoding: try JSONEncoder().encode(link), as: UTF8.self)
            let id = StableID.make(stream, Self.eventType, "merged", String(events.count), from, to)
            _ = try locked.append(
                [NewEvent(id: id, type: Self.eventType, data: data, occurredAt: Date())], expectedVersion: .exact(Int64(events.count)))
            return true
        }
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
