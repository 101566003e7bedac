import CLibPQ
import Foundation
import LedgerBackground
import Logging
import Synchronization

/// What the listener reports: a NOTIFY on a channel, or "(re)connected" — after which listeners
/// must assume they missed notifications and look for themselves.
package enum PostgresNotification: Sendable, Equatable {
    case notify(channel: String, payload: String)
    case connected
}

/// `LISTEN` on a dedicated connection and thread, outside the pool.
///
/// The thread waits on the socket with `poll(2)` and hands each notification to `handler`. When
/// the connection breaks it reconnects with capped back-off and reports `.connected`, because
/// NOTIFYs sent while it was away are lost; subscribers poll anyway, so nothing is missed for long.
package final class PostgresListener: Sendable {
    private let configuration: PostgresConfiguration
    private let channels: [String]
    private let handler: @Sendable (PostgresNotification) -> Void
    private let logger: Logger
    /// Beats on each sign of life from the server (a notification, an answered idle ping).
    private let heartbeat: Heartbeat?
    /// How long a quiet connection goes before it is pinged: a server that died without closing
    /// the socket (a killed machine, a partition) otherwise leaves the listener waiting forever.
    package static let idlePing = Duration.seconds(5)
    private let stopped = Atomic<Bool>(false)
    private let finished = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// - Parameter channels: lower-case identifiers (checked), e.g. `ledger_events`.
    package init(
        configuration: PostgresConfiguration, channels: [String], heartbeat: Heartbeat? = nil, logger: Logger,
        handler: @escaping @Sendable (PostgresNotification) -> Void
    ) {
        precondition(
            channels.allSatisfy { $0.allSatisfy { $0.isLowercase || $0 == "_" || $0.isNumber } && !$0.isEmpty },
            "channel names are plain lower-case identifiers")
        var configuration = configuration
        // The idle ping must not wait forever either.
        if configuration.deadline == nil { configuration.deadline = .seconds(10) }
        self.configuration = configuration
        self.channels = channels
        self.handler = handler
        self.heartbeat = heartbeat
        self.logger = logger
    }

    package func start() {
        let thread = Thread { [self] in
            run()
            let waiters = finished.withLock { state in
                state.done = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        thread.name = "ledger-listen"
        thread.start()
    }

    /// Stops the thread and waits for it to close its connection.
    package func stop() async {
        stopped.store(true, ordering: .releasing)
        await withCheckedContinuation { continuation in
            let done = finished.withLock { state in
                if !state.done { state.waiters.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
    }

    private var isStopped: Bool { stopped.load(ordering: .acquiring) }

    private func run() {
        var backoff = 0.05
        while !isStopped {
            do {
                let connection = try PostgresConnection.connect(configuration)
                for channel in channels { try connection.execute(script: "LISTEN \(channel)") }
                backoff = 0.05
                heartbeat?.beat()
                handler(.connected)
                try listen(on: connection)
            } catch {
                if isStopped { return }
                heartbeat?.failed(error)
                logger.warning("listener connection unavailable; retrying", metadata: ["error": "\(error)", "retry_in_s": "\(backoff)"])
                sleepUnlessStopped(seconds: backoff)
                backoff = min(backoff * 2, 2)
            }
        }
    }

    /// Returns when stopped; throws when the connection breaks or an idle ping goes unanswered
    /// (within the configuration's deadline).
    private func listen(on connection: PostgresConnection) throws {
        let handle = connection.handle
        var heard = ContinuousClock.now
        while !isStopped {
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 200) // wake five times a second to notice stop()
            if ready < 0, errno != EINTR { throw connection.connectionError() }
            if ready > 0 {
                guard PQconsumeInput(handle) == 1, connection.isHealthy else { throw connection.connectionError() }
            } else if ContinuousClock.now - heard >= Self.idlePing {
                _ = try connection.query("SELECT 1")
            } else {
                continue
            }
            heard = .now
            heartbeat?.beat()
            while let notice = PQnotifies(handle) {
                let channel = String(cString: notice.pointee.relname)
                let payload = String(cString: notice.pointee.extra)
                PQfreemem(notice)
                handler(.notify(channel: channel, payload: payload))
            }
        }
    }

    private func sleepUnlessStopped(seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while !isStopped, Date() < deadline { usleep(20_000) }
    }
}
