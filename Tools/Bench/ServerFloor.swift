import AppStore
import ArgumentParser
import Foundation
import Hummingbird
import LedgerAccess
import LedgerHTTP
import LedgerIngestion
import LedgerPostgres
import LedgerServer
import Logging
import ServiceLifecycle
import Synchronization

/// The most a ledger server could ingest on this machine: an HTTP server that does only what no
/// design of ingestion can skip — the API key looked up, the body decoded, the signed transaction
/// verified against the app, and the rows a recorded purchase writes (`PurchaseRowsFloor`'s,
/// copied, not computed) — grouped as the ledger groups its requests (`GroupQueue`, one writer, a
/// transaction of one round trip a group, durable commits). Nothing read, decided, hashed or
/// projected; no timeline answered; no event for any worker to pass.
///
/// A bound, not a rival, measured on the same cluster in the same run: issue 16 asks ingestion
/// for a share of pgbench's one-row INSERT, and this line says whether that share is within what
/// HTTP, verification and the rows leave on the machine, before any of the ledger's own work.
final class ServerFloor: Sendable {
    private let services: LedgerServices
    private let verifier: SignedDataVerifier
    private let pool: PostgresPool
    private let transaction: PurchaseRowsFloor.Transaction
    private let queue = Mutex(GroupQueue<CheckedContinuation<Void, any Error>>(maximumGroup: 64))

    /// `verifier`: trusting the roots the server's does. `transaction`: prepared by the owner in
    /// schema `bench_floor`, which this grants the server's runtime role (`pool`'s) to write.
    init(
        services: LedgerServices, verifier: SignedDataVerifier, pool: PostgresPool, transaction: PurchaseRowsFloor.Transaction,
        owner: PostgresConnection
    ) throws {
        try owner.execute(
            script: """
                GRANT USAGE ON SCHEMA bench_floor TO ledger_app;
                GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA bench_floor TO ledger_app;
                GRANT USAGE ON ALL SEQUENCES IN SCHEMA bench_floor TO ledger_app;
                """)
        self.services = services
        self.verifier = verifier
        self.pool = pool
        self.transaction = transaction
    }

    /// The ledger's request body; the user is not needed when nothing is recorded for them.
    private struct Body: Decodable {
        var signed_transaction: String
    }

    /// The floor's server on a port of its own, answering the ledger's path for signed transactions
    /// (so the ingestion run's wrk script serves it unchanged), until `body` returns.
    func serving<T: Sendable>(logger: Logger, _ body: @Sendable (_ base: String) async throws -> T) async throws -> T {
        let router = Router()
        router.post("/v1/apps/:bundle_id/transactions") { request, context -> Response in
            try await self.ingest(request, context: context)
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        // The stream ends with the server, so a server that never started is an error, not a wait.
        let server = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            await group.triggerGracefulShutdown()
            try await server.value
            throw ValidationError("the floor's server stopped before it listened")
        }
        let result: Result<T, any Error>
        do { result = .success(try await body("http://127.0.0.1:\(port)")) } catch { result = .failure(error) }
        await group.triggerGracefulShutdown()
        _ = await server.result
        return try result.get()
    }

    private func ingest(_ request: Request, context: BasicRequestContext) async throws -> Response {
        guard let bundleID = context.parameters.get("bundle_id"),
            let header = request.headers[.authorization], header.hasPrefix("Bearer "),
            let key = try await services.keys.authenticate(String(header.dropFirst("Bearer ".count))),
            key.grants(.ingest), key.covers(bundleID: bundleID)
        else { return Response(status: .unauthorized) }
        let body = try await request.decode(as: Body.self, context: context)
        let app = try await services.directory.app(bundleID)
        _ = try await verifier.verifyTransaction(body.signed_transaction, expecting: app.expectation)
        try await write()
        return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "{}")))
    }

    /// The purchase's rows, with those of whoever arrives while a group is written.
    private func write() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            if queue.withLock({ $0.arrive(continuation) }) == .write { Task { await self.writeWhileWaiting() } }
        }
    }

    private func writeWhileWaiting() async {
        while case .write(let group) = queue.withLock({ $0.nextGroup() }) {
            let statements = RoundTrip(transaction.statements(group: group.count).map { PipelinedStatement($0) })
            do {
                _ = try await pool.withConnection { connection in
                    try connection.pipelinedTransaction { try $0.commit(with: statements) }
                }
                for waiter in group { waiter.resume() }
            } catch {
                for waiter in group { waiter.resume(throwing: error) }
            }
        }
    }
}
