import Foundation
import GooglePlay
import Testing

/// Every RTDN push body of the fixtures decodes: the envelope, the base64 notification inside,
/// and the same notification as its `.data.json` twin.
@Suite(.enabled(if: GoogleFixtures.available, "needs ../shared/fixtures/google (absent in a clone elsewhere)"))
struct NotificationFixtureTests {
    static let pushes = GoogleFixtures.names("rtdn", suffix: ".push.json")

    @Test func theFixturesAreThere() {
        #expect(Self.pushes.count >= 20, "found \(Self.pushes.count) push bodies")
    }

    @Test(arguments: pushes)
    func aPushBodyDecodesToTheNotificationItCarries(_ name: String) throws {
        let body = try GoogleFixtures.data("rtdn", name)
        let push = try PubSubPush.decode(body)
        let raw = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        let message = try #require(raw["message"] as? [String: Any])
        #expect(push.message.messageID == message["messageId"] as? String && push.message.messageID == message["message_id"] as? String)
        #expect(push.message.publishTime == message["publish_time"] as? String)
        #expect(push.subscription?.hasPrefix("projects/") == true)
        let notification = try push.developerNotification()
        let twin = try GoogleFixtures.data("rtdn", name.replacingOccurrences(of: ".push.json", with: ".data.json"))
        let expected = try JSONDecoder().decode(DeveloperNotification.self, from: twin)
        #expect(notification.model.kind == expected.kind)
        #expect(notification.model.packageName == expected.packageName && notification.model.eventTimeMillis == expected.eventTimeMillis)
        #expect(notification.model.eventTimeMillis > 1_700_000_000_000)
        #expect(
            (try JSONSerialization.jsonObject(with: notification.raw) as? NSDictionary)
                == (try JSONSerialization.jsonObject(with: twin) as? NSDictionary),
            "the raw bytes kept are the notification's")
        switch notification.model.kind {
        case .subscription(let body):
            let number = Int(name.dropFirst("sub_".count).prefix(2))
            #expect(name.hasPrefix("sub_") && body.notificationType.rawValue == number && body.notificationType.isKnown)
            #expect(notification.model.purchaseToken == body.purchaseToken)
        case .oneTimeProduct(let body): #expect(name.hasPrefix("otp_") && body.sku != nil && [1, 2].contains(body.notificationType))
        case .voidedPurchase(let body): #expect(name.hasPrefix("voided_") && body.orderId != nil && body.refundType != nil)
        case .test: #expect(name.hasPrefix("test_"))
        case .pendingRefundReview(let body): #expect(name.hasPrefix("refundreview_") && body.pendingRefundToken != nil)
        case .unknown(let fields): Issue.record("\(name) decoded as an unknown kind with \(fields)")
        }
    }

    @Test func aKindOrTypeGoogleAddsLaterIsKeptNotRefused() throws {
        let future =
            #"{"version":"1.0","packageName":"com.example.ledger","eventTimeMillis":1772370000000,"#
            + #""loyaltyNotification":{"version":"1.0","points":5}}"#
        let decoded = try JSONDecoder().decode(DeveloperNotification.self, from: Data(future.utf8))
        #expect(decoded.kind == .unknown(fields: ["loyaltyNotification"]))
        #expect(decoded.eventTimeMillis == 1_772_370_000_000, "a number is read as well as a string")
        let newType = #"{"packageName":"p","eventTimeMillis":"1","subscriptionNotification":{"notificationType":99,"purchaseToken":"t"}}"#
        let kept = try JSONDecoder().decode(DeveloperNotification.self, from: Data(newType.utf8))
        guard case .subscription(let body) = kept.kind else {
            Issue.record("not a subscription notification")
            return
        }
        #expect(body.notificationType.rawValue == 99 && !body.notificationType.isKnown)
    }

    @Test func aPushWithSnakeCaseIdsAndAttributesDecodes() throws {
        let data = Data(#"{"packageName":"p","eventTimeMillis":"5","testNotification":{"version":"1.0"}}"#.utf8).base64EncodedString()
        let body =
            #"{"message":{"data":"\#(data)","message_id":"42","publish_time":"2026-03-01T13:00:00Z","attributes":{"a":"b"}},"#
            + #""deliveryAttempt":3,"subscription":"projects/x/subscriptions/y","futureField":true}"#
        let push = try PubSubPush.decode(Data(body.utf8))
        #expect(push.message.messageID == "42" && push.message.attributes == ["a": "b"] && push.deliveryAttempt == 3)
        #expect(try push.developerNotification().model.kind == .test(version: "1.0"))
    }

    @Test func aPushWithoutAnIdOrWithDataThatIsNotBase64IsMalformed() {
        #expect(throws: (any Error).self) { try PubSubPush.decode(Data(#"{"message":{"data":"e30="}}"#.utf8)) }
        #expect(throws: (any Error).self) { try PubSubPush.decode(Data(#"{"message":{"data":"%%%","messageId":"1"}}"#.utf8)) }
    }
}
