import Foundation

/// Google's wire shapes as the research gathered them (../shared/fixtures/google). Files are
/// listed from their folders, so a fixture added there is covered without a change here.
enum GoogleFixtures {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("../shared/fixtures/google").standardizedFileURL
    static let available = FileManager.default.fileExists(atPath: root.appendingPathComponent("rtdn").path)

    /// The names of the files in `folder` ending in `suffix`, sorted.
    static func names(_ folder: String, suffix: String = ".json") -> [String] {
        let all = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)) ?? []
        return all.filter { $0.hasSuffix(suffix) }.sorted()
    }

    static func data(_ folder: String, _ name: String) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent(folder).appendingPathComponent(name))
    }
}
