import AppStoreSimulator
import Foundation
import LedgerPrivacy
import Testing

/// What an erasure empties: evidence that carries the token at any depth Apple nests it, and only that.
@Suite struct EvidenceSearchTests {
    @Test func findsATokenInsideANotificationsNestedJWSAndNowhereElse() throws {
        let app = SimulatedApp(
            authority: try TestCertificateAuthority(), bundleID: "com.example.game", appAppleID: 4242, environment: "Sandbox")
        let token = UUID(), other = UUID()
        var transaction = SimulatedTransaction(
            transactionID: "s-1", productID: "pro.monthly", purchaseDate: Date(), expiresDate: Date(timeIntervalSinceNow: 3600))
        transaction.appAccountToken = token
        let notification = try app.notificationV2("DID_RENEW", transaction: transaction)
        // The notification's body is JSON holding a JWS whose payload holds another JWS: the token is two decodings deep.
        #expect(!String(decoding: notification, as: UTF8.self).lowercased().contains(token.uuidString.lowercased()))
        #expect(EvidenceSearch.mentions(Array(notification), anyOf: [token]))
        #expect(!EvidenceSearch.mentions(Array(notification), anyOf: [other]))
        #expect(EvidenceSearch.mentions(Array(try app.signedTransaction(transaction).utf8), anyOf: [other, token]))

        // A receipt is base64 of binary: the token as its 16 bytes.
        var receipt =
            [UInt8](repeating: 0x30, count: 40) + withUnsafeBytes(of: token.uuid) { Array($0) } + [UInt8](repeating: 0x04, count: 40)
        #expect(EvidenceSearch.mentions(Array(Data(receipt).base64EncodedString().utf8), anyOf: [token]))
        receipt.replaceSubrange(40..<56, with: withUnsafeBytes(of: other.uuid) { Array($0) })
        #expect(!EvidenceSearch.mentions(Array(Data(receipt).base64EncodedString().utf8), anyOf: [token]))
    }
}
