import AsyncHTTPClient
import Foundation
import LedgerBackground
import LedgerCore
import LedgerProofs
import Logging
import NIOCore
import NIOHTTP1

/// Publishes a signed digest of the log on a schedule to where the database's writers cannot
/// reach: a directory (a file per digest, `digest-<tree size>-<unix seconds>.json`, and
/// `latest.json`) and an HTTPS receiver, which gets it as a webhook delivery gets a change —
/// POSTed as JSON, signed with `Ledger-Signature` under the receiver's secret, sent only to an
/// address `WebhookTargets` allows, redirects never followed. A round that fails is tried again
/// by the loop's backoff, with a digest signed anew.
package struct DigestPublisher: Sendable {
    package struct Sinks: Sendable {
        package var directory: String?
        package var url: String?
        package var secret: String?

        package init(directory: String? = nil, url: String? = nil, secret: String? = nil) {
            self.directory = directory
            self.url = url
            self.secret = secret
        }

        package var isEmpty: Bool { directory == nil && url == nil }
    }

    package let desk: ProofDesk
    package let sinks: Sinks
    let targets: WebhookTargets
    let logger: Logger

    package init(desk: ProofDesk, sinks: Sinks, targets: WebhookTargets, logger: Logger) {
        self.desk = desk
        self.sinks = sinks
        self.targets = targets
        self.logger = logger
    }

    package func loop(every interval: Duration, heartbeat: Heartbeat) -> BackgroundLoop {
        let publisher = self
        return .periodic(every: interval, reportingTo: heartbeat, logger: logger) { try await publisher.publish() }
    }

    /// Signs the tree as it stands and hands the digest to every sink.
    @discardableResult
    package func publish(now: Date = Date()) async throws -> Digest {
        let digest = try await desk.digest(at: now)
        let body = Array((digest.json + "\n").utf8)
        if let directory = sinks.directory { try write(body, digest: digest, into: directory, at: now) }
        if let url = sinks.url {
            // As a webhook delivery is shaped: an id (also in `Ledger-Webhook-Id`), a type, and the digest.
            let id = "digest-\(digest.treeSize)-\(Int64(now.timeIntervalSince1970))"
            try await post(Array(#"{"digest":\#(digest.json),"id":"\#(id)","type":"ledger.digest"}"#.utf8), id: id, to: url)
        }
        logger.info("digest published", metadata: ["tree_size": "\(digest.treeSize)", "root_hash": "\(digest.rootHash)"])
        return digest
    }

    private func write(_ body: [UInt8], digest: Digest, into directory: String, at now: Date) throws {
        let folder = URL(fileURLWithPath: directory, isDirectory: true)
        let name = "digest-\(digest.treeSize)-\(Int64(now.timeIntervalSince1970)).json"
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(body).write(to: folder.appendingPathComponent(name), options: .atomic)
            try Data(body).write(to: folder.appendingPathComponent("latest.json"), options: .atomic)
        } catch {
            throw LedgerError(
                .internalError, "cannot write the digest into \(directory) (LEDGER_DIGEST_DIRECTORY): \(error.localizedDescription)",
                kind: .unavailable)
        }
    }

    private func post(_ body: [UInt8], id: String, to url: String) async throws {
        guard case .allowed(let host, let addresses) = await targets.check(url: url) else {
            throw LedgerError(.invalidWebhook, "LEDGER_DIGEST_URL is not an address digests may be sent to", kind: .unavailable)
        }
        guard let secret = sinks.secret else {
            throw LedgerError(.invalidWebhook, "LEDGER_DIGEST_URL needs LEDGER_DIGEST_SECRET: digests are sent signed", kind: .unavailable)
        }
        // A client of its own, pinned as the dispatcher's are (the address checked, no redirects),
        // and shut down after: one POST an hour does not warrant the dispatcher's pool of them.
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.dnsOverride = [host: addresses[0].description]
        configuration.tracing.tracer = nil
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        defer { Task { try? await client.shutdown() } }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "entitlement-ledger-digests")
        request.headers.add(name: WebhookSignature.idHeader, value: id)
        request.headers.add(
            name: WebhookSignature.header, value: WebhookSignature.sign(body, secret: secret, at: Int64(Date().timeIntervalSince1970)))
        request.body = .bytes(ByteBuffer(bytes: body))
        let status: UInt
        do {
            let response = try await client.execute(request, timeout: .seconds(10))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            status = response.status.code
        } catch {
            throw LedgerError(
                .internalError, "the digest receiver could not be reached: \(WebhookDispatcher.describe(error))", kind: .unavailable)
        }
        guard (200..<300).contains(status) else {
            throw LedgerError(.internalError, "the digest receiver answered HTTP \(status)", kind: .unavailable)
        }
    }
}
