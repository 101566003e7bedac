import Logging
import Synchronization

/// The lines a logger wrote, kept in memory: the loop's tests read what it said without
/// bootstrapping the logging system (which a process may do once, and the tests share one).
final class RecordedLines: Sendable {
    struct Line: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    private let lines = Mutex<[Line]>([])

    var all: [Line] { lines.withLock { $0 } }

    /// A logger whose every line lands here.
    var logger: Logger {
        Logger(label: "background-loop-test") { _ in Handler(recorded: self) }
    }

    fileprivate func append(_ line: Line) { lines.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let recorded: RecordedLines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            recorded.append(Line(level: event.level, message: event.message.description, metadata: merged))
        }
    }
}
