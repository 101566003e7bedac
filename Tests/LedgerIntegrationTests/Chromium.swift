import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's chromium, headless, driven over the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: JSON messages separated by NUL, commands on fd 3, answers on fd 4),
/// so the tests need no WebSocket client and no JavaScript tooling.
final class Chromium: @unchecked Sendable {
    enum Failure: Error, CustomStringConvertible {
        case notInstalled, failed(String)
        var description: String {
            switch self {
            case .notInstalled: "chromium is not installed (apt-get install chromium; Tools/dev test installs it)"
            case .failed(let message): message
            }
        }
    }

    private let pid: pid_t
    private let commands: Int32
    private let answers: Int32
    private let profile: String
    private let state = Mutex<(next: Int, waiting: [Int: CheckedContinuation<JSONObject, any Error>], loads: Int)>((0, [:], 0))
    private var session = ""

    static var binary: String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    init() throws {
        guard let binary = Self.binary else { throw Failure.notInstalled }
        profile = NSTemporaryDirectory() + "ledger-chromium-\(UUID().uuidString.prefix(8))"
        var toChrome: [Int32] = [0, 0], fromChrome: [Int32] = [0, 0]
        guard pipe(&toChrome) == 0, pipe(&fromChrome) == 0 else { throw Failure.failed("pipe: \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChrome[0], 3)
        posix_spawn_file_actions_adddup2(&actions, fromChrome[1], 4)
        let devNull = Glibc.open("/dev/null", O_WRONLY)
        posix_spawn_file_actions_adddup2(&actions, devNull, 1)
        posix_spawn_file_actions_adddup2(&actions, devNull, 2)
        let arguments = [
            binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--remote-debugging-pipe", "--user-data-dir=\(profile)", "--window-size=1200,1400", "about:blank",
        ]
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, binary, &actions, nil, &argv, environ)
        Glibc.close(toChrome[0]); Glibc.close(fromChrome[1]); Glibc.close(devNull)
        guard spawned == 0 else { throw Failure.failed("posix_spawn: \(spawned)") }
        pid = child
        commands = toChrome[1]
        answers = fromChrome[0]
        let reader = Thread { [self] in read() }
        reader.start()
    }

    /// Opens a page and attaches to it; every later command goes to it.
    func open() async throws {
        let target = try await send("Target.createTarget", ["url": "about:blank"], session: nil)
        guard let id = target["targetId"] as? String else { throw Failure.failed("no target: \(target)") }
        let attached = try await send("Target.attachToTarget", ["targetId": id, "flatten": true], session: nil)
        session = attached["sessionId"] as? String ?? ""
        _ = try await send("Page.enable")
    }

    /// Navigates and waits for the page's load event.
    func go(_ url: String) async throws {
        try await loading { _ = try await send("Page.navigate", ["url": url]) }
    }

    /// Runs `action` (a navigation, a click that submits a form) and waits for the next load.
    func loading(_ action: () async throws -> Void) async throws {
        let before = state.withLock { $0.loads }
        try await action()
        for _ in 0..<300 {
            if state.withLock({ $0.loads }) > before { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw Failure.failed("the page did not load within 6 s")
    }

    /// A JavaScript expression's value in the page.
    @discardableResult
    func evaluate(_ expression: String) async throws -> Any? {
        let result = try await send("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = result["exceptionDetails"] { throw Failure.failed("\(expression): \(exception)") }
        return (result["result"] as? [String: Any])?["value"]
    }

    func text(_ selector: String = "body") async throws -> String {
        try await evaluate("document.querySelector(\(Self.quoted(selector)))?.innerText ?? ''") as? String ?? ""
    }

    /// Types into a field and submits its form (waiting for the next page).
    func submit(_ fields: [String: String], button: String) async throws {
        var script = ""
        for (selector, value) in fields { script += "document.querySelector(\(Self.quoted(selector))).value = \(Self.quoted(value));" }
        try await evaluate(script)
        try await loading { try await evaluate("document.querySelector(\(Self.quoted(button))).click()") }
    }

    func screenshot(to path: String) async throws {
        let shot = try await send("Page.captureScreenshot", ["format": "png", "captureBeyondViewport": true])
        guard let base64 = shot["data"] as? String, let data = Data(base64Encoded: base64) else { throw Failure.failed("no screenshot") }
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: path))
    }

    func close() {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        Glibc.close(commands)
        try? FileManager.default.removeItem(atPath: profile)
    }

    static func quoted(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: [text]), as: UTF8.self).dropFirst().dropLast().description
    }

    // MARK: The pipe

    func send(_ method: String, _ params: [String: Any] = [:], session: String?? = .none) async throws -> [String: Any] {
        let target = session ?? self.session
        let id = state.withLock {
            $0.next += 1; return $0.next
        }
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let target, !target.isEmpty { message["sessionId"] = target }
        var bytes = Array(try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<JSONObject, any Error>) in
            state.withLock { $0.waiting[id] = continuation }
            let written = bytes.withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
            if written != bytes.count {
                state.withLock { $0.waiting[id] = nil }
                continuation.resume(throwing: Failure.failed("chromium's pipe closed"))
            }
        }.value
    }

    private func read() {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(answers, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            buffer += chunk[..<count]
            while let end = buffer.firstIndex(of: 0) {
                let message = Array(buffer[..<end])
                buffer.removeSubrange(...end)
                guard let object = (try? JSONSerialization.jsonObject(with: Data(message))) as? [String: Any] else { continue }
                if let id = object["id"] as? Int {
                    let waiting = state.withLock { $0.waiting.removeValue(forKey: id) }
                    if let error = object["error"] {
                        waiting?.resume(throwing: Failure.failed("\(error)"))
                    } else {
                        waiting?.resume(returning: JSONObject(value: object["result"] as? [String: Any] ?? [:]))
                    }
                } else if object["method"] as? String == "Page.loadEventFired" {
                    state.withLock { $0.loads += 1 }
                }
            }
        }
        let waiting = state.withLock { state in
            defer { state.waiting = [:] }; return state.waiting
        }
        for continuation in waiting.values { continuation.resume(throwing: Failure.failed("chromium exited")) }
    }
}

/// A decoded DevTools answer, handed from the reader thread to the waiting test.
struct JSONObject: @unchecked Sendable { let value: [String: Any] }
