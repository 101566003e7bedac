import Foundation
import LedgerCore
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Asks the server's own listener for `/readyz`, from a thread of its own, the way a client
/// would: a process whose listener stopped answering, or whose background part is stuck while the
/// database answers (`/readyz` says `stuck`), is alive to a supervisor and dead to clients. The
/// watchdog then says why, asks the process to stop (SIGTERM, the graceful way) and, should that
/// not finish, ends it: a supervisor restarts what exits, never what lingers.
///
/// Its own thread, blocking sockets: a starved cooperative pool — one way a listener stops
/// answering — must not starve the watchdog too.
package final class Watchdog: Sendable {
    let host: String
    /// How long the listener may go unanswered before the watchdog gives up.
    let patience: Duration
    let interval: Duration
    /// How long one probe waits for its answer.
    let timeout: Duration
    let logger: Logger
    private let verdict = Mutex<String?>(nil)
    private let stopped = Atomic<Bool>(false)
    /// Called with the reason once the watchdog gives up (by default: SIGTERM, then exit).
    private let giveUp: @Sendable (String) -> Void

    /// `host`: the address the server listens on (an unspecified one is asked on loopback).
    package init(
        host: String, patience: Duration, interval: Duration = .seconds(5), timeout: Duration = .seconds(5), logger: Logger,
        giveUp: (@Sendable (String) -> Void)? = nil
    ) {
        self.host = host == "0.0.0.0" ? "127.0.0.1" : (host == "::" ? "::1" : host)
        self.patience = patience
        self.interval = interval
        self.timeout = timeout
        self.logger = logger
        self.giveUp = giveUp ?? Watchdog.stopProcess
    }

    /// Why the watchdog gave up, if it did: the serve command then exits with a failure.
    package var reason: String? { verdict.withLock { $0 } }

    /// Starts watching the listener on `port` (the one it bound).
    package func start(port: Int) {
        let thread = Thread { [self] in run(port: port) }
        thread.name = "ledger-watchdog"
        thread.start()
    }

    package func stop() { stopped.store(true, ordering: .releasing) }

    private func run(port: Int) {
        var unansweredSince: ContinuousClock.Instant?
        var lastError = ""
        while !stopped.load(ordering: .acquiring) {
            Thread.sleep(forTimeInterval: interval.seconds)
            if stopped.load(ordering: .acquiring) { return }
            var why: String?
            switch Self.readiness(host: host, port: port, timeout: timeout) {
            case .success(let checks):
                unansweredSince = nil
                if let stuck = checks.sorted(by: { $0.key < $1.key }).first(where: { $0.value.hasPrefix("stuck") }) {
                    why = "\(stuck.key) is \(stuck.value)"
                }
            case .failure(let error):
                let since = unansweredSince ?? .now
                unansweredSince = since
                lastError = "\(error)"
                if ContinuousClock.now - since >= patience {
                    why =
                        "the HTTP listener at \(host):\(port) has not answered /readyz for \((ContinuousClock.now - since).seconds.rounded()) s (\(lastError))"
                }
            }
            guard let why else { continue }
            verdict.withLock { $0 = why }
            logger.critical(
                "the server cannot recover by itself and stops, so that its supervisor restarts it", metadata: ["reason": "\(why)"])
            giveUp(why)
            return
        }
    }

    /// SIGTERM to this process (the service group stops gracefully), then, 15 s later, exit.
    static func stopProcess(_ reason: String) {
        kill(getpid(), SIGTERM)
        Thread.sleep(forTimeInterval: 15)
        exit(70) // EX_SOFTWARE
    }

    struct ProbeError: Error, CustomStringConvertible {
        var description: String
    }

    /// `GET /readyz` over a fresh connection; the checks of any answer with a JSON body.
    static func readiness(host: String, port: Int, timeout: Duration) -> Result<[String: String], ProbeError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let address = found else {
            return .failure(ProbeError(description: "cannot resolve \(host)"))
        }
        defer { freeaddrinfo(found) }
        let socket = Glibc.socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
        guard socket >= 0 else { return .failure(ProbeError(description: "socket: \(String(cString: strerror(errno)))")) }
        defer { close(socket) }
        var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard connect(socket, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 else {
            return .failure(ProbeError(description: "connect: \(String(cString: strerror(errno)))"))
        }
        let request = Array("GET /readyz HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n".utf8)
        guard send(socket, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
            return .failure(ProbeError(description: "send: \(String(cString: strerror(errno)))"))
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let read = recv(socket, &buffer, buffer.count, 0)
            if read > 0 {
                answer += buffer[0..<read]
            } else if read == 0 {
                break
            } else {
                return .failure(ProbeError(description: "no answer: \(String(cString: strerror(errno)))"))
            }
        }
        guard let split = answer.firstRange(of: Array("\r\n\r\n".utf8)),
            let object = try? JSONSerialization.jsonObject(with: Data(answer[split.upperBound...])) as? [String: Any]
        else { return .failure(ProbeError(description: "an answer without a readiness body")) }
        let checks = (object["checks"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
        return .success(checks)
    }
}
