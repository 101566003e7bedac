import Foundation
import GooglePlay
import GooglePlaySimulator
import LedgerCore
import Testing

/// One-time products, voided purchases read across pages, and orders refunded or reviewed.
@Suite struct ProductAndRefundClientTests {
    static let package = GoogleTestbed.packageName

    @Test func aProductIsReadInBothVersionsAcknowledgedOnceAndConsumed() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let token = google.simulator.purchaseProduct(package: Self.package, productID: "coins_500", quantity: 5, accountID: "u_7f3a9c")
        let v1 = try await google.client.product(package: Self.package, productID: "coins_500", token: token).model
        #expect(v1.purchaseState == 0 && v1.quantity == 5 && !v1.isAcknowledged && v1.purchaseToken == token)
        let v2 = try await google.client.productV2(package: Self.package, token: token).model
        #expect(v2.purchaseStateContext?.purchaseState == "PURCHASED" && v2.productLineItem?.first?.productOfferDetails?.quantity == 5)
        try await google.client.acknowledgeProduct(package: Self.package, productID: "coins_500", token: token, developerPayload: "p")
        let twice = await #expect(throws: LedgerError.self) {
            try await google.client.acknowledgeProduct(package: Self.package, productID: "coins_500", token: token)
        }
        #expect(twice?.code == .invalidPurchaseState)
        try await google.client.consumeProduct(package: Self.package, productID: "coins_500", token: token)
        let consumed = try await google.client.product(package: Self.package, productID: "coins_500", token: token).model
        #expect(consumed.consumptionState == 1 && consumed.isAcknowledged)
    }

    @Test func consumingAcknowledgesAndAPendingPurchaseCanBeNeither() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let token = google.simulator.purchaseProduct(package: Self.package, productID: "gems", pending: true)
        #expect(try await google.client.product(package: Self.package, productID: "gems", token: token).model.isPending)
        for act in ["acknowledge", "consume"] {
            let refusal = await #expect(throws: LedgerError.self) {
                if act == "consume" {
                    try await google.client.consumeProduct(package: Self.package, productID: "gems", token: token)
                } else {
                    try await google.client.acknowledgeProduct(package: Self.package, productID: "gems", token: token)
                }
            }
            #expect(refusal?.code == .invalidPurchaseState, "\(act) of a pending purchase")
        }
        #expect(google.simulator.settlePendingProduct(token, paid: true) == 1)
        try await google.client.consumeProduct(package: Self.package, productID: "gems", token: token)
        let v2 = try await google.client.productV2(package: Self.package, token: token).model
        #expect(
            v2.acknowledgementState == .acknowledged
                && v2.productLineItem?.first?.productOfferDetails?.consumptionState == "CONSUMPTION_STATE_CONSUMED")
        let wrongProduct = await #expect(throws: LedgerError.self) {
            try await google.client.product(package: Self.package, productID: "coins_500", token: token)
        }
        #expect(wrongProduct?.code == .googleAPIRefused && wrongProduct?.message.contains("Invalid Value") == true)
    }

    @Test func voidedPurchasesAreReadAcrossPagesByTypeAndPartialRefund() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let start = Date().addingTimeInterval(-3600)
        var tokens: [String] = []
        for n in 0..<4 {
            let token = google.simulator.purchaseProduct(package: Self.package, productID: "coins_500", quantity: 3)
            google.simulator.refundProduct(token, at: start.addingTimeInterval(Double(n) * 60))
            tokens.append(token)
        }
        let partial = google.simulator.purchaseProduct(package: Self.package, productID: "coins_500", quantity: 5)
        google.simulator.refundProduct(partial, quantity: 2, at: start.addingTimeInterval(300))
        let subscription = google.simulator.purchaseSubscription(package: Self.package, productID: "premium_monthly")
        google.simulator.voidSubscription(subscription, at: start.addingTimeInterval(400))
        let other = google.simulator.purchaseProduct(package: "com.example.other", productID: "coins_500")
        google.simulator.refundProduct(other, at: start.addingTimeInterval(500))

        let all = try await google.client.voidedPurchases(
            package: Self.package,
            .init(startTime: start.addingTimeInterval(-1), type: 1, includeQuantityBasedPartialRefund: true, maxResults: 2))
        #expect(all.count == 3, "six rows in pages of two")
        let rows = all.flatMap(\.model.voidedPurchases)
        #expect(rows.map(\.purchaseToken) == tokens + [partial, subscription], "oldest first, the other package's left out")
        #expect(rows.first { $0.purchaseToken == partial }?.voidedQuantity == 2 && rows.first?.voidedQuantity == nil)
        let queries = google.apiCalls().map(\.path)
        #expect(queries[0].contains("startTime=") && queries[0].contains("maxResults=2") && !queries[0].contains("token="))
        #expect(queries[1].contains("token=p2") && queries[2].contains("token=p4") && !queries[1].contains("startTime="))

        let productsOnly = try await google.client.voidedPurchases(
            package: Self.package, .init(type: 0, includeQuantityBasedPartialRefund: false))
        #expect(productsOnly.flatMap(\.model.voidedPurchases).map(\.purchaseToken) == tokens)
        let none = try await google.client.voidedPurchases(package: Self.package, .init(startTime: Date().addingTimeInterval(60)))
        #expect(none.count == 1 && none[0].model.voidedPurchases.isEmpty && String(decoding: none[0].raw, as: UTF8.self) == "{}")
    }

    @Test func ordersAreRefundedAndReviewedAsAsked() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let token = google.simulator.purchaseProduct(package: Self.package, productID: "coins_500")
        let order = try #require(google.simulator.product(token)?.orderID)
        try await google.client.refundOrder(package: Self.package, orderID: order, revoke: true)
        #expect(google.simulator.refunds() == [.init(orderID: order, revoke: true)])
        #expect(google.simulator.product(token)?.purchaseState == 1, "revoked with the refund")
        try await google.client.reviewRefund(
            package: Self.package, orderID: order,
            .init(
                pendingRefundToken: "EXAMPLE-pending", preference: .decline, sampleContentProvided: false,
                consumptionPercentageMilliunits: 80_000))
        let review = try #require(google.simulator.reviews().first)
        #expect(
            review.orderID == order && review.body["refundPreference"] == "DECLINE"
                && review.body["consumptionPercentageMilliunits"] == "80000")
        let unknown = await #expect(throws: LedgerError.self) {
            try await google.client.refundOrder(package: Self.package, orderID: "GPA.0000-0000-0000-00000", revoke: false)
        }
        #expect(unknown?.code == .googlePurchaseNotFound)
    }
}
