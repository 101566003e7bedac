import Crypto
import Foundation
import LedgerCore
import LedgerWebhooks
import Testing

/// What a receiver checks (docs/webhooks.md): `t=<seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`.
@Suite struct WebhookSignatureTests {
    @Test func theSignatureIsTheHMACOfTheTimeAndTheBodyAsDocumented() {
        let body = Array(#"{"type":"entitlement.granted"}"#.utf8)
        let header = WebhookSignature.sign(body, secret: "whsec_0123456789abcdef", at: 1_764_000_000)
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Data("whsec_0123456789abcdef".utf8)))
        hmac.update(data: Array("1764000000.".utf8) + body)
        let expected = hmac.finalize().map { String(format: "%02x", $0) }.joined()
        #expect(header == "t=1764000000,v1=\(expected)")
        #expect(WebhookSignature.sign(body, secret: "another-secret-value", at: 1_764_000_000) != header)
        #expect(WebhookSignature.sign(body, secret: "whsec_0123456789abcdef", at: 1_764_000_001) != header, "the time is signed too")
    }

    @Test func aDefinitionIsRefusedNamingTheFieldAtFault() {
        func refusal(
            _ name: String = "game", url: String = "https://game.example/hooks", secret: String = "0123456789abcdef",
            types: [String]? = nil
        ) -> String? {
            do {
                try WebhookRegistry.validate(name: name, url: url, secret: secret, types: types)
                return nil
            } catch {
                #expect(error.code == .invalidWebhook)
                return error.message
            }
        }
        #expect(refusal() == nil)
        #expect(refusal("a b")?.hasPrefix("name:") == true)
        #expect(refusal(url: "ftp://game.example")?.hasPrefix("url:") == true)
        #expect(refusal(secret: "short")?.hasPrefix("secret:") == true)
        #expect(refusal(types: ["entitlement.granted", "no.such.type"])?.contains("no.such.type") == true)
        #expect(refusal(types: [])?.hasPrefix("types:") == true)
    }
}
