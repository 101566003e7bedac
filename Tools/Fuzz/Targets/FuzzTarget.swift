import AppStore
import Foundation
import LedgerCore
import LedgerFormats
import SwiftASN1
import X509

/// One parser of untrusted bytes, driven the way the server drives it. An input may be refused
/// (a thrown error is the expected answer to garbage); it must never crash, trap, leak or hang.
/// `Tools/fuzz` runs these under libFuzzer; `FuzzRegressionTests` runs every input that ever
/// crashed one of them, so a fixed crash stays fixed.
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// A StoreKit 2 JWS (transaction, renewal info, app transaction, V2 notification): the
    /// verifier's parsing up to the signature, and the payload decoders behind it.
    case jws
    /// A legacy app receipt: PKCS#7 from BER, the payload's attributes and in-app purchases, and
    /// the verifier's path for it.
    case receipt
    /// A V1 App Store Server Notification body, as Apple's webhook posts it.
    case notificationV1 = "notification-v1"
    /// A JSON request body: the ledger's parser, its Codable bridge, and writing it back.
    case jsonBody = "json-body"

    /// Runs one input and says how far it got. Asynchronous, as the verifier is: libFuzzer's
    /// callback, which may block, waits for it (`ledger-fuzz`); a test awaits it, never blocking
    /// the concurrency pool.
    @discardableResult
    package func run(_ data: Data, with context: FuzzContext) async -> FuzzReach {
        switch self {
        case .jws: await Self.jws(data, context)
        case .receipt: await Self.receipt(data, context)
        case .notificationV1: Self.notificationV1(data, context)
        case .jsonBody: Self.jsonBody(data)
        }
    }

    private static func jws(_ data: Data, _ context: FuzzContext) async -> FuzzReach {
        let text = String(decoding: data, as: UTF8.self)
        var verified = false
        for expectation in context.expectations {
            verified = (try? await context.verifier.verifyTransaction(text, expecting: expectation)) != nil || verified
            verified = (try? await context.verifier.verifyRenewal(text, expecting: expectation)) != nil || verified
            verified = (try? await context.verifier.verifyAppTransaction(text, expecting: expectation)) != nil || verified
        }
        let body = Data(#"{"signedPayload":"\#(text)"}"#.utf8)
        verified = (try? await context.verifier.verifyNotification(body: body, expecting: context.expectations[0])) != nil || verified
        // The payload decoders, which a forged signature never reaches.
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        let payload = segments.count == 3 ? Base64URL.decode(segments[1]) : data
        let decoded = payload.map { (try? UntrustedParsers.signedPayload($0)) != nil } ?? false
        return verified ? .accepted : decoded ? .parsed : .refused
    }

    private static func receipt(_ data: Data, _ context: FuzzContext) async -> FuzzReach {
        let container = (try? UntrustedParsers.receipt(Array(data))) != nil
        let payload = (try? UntrustedParsers.receiptPayload(Array(data))) != nil
        let verified = (try? await context.verifier.verifyAppReceipt(data.base64EncodedString(), expecting: context.expectations[0])) != nil
        return verified ? .accepted : container || payload ? .parsed : .refused
    }

    private static func notificationV1(_ data: Data, _ context: FuzzContext) -> FuzzReach {
        // The password and bundle id are taken from the body itself, so inputs get past the
        // shared-secret check (as Apple's own would) and reach the rest of the reader.
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        let password = object?["password"] as? String
        let bundleID =
            (object?["bid"] as? String) ?? (object?["unified_receipt"] as? [String: Any]).flatMap { _ in "com.example" } ?? "com.example"
        var verified = false
        for environments: Set<AppleEnvironment> in [[.production, .sandbox], [.sandbox]] {
            let expectation = Expectation(bundleID: bundleID, environments: environments)
            verified =
                (try? VerifiedNotificationV1(body: data, sharedSecret: password, expecting: expectation, receivedAt: Date())) != nil
                || verified
        }
        return verified ? .accepted : object != nil ? .parsed : .refused
    }

    private static func jsonBody(_ data: Data) -> FuzzReach {
        guard let tree = try? JSONTree.parse(data) else { return .refused }
        // What is parsed writes back to text that parses to the same document.
        var written: [UInt8] = []
        tree.write(into: &written)
        guard let again = try? JSONTree.parse(Data(written)), again == tree else {
            fatalError("JSONTree did not read back what it wrote: \(String(decoding: written, as: UTF8.self).prefix(200))")
        }
        let decoded = BodyShapes.all.map { shape in shape(tree) }
        return decoded.contains(true) ? .accepted : .parsed
    }
}

/// How far one input got into a target: refused before any parser of its own read it, read by
/// the target's parser and refused after, or accepted whole (verified, decoded). A target whose
/// real inputs stop reaching `accepted` fuzzes nothing behind its first check.
package enum FuzzReach: Int, Comparable, Sendable {
    case refused, parsed, accepted

    package static func < (lhs: FuzzReach, rhs: FuzzReach) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What every run shares: the verifier with its roots, and the apps evidence is checked for.
package struct FuzzContext: Sendable {
    package let verifier: SignedDataVerifier
    package let expectations: [Expectation]

    /// Roots: Apple's, and the test CA of Apple's server library that signs the fixtures' JWS, so
    /// mutations of those reach the chain checks.
    /// `extraRoots`: DER files, such as the simulator's root that signed the seeds.
    package init(fixtures: URL, extraRoots: [URL] = []) {
        let files =
            ["roots/AppleRootCA-G3.cer", "roots/AppleIncRootCertificate.cer", "app-store-server-library/certs/testCA.der"]
            .map { fixtures.appendingPathComponent($0) } + extraRoots
        let roots = files.compactMap { try? Data(contentsOf: $0) }.compactMap { try? Certificate(derEncoded: Array($0)) }
        verifier = SignedDataVerifier(roots: roots)
        expectations = [
            Expectation(bundleID: "com.example", environments: [.production, .sandbox], appAppleID: 1234),
            Expectation(bundleID: "com.example", environments: [.xcode, .localTesting]),
        ]
    }
}

/// Names for stored inputs.
package enum FuzzInputs {
    /// A short content hash, so one input is stored once.
    package static func name(of data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 // FNV-1a: stable across runs, unlike Hasher
        for byte in data {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
