import AppStoreSimulator
import Foundation
import FuzzTargets

/// Seed corpora: what the simulator sends (signed with a chain the fuzzing run trusts) and what
/// Apple sent, from `../shared/fixtures/apple`. One file an input, named by its content's hash.
enum Seeds {
    static func write(to folder: URL, fixtures: URL, authority: TestCertificateAuthority) throws {
        var seeds: [FuzzTarget: [Data]] = [:]
        let app = SimulatedApp(authority: authority, bundleID: "com.example", appAppleID: 1234, environment: "Sandbox")
        let now = Date()
        let transactions = [
            SimulatedTransaction(
                transactionID: "1000", productID: "pro.monthly", purchaseDate: now.addingTimeInterval(-86_400),
                expiresDate: now.addingTimeInterval(86_400)),
            SimulatedTransaction(
                transactionID: "1001", productID: "coins.100", purchaseDate: now.addingTimeInterval(-3_600), expiresDate: nil),
        ]
        for transaction in transactions { seeds[.jws, default: []].append(Data(try app.signedTransaction(transaction).utf8)) }
        seeds[.jws, default: []].append(
            Data(try app.signedRenewal(SimulatedRenewal(originalTransactionID: "1000", productID: "pro.monthly")).utf8))
        for type in ["DID_RENEW", "REFUND", "TEST"] {
            let body = try app.notificationV2(type, transaction: type == "TEST" ? nil : transactions[0])
            if let object = try JSONSerialization.jsonObject(with: body) as? [String: Any], let payload = object["signedPayload"] as? String
            {
                seeds[.jws, default: []].append(Data(payload.utf8))
            }
            seeds[.jsonBody, default: []].append(body)
        }
        for type in ["INITIAL_BUY", "DID_RENEW", "CANCEL"] {
            seeds[.notificationV1, default: []].append(try app.notificationV1(type, password: "fuzz-secret", transactions: transactions))
        }
        for shape in [ReceiptAuthority.Shape.apple, .init(indefiniteLengths: false), .init(chunkedContent: true, signedAttributes: true)] {
            let receipt = try ReceiptAuthority.shared.receipt(bundleID: "com.example", purchases: transactions, shape: shape)
            if let bytes = Data(base64Encoded: receipt) { seeds[.receipt, default: []].append(bytes) }
        }
        // Apple's: signed data of Apple's server library, Xcode's receipts, V1 bodies, API answers.
        let library = fixtures.appendingPathComponent("app-store-server-library")
        for file in try files(in: library.appendingPathComponent("mock_signed_data")) + files(in: library.appendingPathComponent("xcode")) {
            let text = try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            if file.lastPathComponent.contains("receipt"), let bytes = Data(base64Encoded: text) {
                seeds[.receipt, default: []].append(bytes)
            } else {
                seeds[.jws, default: []].append(Data(text.utf8))
            }
        }
        // Apple's model bodies: request and answer shapes, and decoded payloads (the jws target
        // hands an input that is not three segments to the payload decoders as it is).
        for file in try files(in: library.appendingPathComponent("models")) {
            let body = try Data(contentsOf: file)
            seeds[.jsonBody, default: []].append(body)
            seeds[.jws, default: []].append(body)
        }
        for file in try files(in: fixtures.appendingPathComponent("legacy/notifications-v1")) {
            seeds[.notificationV1, default: []].append(try Data(contentsOf: file))
        }
        for file in try files(in: fixtures.appendingPathComponent("legacy/verify-receipt")) {
            seeds[.jsonBody, default: []].append(try Data(contentsOf: file))
        }
        for (target, inputs) in seeds {
            let directory = folder.appendingPathComponent(target.rawValue)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for input in inputs { try input.write(to: directory.appendingPathComponent("seed-\(FuzzInputs.name(of: input))")) }
            print("\(target.rawValue): \(inputs.count) seeds in \(directory.path)")
        }
    }

    static func files(in folder: URL) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil).filter { !$0.hasDirectoryPath }.sorted {
            $0.path < $1.path
        }
    }
}
