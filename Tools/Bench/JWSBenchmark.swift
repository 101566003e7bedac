import AppStore
import ArgumentParser
import Crypto
import Foundation
import LedgerCore
import SwiftASN1
import X509

struct JWSBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jws",
        abstract: "JWS verifications per second on one core, warm (cached chain) and cold, beside a bare ES256 check.")

    @Option(help: "Seconds per measurement.") var seconds = 2.0
    @Option(help: "Rounds (the three measurements alternate).") var rounds = 5
    @Option(help: "Apple's test certificates and keys (../shared/fixtures/apple/app-store-server-library).")
    var fixtures = "../shared/fixtures/apple/app-store-server-library"

    func run() async throws {
        let folder = URL(fileURLWithPath: fixtures)
        func text(_ name: String) throws -> String {
            try String(contentsOf: folder.appendingPathComponent("certs-with-keys/\(name)"), encoding: .utf8)
        }
        func der(_ name: String) throws -> [UInt8] {
            var serializer = DER.Serializer()
            try serializer.serialize(try Certificate(pemEncoded: text(name)))
            return serializer.serializedBytes
        }
        let root = try Certificate(derEncoded: der("testCA.pem"))
        let key = try P256.Signing.PrivateKey(pemRepresentation: text("testLeaf.key"))
        let chain = try ["testLeaf.pem", "testIntermediate.pem", "testCA.pem"].map { Data(try der($0)).base64EncodedString() }
        func b64url(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let header = b64url(try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": chain]))
        let payload = b64url(
            try JSONSerialization.data(withJSONObject: [
                "bundleId": "com.example", "environment": "Sandbox", "signedDate": 1_750_000_000_000, "transactionId": "2000000999",
                "originalTransactionId": "2000000999", "productId": "pro.monthly", "type": "Auto-Renewable Subscription",
                "purchaseDate": 1_750_000_000_000, "expiresDate": 1_752_592_000_000, "quantity": 1, "price": 4990, "currency": "EUR",
            ]))
        let input = header + "." + payload
        let signature = try key.signature(for: Data(input.utf8))
        let jws = input + "." + b64url(signature.rawRepresentation)
        let expectation = Expectation(bundleID: "com.example", environments: [.sandbox])
        let publicKey = key.publicKey

        var raw: [Double] = [], warm: [Double] = [], cold: [Double] = []
        let warmVerifier = SignedDataVerifier(roots: [root])
        for _ in 1...rounds {
            raw.append(try await rate { _ = publicKey.isValidSignature(signature, for: Data(input.utf8)) })
            warm.append(try await rate { _ = try await warmVerifier.verify(jws, as: .transaction, expecting: expectation) })
            cold.append(
                try await rate { _ = try await SignedDataVerifier(roots: [root]).verify(jws, as: .transaction, expecting: expectation) })
        }
        print("JWS verification on one core, \(rounds) rounds, medians")
        print("  bare ES256 check (baseline)          \(format(median(raw)))")
        print(
            "  verify, warm (chain cached)          \(format(median(warm)))   \(String(format: "%5.1f %%", median(warm) / median(raw) * 100)) of bare ES256 (goal ≥ 5,000/s)"
        )
        print("  verify, cold (new verifier each)     \(format(median(cold)))")
    }

    private func rate(_ body: () async throws -> Void) async throws -> Double { try await benchRate(seconds: seconds, body) }
}
