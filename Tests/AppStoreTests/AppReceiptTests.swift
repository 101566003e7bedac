import AppStore
import AppStoreSimulator
import Foundation
import LedgerCore
import Testing

/// Legacy app receipts read locally: the PKCS#7 container in every shape a producer may use, the
/// signature over the payload, the chain to a configured root as of the receipt's creation, the
/// app. Receipts are the simulator's, signed with RSA by a chain shaped like Apple's.
@Suite struct AppReceiptTests {
    static let authority = ReceiptAuthority.shared
    static let game = Expectation(bundleID: "com.example.game", environments: [.production, .sandbox])
    static let created = Date(timeIntervalSince1970: 1_750_000_000)

    static let purchases: [SimulatedTransaction] = {
        let start = Date(timeIntervalSince1970: 1_740_000_000)
        let first = SimulatedTransaction(
            transactionID: "2000000001", productID: "pro.monthly", purchaseDate: start,
            expiresDate: start.addingTimeInterval(30 * 86_400))
        let renewal = first.renewed(transactionID: "2000000002", period: 30 * 86_400)
        let coins = SimulatedTransaction(transactionID: "2000000003", productID: "coins.100", type: "Consumable", purchaseDate: start)
            .revoked(at: start.addingTimeInterval(86_400))
        return [first, renewal, coins]
    }()

    static func verifier(_ roots: ReceiptAuthority...) -> SignedDataVerifier { SignedDataVerifier(roots: roots.map(\.root)) }

    @Test(arguments: [
        ReceiptAuthority.Shape.apple,
        ReceiptAuthority.Shape(indefiniteLengths: false),
        ReceiptAuthority.Shape(chunkedContent: true),
        ReceiptAuthority.Shape(indefiniteLengths: false, chunkedContent: true, signedAttributes: true),
        ReceiptAuthority.Shape(signedAttributes: true),
    ])
    func everyShapeOfTheContainerReadsToTheSameReceipt(shape: ReceiptAuthority.Shape) async throws {
        let base64 = try Self.authority.receipt(
            bundleID: "com.example.game", appVersion: "3.2", purchases: Self.purchases,
            created: Self.created, shape: shape)
        let receipt = try await Self.verifier(Self.authority).verifyAppReceipt(base64, expecting: Self.game)
        #expect(receipt.bundleID == "com.example.game")
        #expect(receipt.appVersion == "3.2")
        #expect(receipt.creationDate == Self.created)
        #expect(receipt.inAppPurchases.map(\.transactionID) == ["2000000001", "2000000002", "2000000003"])
        #expect(receipt.inAppPurchases.map(\.originalTransactionID) == ["2000000001", "2000000001", "2000000003"])
        #expect(receipt.originalTransactionIDs == ["2000000001", "2000000003"])
        #expect(receipt.inAppPurchases[1].expiresDate == Self.purchases[1].expiresDate)
        #expect(receipt.inAppPurchases[2].cancellationDate == Self.purchases[2].revocationDate)
        #expect(receipt.inAppPurchases[2].expiresDate == nil, "an empty date is no date")
        #expect(receipt.inAppPurchases.map(\.productID) == ["pro.monthly", "pro.monthly", "coins.100"])
    }

    @Test func theApplesShapeReallyUsesIndefiniteLengths() throws {
        let bytes = try #require(Data(base64Encoded: try Self.authority.receipt(bundleID: "com.example.game", purchases: Self.purchases)))
        #expect(Array(bytes.prefix(2)) == [0x30, 0x80])
    }

    /// One changed byte of the payload (a letter of the product id), with and without signed attributes.
    @Test(arguments: [false, true])
    func aTamperedPayloadIsRefused(signedAttributes: Bool) async throws {
        let base64 = try Self.authority.receipt(
            bundleID: "com.example.game", purchases: Self.purchases,
            shape: .init(signedAttributes: signedAttributes))
        var bytes = try #require(Data(base64Encoded: base64))
        let product = try #require(bytes.range(of: Data("coins.100".utf8)))
        bytes[product.lowerBound] = UInt8(ascii: "k")
        await #expect(
            throws: LedgerError(
                .invalidSignature,
                signedAttributes
                    ? "the receipt's content does not match its signed digest"
                    : "the receipt's signature does not match its content")
        ) {
            _ = try await Self.verifier(Self.authority).verifyAppReceipt(bytes.base64EncodedString(), expecting: Self.game)
        }
    }

    @Test func aReceiptFromAnotherChainIsUntrusted() async throws {
        let stranger = try ReceiptAuthority()
        let base64 = try stranger.receipt(bundleID: "com.example.game", purchases: Self.purchases)
        let error = await #expect(throws: LedgerError.self) {
            _ = try await Self.verifier(Self.authority).verifyAppReceipt(base64, expecting: Self.game)
        }
        #expect(error?.code == .untrustedChain)
        _ = try await Self.verifier(Self.authority, stranger).verifyAppReceipt(base64, expecting: Self.game)
    }

    /// Apple's receipt-signing leaves expire; a receipt made while its leaf was valid stays good,
    /// one dated outside the leaf's validity is refused.
    @Test func theChainIsCheckedAsOfTheReceiptsCreation() async throws {
        let leafYears = Date(timeIntervalSince1970: 1_600_000_000)...Date(timeIntervalSince1970: 1_700_000_000)
        let expired = try ReceiptAuthority(leafValidity: leafYears)
        let verifier = Self.verifier(expired)
        let madeThen = try expired.receipt(
            bundleID: "com.example.game", purchases: Self.purchases, created: Date(timeIntervalSince1970: 1_650_000_000))
        #expect(try await verifier.verifyAppReceipt(madeThen, expecting: Self.game).inAppPurchases.count == 3)
        let madeAfter = try expired.receipt(
            bundleID: "com.example.game", purchases: Self.purchases, created: Date(timeIntervalSince1970: 1_710_000_000))
        let error = await #expect(throws: LedgerError.self) { _ = try await verifier.verifyAppReceipt(madeAfter, expecting: Self.game) }
        #expect(error?.code == .untrustedChain)
    }

    @Test func aReceiptOfAnotherAppIsRefused() async throws {
        let base64 = try Self.authority.receipt(bundleID: "com.example.other", purchases: Self.purchases)
        let error = await #expect(throws: LedgerError.self) {
            _ = try await Self.verifier(Self.authority).verifyAppReceipt(base64, expecting: Self.game)
        }
        #expect(error?.code == .bundleMismatch)
    }

    @Test func aReceiptWithoutPurchasesNamesNoFamilies() async throws {
        let base64 = try Self.authority.receipt(bundleID: "com.example.game", purchases: [])
        #expect(try await Self.verifier(Self.authority).verifyAppReceipt(base64, expecting: Self.game).originalTransactionIDs.isEmpty)
    }

    @Test(arguments: [
        "", "not base64 at all!", Data("hello".utf8).base64EncodedString(), "MIAGCSqGSIb3DQEHAqCAMIACAQE=",
        "eyJhbGciOiJFUzI1NiJ9.e30.c2ln",
    ])
    func whatIsNotAReceiptIsMalformed(text: String) async throws {
        let error = await #expect(throws: LedgerError.self) {
            _ = try await Self.verifier(Self.authority).verifyAppReceipt(text, expecting: Self.game)
        }
        #expect(error?.code == .malformed, "\(String(describing: error))")
    }
}
