import EmbeddedPostgres
import Foundation
import LedgerTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `ledger serve` as a child process on a port just found free, answering once made.
///
/// A port drawn at random by the test was once a flake: Linux hands out ports from 32768 to 60999
/// to outgoing connections, and the suite's hundreds of PostgreSQL connections took the one drawn
/// now and then, so the server could not bind and the test waited out its poll. The kernel's pick
/// for a socket bound to port 0, closed at once, is a port no connection holds. The wait is for
/// an event — an answer on `/healthz`, or the process ending — so its bound can be as long as a
/// slow machine needs to migrate a fresh database without costing a fast one anything.
struct ServeProcess {
    let pid: pid_t
    let port: Int
    let log: String
    var base: String { "http://127.0.0.1:\(port)" }

    struct NotAnswering: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts `ledger serve` (with `arguments` after its port) and returns once it answers; `binary`
    /// is this tree's unless another release's is named.
    /// Throws with its log when it ends first or does not answer within `limit`; it is then stopped.
    static func start(
        environment: [String: String], log: String, arguments: [String] = [], within limit: Duration = .seconds(300),
        binary: String = LedgerCommandTests.ledgerBinary
    ) async throws -> ServeProcess {
        let port = try freePort()
        let pid = try ChildProcess.spawn(binary, ["serve", "--port", String(port)] + arguments, environment: environment, outputPath: log)
        let served = ServeProcess(pid: pid, port: port, log: log)
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while clock.now < deadline {
            if (try? await get(served.base + "/healthz")) != nil { return served }
            if let status = ChildProcess.poll(pid) {
                throw NotAnswering(description: "ledger serve exited with status \(status) before answering:\n\(served.output)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        kill(pid, SIGKILL)
        _ = await ChildProcess.wait(pid)
        throw NotAnswering(description: "ledger serve did not answer within \(limit):\n\(served.output)")
    }

    /// A loopback port free now: the kernel's choice for a socket bound to port 0.
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw NotAnswering(description: "socket(): errno \(errno)") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(socket, socketAddress, length) == 0 && getsockname(socket, socketAddress, &length) == 0
            }
        }
        guard bound else { throw NotAnswering(description: "bind(127.0.0.1:0): errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// What it has written so far.
    var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// Ends it (SIGKILL) and reaps it.
    func stop() {
        kill(pid, SIGKILL)
        _ = ChildProcess.wait(pid)
    }
}
