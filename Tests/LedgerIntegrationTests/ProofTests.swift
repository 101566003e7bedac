import AppStoreSimulator
import EmbeddedPostgres
import Foundation
import LedgerAccess
import LedgerCore
import LedgerEventStore
import LedgerPostgres
import LedgerProofs
import LedgerServer
import LedgerTestSupport
import LedgerWebhooks
import Testing
import WebhookReceiver

/// The Merkle tree over the log, checked the way an auditor would: every proof the ledger answers
/// is verified by `ProofVerifier`, written from RFC 9162 apart from the tree's code; a digest's
/// JWS by the JWK Set the server publishes. Then a superuser rewrites an event and its stream's
/// chain (so `ledger verify` passes) and the audit against the digest published before names it;
/// and an erasure leaves every earlier digest verifiable.
@Suite(.takingTurns) struct ProofTests {
    static let bundle = TestServer.bundleID

    @Test func theTreeAndItsProofsAgreeWithAnIndependentVerifier() throws {
        var generator = SystemRandomNumberGenerator()
        var leaves: [[UInt8]] = []
        var nodes: [MerkleTree.Node: [UInt8]] = [:]
        var appender = try MerkleAppender(size: 0, edge: [:])
        let lookup: MerkleTree.Lookup = { node in
            guard let hash = nodes[node] else { throw MerkleError.missingNode(node) }
            return hash
        }
        for n in 1...40 {
            let leaf = ProofVerifier.leafHash(
                position: Int64(n * 3), commitment: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
            leaves.append(leaf)
            for (node, hash) in appender.append(leafHash: leaf) { nodes[node] = hash }
            let size = Int64(n)
            #expect(appender.root == ProofVerifier.root(leaves))
            #expect(try MerkleTree.root(size: size, lookup) == ProofVerifier.root(leaves))
            for m in 0..<size {
                let path = try MerkleTree.inclusionPath(leaf: m, size: size, lookup)
                #expect(
                    ProofVerifier.verifyInclusion(leafIndex: m, treeSize: size, leafHash: leaves[Int(m)], path: path, root: appender.root),
                    "leaf \(m) of \(size)")
                // A path does not prove another leaf.
                #expect(
                    !ProofVerifier.verifyInclusion(
                        leafIndex: m, treeSize: size, leafHash: ProofVerifier.sha256([1]), path: path, root: appender.root))
            }
            for m in 1...size {
                let proof = try MerkleTree.consistencyProof(from: m, to: size, lookup)
                let old = ProofVerifier.root(Array(leaves[..<Int(m)]))
                #expect(
                    ProofVerifier.verifyConsistency(first: m, second: size, firstRoot: old, secondRoot: appender.root, proof: proof),
                    "\(m) → \(size)")
                if m < size {
                    #expect(
                        !ProofVerifier.verifyConsistency(
                            first: m, second: size, firstRoot: ProofVerifier.sha256([2]), secondRoot: appender.root, proof: proof))
                }
            }
        }
    }

    @Test func aRewriteThatPassesVerifyIsCaughtByTheAuditAgainstTheDigestBeforeIt() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let read = try await server.key([.read])
        let positions = try await Self.buy(on: server, user: "mallory-victim")
        try await Self.waitForTree(server)

        // The digest, checked as an auditor checks it: the JWS against the published key set.
        let digestAnswer = try await server.send("GET", "/v1/ledger/digest", key: read)
        #expect(digestAnswer.status == 200, "\(digestAnswer.text)")
        let keySet = try await server.send("GET", "/v1/ledger/digest-keys", key: read).json
        let payload = try #require(ProofVerifier.verifyJWS(digestAnswer.json["jws"] as! String, keySet: keySet))
        let size = Int64(digestAnswer.json["tree_size"] as! Int)
        let root = ProofVerifier.bytes(digestAnswer.json["root_hash"] as! String)
        #expect(payload["tree_size"] as? Int == Int(size) && payload["root_hash"] as? String == digestAnswer.json["root_hash"] as? String)
        #expect(payload["signed_at"] as? String == digestAnswer.json["signed_at"] as? String)

        // Every event of the user proven in it.
        for position in positions {
            let proof = try await server.send("GET", "/v1/ledger/proofs/inclusion?position=\(position)&tree_size=\(size)", key: read)
            #expect(proof.status == 200, "\(proof.text)")
            #expect(
                proof.json["position"] as? Int == Int(position)
                    && proof.json["root_hash"] as? String == digestAnswer.json["root_hash"] as? String)
            #expect(
                ProofVerifier.verifyInclusion(
                    leafIndex: Int64(proof.json["leaf_index"] as! Int), treeSize: size,
                    leafHash: ProofVerifier.bytes(proof.json["leaf_hash"] as! String),
                    path: (proof.json["audit_path"] as! [String]).map(ProofVerifier.bytes), root: root), "position \(position)")
        }

        // Each finance row names the fact it comes from: one of those proven above.
        let books = try await server.send(
            "GET", "/v1/apps/\(Self.bundle)/exports/transactions?environment=Sandbox&format=csv", key: server.adminKey)
        let lines = books.text.split(separator: "\r\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let column = try #require(lines.first?.firstIndex(of: "position"), "\(books.text)")
        let rows = lines.dropFirst().filter { $0.contains("mallory-victim") }
        #expect(rows.count == 2 && rows.allSatisfy { Int64($0[column]).map(positions.contains) == true }, "\(books.text)")

        // Bad requests: named, never a 500.
        for (path, status, code) in [
            ("/v1/ledger/proofs/inclusion?position=999999999", 404, "not_in_tree"),
            ("/v1/ledger/proofs/inclusion?position=\(positions[0])&tree_size=\(size + 1_000_000)", 400, "invalid_proof_request"),
            ("/v1/ledger/proofs/inclusion?position=-1", 400, "invalid_proof_request"),
            ("/v1/ledger/proofs/inclusion", 400, "invalid_proof_request"),
            ("/v1/ledger/proofs/consistency?from=\(size)&to=1", 400, "invalid_proof_request"),
            ("/v1/ledger/proofs/consistency?from=0", 400, "invalid_proof_request"),
            ("/v1/ledger/proofs/consistency?from=x", 400, "invalid_proof_request"),
        ] {
            let answer = try await server.send("GET", path, key: read)
            #expect(answer.status == status && answer.errorCode == code, "\(path): \(answer.status) \(answer.text)")
        }
        #expect(try await server.send("GET", "/v1/ledger/digest").status == 401)

        // A superuser rewrites the purchase and re-chains its stream: `ledger verify` sees nothing.
        // The cluster's superuser, on the server's database.
        let database = PostgresConfiguration.parse(server.configuration.connectionString)["dbname"] ?? ""
        let superuser = try await TestServer.cluster.value.configuration(database: database)
        let owner = PostgresPool(configuration: superuser, size: 1, logger: TestCluster.quietLogger)
        let target = positions[0]
        let stream = try await owner.query("SELECT stream FROM ledger.events WHERE position = $1", [target])[0]["stream"].string()
        _ = try await owner.query("SET session_replication_role = replica")
        _ = try await owner.query("UPDATE ledger.events SET data = data || '{\"forged\": true}' WHERE position = $1", [target])
        _ = try await owner.query(HostileEdits.rechainSQL(stream))
        _ = try await owner.query("SET session_replication_role = DEFAULT")
        #expect(try await ChainVerifier(pool: owner).verify().isIntact)

        let digest = Digest(
            treeSize: size, rootHash: digestAnswer.json["root_hash"] as! String, signedAt: digestAnswer.json["signed_at"] as! String,
            jws: digestAnswer.json["jws"] as! String)
        let report = try await ProofAudit(pool: owner).audit(digest, keys: [TestServer.digestKey.publicKey])
        #expect(!report.passed)
        #expect(report.firstBroken?.contains("position \(target) (stream \(stream)") == true, "\(report.firstBroken ?? "nothing found")")
        #expect(report.leavesChecked >= size)

        // A digest signed by another key is refused, naming the key.
        let stranger = try DigestKey(pem: DigestKey.generate())
        await #expect(throws: LedgerError.self) { try await ProofAudit(pool: owner).audit(digest, keys: [stranger.publicKey]) }
        await owner.close()
    }

    @Test func anErasureKeepsTheDigestsSignedBeforeIt() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let read = try await server.key([.read])
        let user = "erase-me-\(UUID().uuidString.prefix(8))"
        let positions = try await Self.buy(on: server, user: user)
        try await Self.waitForTree(server)
        let before = try await server.send("GET", "/v1/ledger/digest", key: read).json
        let erased = try await server.send("DELETE", "/v1/apps/\(Self.bundle)/users/\(user)", key: server.adminKey)
        #expect(erased.status == 200, "\(erased.text)")
        try await Self.waitForTree(server)
        let after = try await server.send("GET", "/v1/ledger/digest", key: read).json
        let (from, to) = (before["tree_size"] as! Int, after["tree_size"] as! Int)
        #expect(to > from)

        let consistency = try await server.send("GET", "/v1/ledger/proofs/consistency?from=\(from)&to=\(to)", key: read)
        #expect(consistency.status == 200, "\(consistency.text)")
        #expect(
            ProofVerifier.verifyConsistency(
                first: Int64(from), second: Int64(to), firstRoot: ProofVerifier.bytes(before["root_hash"] as! String),
                secondRoot: ProofVerifier.bytes(after["root_hash"] as! String),
                proof: (consistency.json["proof"] as! [String]).map(ProofVerifier.bytes)))
        // The erased events are still proven in the old digest; their leaves keep no salt.
        for position in positions {
            let proof = try await server.send("GET", "/v1/ledger/proofs/inclusion?position=\(position)&tree_size=\(from)", key: read)
            #expect(
                ProofVerifier.verifyInclusion(
                    leafIndex: Int64(proof.json["leaf_index"] as! Int), treeSize: Int64(from),
                    leafHash: ProofVerifier.bytes(proof.json["leaf_hash"] as! String),
                    path: (proof.json["audit_path"] as! [String]).map(ProofVerifier.bytes),
                    root: ProofVerifier.bytes(before["root_hash"] as! String)))
        }
        let salted = try await server.pool.query(
            "SELECT count(*) AS n FROM ledger.proof_leaves WHERE position = ANY($1::text[]::bigint[]) AND salt IS NOT NULL",
            [PostgresTextArray(positions.map(String.init))])[0]["n"].int()
        #expect(salted < positions.count, "the user's own events were rewritten: their salts must be gone")
        let ownStream = try await server.pool.query(
            """
            SELECT count(*) AS n FROM ledger.proof_leaves l JOIN ledger.events e ON e.position = l.position
             WHERE e.stream LIKE 'user:\(Self.bundle):erased:%' AND e.event_type <> 'UserErased' AND l.salt IS NOT NULL
            """)[0]["n"].int()
        #expect(ownStream == 0)

        let digest = Digest(
            treeSize: Int64(from), rootHash: before["root_hash"] as! String, signedAt: before["signed_at"] as! String,
            jws: before["jws"] as! String)
        let owner = PostgresPool(configuration: server.configuration, size: 1, logger: TestCluster.quietLogger)
        let report = try await ProofAudit(pool: owner).audit(digest, keys: [TestServer.digestKey.publicKey])
        await owner.close()
        #expect(report.passed, "\(report.firstBroken ?? "")")
        #expect(report.leavesErased > 0)
    }

    /// A subscription and a coin pack bought by `user`, 30 coins spent: the positions of the
    /// user's stream's and purchases' events.
    static func buy(on server: TestServer, user: String) async throws -> [Int64] {
        let key = try await server.key([.ingest, .read])
        let subscription = SimulatedTransaction(
            transactionID: "p-\(user)-1", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -3_600),
            expiresDate: Date(timeIntervalSinceNow: 86_400))
        let coins = SimulatedTransaction(
            transactionID: "p-\(user)-2", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -600))
        for transaction in [subscription, coins] {
            let bought = try await server.send(
                "POST", "/v1/apps/\(bundle)/transactions", key: key,
                json: ["user_id": user, "signed_transaction": try server.app.signedTransaction(transaction)])
            #expect(bought.status == 200, "\(bought.text)")
        }
        let spent = try await server.send(
            "POST", "/v1/apps/\(bundle)/users/\(user)/consumptions", key: key,
            json: ["currency": "coins", "amount": 30, "idempotency_key": "spend-1"])
        #expect(spent.status == 200, "\(spent.text)")
        return try await server.pool.query(
            """
            SELECT position FROM ledger.events
             WHERE stream = ANY(ARRAY['user:\(bundle):\(user)', 'purchase:\(bundle):p-\(user)-1', 'purchase:\(bundle):p-\(user)-2'])
             ORDER BY position
            """
        ).map { try $0["position"].int64() }
    }

    /// Until the tree holds a leaf for every event of the log.
    static func waitForTree(_ server: TestServer) async throws {
        for _ in 0..<600 {
            let row = try await server.pool.query(
                "SELECT (SELECT size FROM ledger.proof_tree) AS size, (SELECT count(*) FROM ledger.events) AS events")[0]
            if try row["size"].int64() == (try row["events"].int64()) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the proof tree did not catch up with the log in 60 s")
    }
}

/// The published copies: a folder and a receiver signed like a webhook delivery.
@Suite(.takingTurns) struct DigestPublicationTests {
    @Test func aDigestIsWrittenToTheFolderAndPostedSignedToTheReceiver() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        _ = try await ProofTests.buy(on: server, user: "published")
        try await ProofTests.waitForTree(server)
        let secret = "whsec_digests_0123456789abcdef"
        let receiver = WebhookReceiver(secret: secret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("digests-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let publisher = DigestPublisher(
            desk: server.services.proofs, sinks: .init(directory: folder.path, url: receiver.url, secret: secret),
            targets: WebhookTargets(allowPrivateNetworks: true), logger: TestCluster.quietLogger)
        let digest = try await publisher.publish()
        #expect(digest.treeSize > 0)

        let saved = try JSONDecoder().decode(Digest.self, from: Data(contentsOf: folder.appendingPathComponent("latest.json")))
        #expect(saved == digest)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(files.count == 2 && files.contains { $0.hasPrefix("digest-\(digest.treeSize)-") && $0.hasSuffix(".json") }, "\(files)")
        let keySet = try await server.send("GET", "/v1/ledger/digest-keys", key: try await server.key([.read])).json
        #expect(ProofVerifier.verifyJWS(saved.jws, keySet: keySet)?["tree_size"] as? Int == Int(digest.treeSize))

        let delivered = try #require(receiver.accepted.first)
        #expect(receiver.accepted.count == 1 && delivered.signatureValid && delivered.type == "ledger.digest", "\(delivered.body)")
        #expect(delivered.body.contains(digest.jws))

        // Never to an address webhooks may not reach, never unsigned.
        let metadata = DigestPublisher(
            desk: server.services.proofs, sinks: .init(url: "http://169.254.169.254/latest", secret: secret),
            targets: WebhookTargets(allowPrivateNetworks: true), logger: TestCluster.quietLogger)
        await #expect(throws: LedgerError.self) { try await metadata.publish() }
        let unsigned = DigestPublisher(
            desk: server.services.proofs, sinks: .init(url: receiver.url), targets: WebhookTargets(allowPrivateNetworks: true),
            logger: TestCluster.quietLogger)
        await #expect(throws: LedgerError.self) { try await unsigned.publish() }
        #expect(receiver.accepted.count == 1)
    }
}
