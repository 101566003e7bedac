import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// How log lines are written (`LEDGER_LOG_FORMAT`).
enum LogFormat: String, CaseIterable, Sendable {
    /// swift-log's own lines, for a terminal.
    case text
    /// One JSON object a line — `time`, `level`, `label`, `message`, `source` and every metadata
    /// key — for a collector (Loki, Elasticsearch, CloudWatch) to index without parsing text.
    case json
}

/// Writes each line as one JSON object to stderr. Metadata comes from the logger, the call and
/// the metadata provider (a request's id and trace id); values are strings, lists and objects as
/// swift-log holds them. One `write(2)` a line, so lines from several threads never interleave.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, metadataProvider: Logger.MetadataProvider?) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let given = event.metadata { merged.merge(given) { _, new in new } }
        var line: [String: Any] = merged.mapValues(Self.json)
        line["time"] = Self.time.format(Date())
        line["level"] = event.level.rawValue
        line["label"] = label
        line["message"] = event.message.description
        line["source"] = event.source
        guard var bytes = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        bytes.append(UInt8(ascii: "\n"))
        bytes.withUnsafeBytes { buffer in _ = write(STDERR_FILENO, buffer.baseAddress, buffer.count) }
    }

    static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(json)
        case .dictionary(let values): values.mapValues(json)
        }
    }

    /// A value, so every thread formats with its own copy.
    static let time = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}
