import Foundation
import LedgerCore
import LedgerFormats

/// The body Cloud Pub/Sub POSTs to a push endpoint. Pub/Sub writes the id and time twice, in
/// camelCase and snake_case; either is read. Delivery is at least once and unordered, so the
/// `messageId` is what a receiver dedupes by.
package struct PubSubPush: Decodable, Sendable {
    package var message: Message
    /// `projects/P/subscriptions/S`: a receiver may compare it with the one it expects.
    package var subscription: String?
    /// Present when the subscription has a dead-letter policy.
    package var deliveryAttempt: Int?

    package struct Message: Decodable, Sendable {
        package var data: Data
        package var messageID: String
        package var publishTime: String?
        package var attributes: [String: String]?
        package var orderingKey: String?

        enum Keys: String, CodingKey {
            case data, messageId, message_id, publishTime, publish_time, attributes, orderingKey
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            let text = try container.decode(String.self, forKey: .data)
            guard let data = Data(base64Encoded: text) ?? Base64URL.decode(text) else {
                throw DecodingError.dataCorruptedError(forKey: .data, in: container, debugDescription: "data is not base64")
            }
            self.data = data
            guard
                let id = try container.decodeIfPresent(String.self, forKey: .messageId)
                    ?? container.decodeIfPresent(String.self, forKey: .message_id)
            else {
                throw DecodingError.keyNotFound(Keys.messageId, .init(codingPath: container.codingPath, debugDescription: "no message id"))
            }
            messageID = id
            publishTime =
                try container.decodeIfPresent(String.self, forKey: .publishTime)
                ?? container.decodeIfPresent(String.self, forKey: .publish_time)
            attributes = try container.decodeIfPresent([String: String].self, forKey: .attributes)
            orderingKey = try container.decodeIfPresent(String.self, forKey: .orderingKey)
        }
    }

    /// The push body as Pub/Sub sent it; refused as malformed, by field, when it is not one.
    package static func decode(_ body: Data) throws(LedgerError) -> PubSubPush {
        try GoogleDecoding.decode(PubSubPush.self, from: body, as: "the Pub/Sub push")
    }

    /// The Play notification its data carries, with the decoded bytes kept as evidence.
    package func developerNotification() throws(LedgerError) -> GoogleEvidence<DeveloperNotification> {
        try GoogleEvidence.decode(message.data, as: "the developer notification")
    }
}
