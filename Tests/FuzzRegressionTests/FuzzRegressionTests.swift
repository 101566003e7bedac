import Foundation
import FuzzTargets
import Testing

/// Every input that ever crashed a fuzz target (kept in `Inputs/<target>/`, added by
/// `Tools/fuzz` when it finds one), run through the target again: a fixed crash stays fixed.
/// A run that crashes takes this test process with it, which fails the suite.
@Suite struct FuzzRegressionTests {
    static let inputs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Inputs")
    static let context = FuzzContext(
        fixtures: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../shared/fixtures/apple").standardized)

    @Test(arguments: FuzzTarget.allCases)
    func everyInputThatEverCrashedRunsCleanly(_ target: FuzzTarget) async throws {
        let folder = Self.inputs.appendingPathComponent(target.rawValue)
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil).filter { !$0.lastPathComponent.hasPrefix(".") }
        for file in files { await target.run(try Data(contentsOf: file), with: Self.context) }
    }

    /// The targets themselves on inputs of each kind, so a target that stopped reaching its parser
    /// (and so could no longer find anything) is noticed here rather than in a quiet fuzzing run.
    @Test func eachTargetRunsOnTypicalAndHostileInputs() async {
        let hostile: [Data] = [
            Data(), Data([0x30, 0x80]), Data([0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), Data(repeating: 0x5b, count: 10_000),
            Data("a.b.c".utf8), Data("eyJhbGciOiJFUzI1NiJ9..".utf8), Data(#"{"notification_type": "DID_RENEW", "password": 1}"#.utf8),
            Data(#"{"a": [1, 2.5e308, -0, "\ud800", {"b": null}]}"#.utf8), Data("\"\\u0000\"".utf8),
        ]
        for target in FuzzTarget.allCases {
            for input in hostile { await target.run(input, with: Self.context) }
        }
    }
}
