import AppStoreServerAPI
import ArgumentParser
import Crypto
import Foundation

/// Offer signatures per second on one core — a promotional offer JWS as the ledger issues it
/// (claims written, base64url, ES256, assembled), an introductory eligibility, a legacy
/// SKPaymentDiscount signature — beside bare ES256 signing of the same claims' bytes.
struct OfferBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "offers",
        abstract: "Offer signatures per second on one core, beside bare ES256 signing of the same claims.")

    @Option(help: "Seconds per measurement.") var seconds = 2.0
    @Option(help: "Rounds (the measurements alternate).") var rounds = 5

    func run() async throws {
        let key = P256.Signing.PrivateKey()
        let credentials = try ServerAPICredentials(
            issuerID: UUID().uuidString, keyID: "BENCHKEY01", privateKeyPEM: key.pemRepresentation,
            bundleID: "com.example.game")
        let signer = OfferSigner(credentials: credentials)
        // The baseline signs exactly what a promotional offer signs: its header and claims, already encoded.
        let sample = try signer.promotionalOffer(productID: "pro.monthly", offerID: "winback-50", transactionID: "2000000123456789")
        let input = Data(sample.split(separator: ".").prefix(2).joined(separator: ".").utf8)

        var bare: [Double] = [], promotional: [Double] = [], introductory: [Double] = [], legacy: [Double] = []
        for _ in 1...rounds {
            bare.append(try await benchRate(seconds: seconds) { _ = try key.signature(for: input) })
            promotional.append(
                try await benchRate(seconds: seconds) {
                    _ = try signer.promotionalOffer(productID: "pro.monthly", offerID: "winback-50", transactionID: "2000000123456789")
                })
            introductory.append(
                try await benchRate(seconds: seconds) {
                    _ = try signer.introductoryEligibility(productID: "pro.monthly", allow: true, transactionID: "2000000123456789")
                })
            legacy.append(
                try await benchRate(seconds: seconds) {
                    _ = try signer.legacyPromotionalOffer(
                        productID: "pro.monthly", offerID: "winback-50",
                        applicationUsername: "7e3fb20b-4cdb-47cc-936d-99d65f608138")
                })
        }
        func share(_ values: [Double]) -> String { String(format: "%5.1f %%", median(values) / median(bare) * 100) }
        print("Offer signing on one core, \(rounds) rounds of \(seconds) s, medians")
        print("  bare ES256 of the same claims (baseline)  \(format(median(bare)))")
        print(
            "  promotional offer JWS                     \(format(median(promotional)))   \(share(promotional)) of bare ES256 (goal ≥ 5,000/s)"
        )
        print("  introductory eligibility JWS              \(format(median(introductory)))   \(share(introductory))")
        print("  legacy SKPaymentDiscount signature        \(format(median(legacy)))   \(share(legacy))")
    }
}
