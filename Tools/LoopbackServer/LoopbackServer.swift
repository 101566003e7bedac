import Hummingbird
import Logging
import ServiceLifecycle

/// A router served on 127.0.0.1, for the tests' stand-ins for other parties (a game server's
/// webhook endpoint, an OpenTelemetry collector). In a service group of its own, so stopping is
/// a graceful shutdown: the listener closes before the connections, none accepted half-way.
/// Cancelling the application's task while requests kept arriving could trip NIO's check on a
/// channel activated after its writer was gone.
package struct LoopbackServer: Sendable {
    /// The port it listens on.
    package let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Listens on `port` (0: any free one) and returns once it does.
    package static func start(_ router: Router<BasicRequestContext>, port: Int = 0, name: String) async throws -> LoopbackServer {
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: name)
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: name),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? port) }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let task = Task { try await group.run() }
        var iterator = stream.makeAsyncIterator()
        guard let bound = await iterator.next() else { throw CancellationError() }
        return LoopbackServer(port: bound, group: group, task: task)
    }

    /// Stops listening and waits until the server has finished.
    package func stop() async {
        await group.triggerGracefulShutdown()
        _ = await task.result
    }
}
