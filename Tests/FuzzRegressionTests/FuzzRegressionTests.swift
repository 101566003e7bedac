import AppStoreSimulator
import Foundation
import FuzzTargets
import Testing

/// Every input that ever crashed a fuzz target (kept in `Inputs/<target>/`, added by
/// `Tools/fuzz` when it finds one), run through the target again: a fixed crash stays fixed.
/// A run that crashes takes this test process with it, which fails the suite.
@Suite struct FuzzRegressionTests {
    static let inputs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Inputs")
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "../../../shared/fixtures/apple"
    ).standardized
    static let context = FuzzContext(fixtures: fixtures)

    static func kept(_ target: FuzzTarget) throws -> [URL] {
        let folder = inputs.appendingPathComponent(target.rawValue)
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil).filter {
            !$0.lastPathComponent.hasPrefix(".")
        }
    }

    @Test(arguments: FuzzTarget.allCases)
    func everyInputThatEverCrashedRunsCleanly(_ target: FuzzTarget) async throws {
        for file in try Self.kept(target) {
            let reach = await target.run(try Data(contentsOf: file), with: Self.context)
            // None of the kept crashes is a valid input: each is refused, at whatever depth.
            #expect(reach < .accepted, "\(file.lastPathComponent) was accepted whole")
        }
    }

    /// `Tools/fuzz` copies a finding into the folder named after its target: each target has one,
    /// and no folder is left over from a target that is gone.
    @Test func theInputFoldersAreTheTargets() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.inputs.path).filter { !$0.hasPrefix(".") }
        #expect(Set(folders) == Set(FuzzTarget.allCases.map(\.rawValue)))
        #expect(try Self.kept(.jws).count >= 1, "the JWS crash found before stays a regression input")
    }

    /// Each target reaches the end of its parser on a real input of its kind — what the simulator
    /// signs, as the fuzzer's seeds are, and Apple's own from the fixtures — so a target that
    /// stopped reaching its parser (and so could no longer find anything) is noticed here rather
    /// than in a quiet fuzzing run.
    @Test func eachTargetAcceptsARealInputOfItsKind() async throws {
        let authority = try TestCertificateAuthority()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-root-\(UUID().uuidString).der")
        try authority.rootDER.write(to: root)
        defer { try? FileManager.default.removeItem(at: root) }
        let context = FuzzContext(fixtures: Self.fixtures, extraRoots: [root])
        let app = SimulatedApp(authority: authority, bundleID: "com.example", appAppleID: 1234, environment: "Sandbox")
        let purchase = SimulatedTransaction(
            transactionID: "1000", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -86_400),
            expiresDate: Date(timeIntervalSinceNow: 86_400))
        #expect(await FuzzTarget.jws.run(Data(try app.signedTransaction(purchase).utf8), with: context) == .accepted)
        // Apple's own signed data, from its server library: decoded at least.
        let library = Self.fixtures.appendingPathComponent("app-store-server-library")
        func text(_ path: String) throws -> Data {
            let contents = try String(contentsOf: library.appendingPathComponent(path), encoding: .utf8)
            return Data(contents.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        }
        #expect(await FuzzTarget.jws.run(try text("mock_signed_data/transactionInfo"), with: Self.context) >= .parsed)
        // Xcode's receipt is signed by a certificate nothing trusts: read whole, then refused.
        let receipt = try #require(Data(base64Encoded: try text("xcode/xcode-app-receipt-with-transaction")))
        #expect(await FuzzTarget.receipt.run(receipt, with: Self.context) == .parsed)
        let v1 = try Data(contentsOf: Self.fixtures.appendingPathComponent("legacy/notifications-v1/initial_buy.json"))
        #expect(await FuzzTarget.notificationV1.run(v1, with: Self.context) == .accepted)
        let body = Data(#"{"user_id": "u-1", "signed_transaction": "a.b.c"}"#.utf8)
        #expect(await FuzzTarget.jsonBody.run(body, with: Self.context) == .accepted)
    }

    /// Hostile inputs of every kind are refused or read and refused, never accepted.
    @Test func eachTargetRefusesHostileInputs() async {
        let hostile: [Data] = [
            Data(), Data([0x30, 0x80]), Data([0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), Data(repeating: 0x5b, count: 10_000),
            Data("a.b.c".utf8), Data("eyJhbGciOiJFUzI1NiJ9..".utf8), Data(#"{"notification_type": "DID_RENEW", "password": 1}"#.utf8),
            Data(#"{"a": [1, 2.5e308, -0, "\ud800", {"b": null}]}"#.utf8), Data("\"\\u0000\"".utf8),
        ]
        for target in FuzzTarget.allCases where target != .jsonBody {
            for input in hostile {
                #expect(await target.run(input, with: Self.context) < .accepted, "\(target.rawValue) accepted \(input.prefix(40))")
            }
        }
        // Any JSON document is a body the edge reads; what is not JSON never is.
        #expect(await FuzzTarget.jsonBody.run(Data([0x30, 0x80]), with: Self.context) == .refused)
        #expect(await FuzzTarget.jsonBody.run(Data("a.b.c".utf8), with: Self.context) == .refused)
    }
}
