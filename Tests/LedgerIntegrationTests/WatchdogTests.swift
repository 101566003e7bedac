import Foundation
import LedgerServer
import LedgerTestSupport
import Logging
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The watchdog asks the server's listener as a client would, and gives up on one that does not
/// answer — nothing listening, or a listener that accepts and then says nothing (a process whose
/// request handling starved) — while a listener that answers keeps it quiet.
@Suite(.takingTurns) struct WatchdogTests {
    /// A socket bound on loopback: listening (connections queue, nobody answers) or not.
    static func socket(listening: Bool) throws -> (descriptor: Int32, port: Int) {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0)
        if listening { try #require(listen(descriptor, 8) == 0) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Probes every 200 ms, each waiting `timeout` for its answer; gives up after `patience`
    /// without one.
    static func watch(
        port: Int, within limit: Duration, timeout: Duration = .milliseconds(500), patience: Duration = .milliseconds(600)
    ) async -> String? {
        let said = Locked<String?>(nil)
        let watchdog = Watchdog(
            host: "127.0.0.1", patience: patience, interval: .milliseconds(200), timeout: timeout, logger: Logger(label: "watchdog-test")
        ) { reason in said.withLock { $0 = reason } }
        watchdog.start(port: port)
        defer { watchdog.stop() }
        let start = ContinuousClock.now
        while said.value == nil, ContinuousClock.now - start < limit { try? await Task.sleep(for: .milliseconds(50)) }
        #expect(watchdog.reason == said.value)
        return said.value
    }

    @Test func givesUpOnAPortWhereNothingListens() async throws {
        let (descriptor, port) = try Self.socket(listening: false)
        defer { close(descriptor) }
        let reason = try #require(await Self.watch(port: port, within: .seconds(10)))
        #expect(reason.contains("has not answered /readyz") && reason.contains("connect"), "\(reason)")
    }

    @Test func givesUpOnAListenerThatAcceptsButNeverAnswers() async throws {
        let (descriptor, port) = try Self.socket(listening: true)
        defer { close(descriptor) }
        let reason = try #require(await Self.watch(port: port, within: .seconds(10)))
        #expect(reason.contains("has not answered /readyz") && reason.contains("no answer"), "\(reason)")
    }

    @Test func staysQuietWhileTheServerAnswers() async throws {
        let server = try await TestServer.start(configure: false)
        defer { Task { await server.stop() } }
        let port = try #require(Int(server.baseURL.split(separator: ":").last ?? ""))
        // Its answers may be slow beside the rest of the suite (a second and more on a slow,
        // loaded machine); they come, and fifteen rounds of asking pass without a word.
        let quiet = await Self.watch(port: port, within: .seconds(3), timeout: .seconds(10), patience: .seconds(5))
        #expect(quiet == nil, "a server that answers is left alone")
    }
}
