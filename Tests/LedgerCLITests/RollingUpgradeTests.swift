import AppStoreSimulator
import EmbeddedPostgres
import Foundation
import LedgerTestSupport
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A rolling upgrade as an operator does one, a node at a time: servers of the previous release
/// (its binary built from its commit by `Tools/release previous`) serve a steady load of purchases,
/// spends and reads while this tree's `ledger migrate` runs; then one of them restarts on the
/// migrated schema and a server of this tree joins them. Migrations only ever expand the schema
/// while a release before them may still be serving, so none of the old servers' requests may fail.
@Suite(.takingTurns, .enabled(if: previousRelease != nil, "needs LEDGER_PREVIOUS_RELEASE, the previous release's ledger (Tools/dev test)"))
struct RollingUpgradeTests {
    static let bundle = "com.example.upgrade"

    @Test func thePreviousReleaseServesThroughTheMigrationAndBesideThisOneWithNothingLost() async throws {
        try await HeavyTests.oneAtATime {
            let previous = try #require(previousRelease)
            let shape = try await DeploymentShapeTests.Shape(
                loginOptions: "NOCREATEROLE",
                dbaSQL: """
                    CREATE ROLE ledger_app NOLOGIN; GRANT ledger_app TO ledger;
                    CREATE ROLE ledger_runtime LOGIN; GRANT ledger_app TO ledger_runtime;
                    """)
            let folder = NSTemporaryDirectory() + "ledger-upgrade-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let authority = try TestCertificateAuthority()
            try authority.writeRoot(to: folder + "/root.der")
            let settings = [
                "LEDGER_APPLE_ROOT_CERTIFICATES": folder + "/root.der", "LEDGER_APPLE_RECONCILE_INTERVAL": "off",
                "LEDGER_LOG_LEVEL": "error",
            ]
            let (old, new) = try await (shape.ledger(["--version"], binary: previous).output, shape.ledger(["--version"]).output)
            #expect(old != new, "two different releases: \(old), \(new)")

            // The previous release installed and serving, as the runtime login.
            let installed = try await shape.ledger(["migrate"], extra: settings, binary: previous)
            try #require(installed.status == 0, "the previous release's migrate: \(installed.output)")
            let created = try await shape.ledger(["keys", "create", "--name", "ops", "--scopes", "admin"], binary: previous)
            let key = try #require(created.output.split(separator: "\n").last { $0.hasPrefix("lk_") }.map(String.init), "\(created.output)")
            func serve(_ binary: String, _ tag: String) async throws -> ServeProcess {
                try await ServeProcess.start(
                    environment: shape.environment(login: "ledger_runtime", extra: settings), log: folder + "/\(tag).log", binary: binary)
            }
            let first = try await serve(previous, "previous-1")
            var servers = [first]
            defer { for server in servers { server.stop() } }
            let apps = first.base + "/v1/apps/\(Self.bundle)"
            #expect(try await send("PUT", apps, key: key, json: #"{"environments": ["Sandbox"]}"#).0 == 200)
            #expect(
                try await send("PUT", apps + "/products/coins.100", key: key, json: #"{"type": "consumable", "grants": {"coins": 100}}"#).0
                    == 200)

            let load = SteadyLoad(app: SimulatedApp(authority: authority, bundleID: Self.bundle), key: key, targets: [first.base])
            let running = Task { try await load.run(players: 6) }
            #expect(try await load.acknowledged(atLeast: 40), "the previous release took the load")

            // This release will not serve the older schema: it names the command instead.
            do {
                try await serve(LedgerCommandTests.ledgerBinary, "next-early").stop()
                Issue.record("this release served a schema it has not migrated")
            } catch let refused as ServeProcess.NotAnswering {
                #expect(refused.description.contains("ledger migrate") && refused.description.contains("0031"), "\(refused)")
            }

            // This release's migrations, with the previous one serving.
            let before = load.purchases
            let migrated = try await shape.ledger(["migrate"], extra: settings)
            #expect(migrated.status == 0, "this release's migrate under load: \(migrated.output)")
            #expect(load.purchases > before, "purchases were acknowledged while it migrated")
            #expect(try await load.acknowledged(atLeast: before + 40), "the previous release went on after the migration")

            // A node of the previous release restarted on the migrated schema, and one of this release.
            servers.append(try await serve(previous, "previous-2"))
            servers.append(try await serve(LedgerCommandTests.ledgerBinary, "next"))
            load.retarget(servers.map(\.base))
            let mixed = load.purchases
            #expect(try await load.acknowledged(atLeast: mixed + 90), "three servers of two releases took the load")
            load.stop()
            try await running.value

            #expect(load.failures.isEmpty, "every request answered: \(load.failures.prefix(5))")
            #expect(load.served.count == 3, "each server took part: \(load.served)")
            // Nothing lost: every player's balance, asked of each server, is what was acknowledged.
            for server in servers {
                for (player, expected) in load.expectedBalances {
                    let (status, text) = try await send("GET", server.base + "/v1/apps/\(Self.bundle)/users/\(player)", key: key)
                    let state = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                    let coins = (state?["balances"] as? [String: Any])?["coins"] as? Int
                    #expect(status == 200 && coins == expected, "\(player) on \(server.base): \(text), expected \(expected)")
                }
            }
            let verified = try await shape.ledger(["verify"], extra: settings)
            #expect(verified.status == 0, "ledger verify after the upgrade: \(verified.output)")
            for server in servers where server.output.contains("\"level\":\"error\"") || server.output.contains(" error ") {
                Issue.record("a server logged an error: \(server.output.suffix(2_000))")
            }
        }
    }
}

/// The previous release's `ledger`, as `Tools/dev test` names it after building it.
private var previousRelease: String? {
    ProcessInfo.processInfo.environment["LEDGER_PREVIOUS_RELEASE"].flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil }
}

/// Players buying coin packs, spending some and reading their state, each request sent to the
/// next of the servers in turn; what was acknowledged is kept to check against afterwards.
final class SteadyLoad: Sendable {
    struct State {
        var targets: [String]
        var purchases = 0
        var balances: [String: Int] = [:]
        var failures: [String] = []
        var served: Set<String> = []
        var stopped = false
    }

    let app: SimulatedApp
    let key: String
    private let state: Mutex<State>

    init(app: SimulatedApp, key: String, targets: [String]) {
        self.app = app
        self.key = key
        state = Mutex(State(targets: targets))
    }

    var purchases: Int { state.withLock { $0.purchases } }
    var failures: [String] { state.withLock { $0.failures } }
    var served: Set<String> { state.withLock { $0.served } }
    var expectedBalances: [String: Int] { state.withLock { $0.balances } }
    func retarget(_ targets: [String]) { state.withLock { $0.targets = targets } }
    func stop() { state.withLock { $0.stopped = true } }

    /// Whether `count` purchases have been acknowledged, waited for (a bound for a hang).
    func acknowledged(atLeast count: Int) async throws -> Bool {
        try await eventually(within: 300) { purchases >= count || !failures.isEmpty }
    }

    func run(players: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for player in 0..<players { group.addTask { try await self.play("player-\(player)") } }
            try await group.waitForAll()
        }
    }

    private func play(_ player: String) async throws {
        var round = 0
        while !state.withLock({ $0.stopped }) {
            round += 1
            let purchase = SimulatedTransaction(
                transactionID: "\(player)-\(round)", productID: "coins.100", type: "Consumable",
                purchaseDate: Date(timeIntervalSinceNow: -5))
            let body = try JSONSerialization.data(withJSONObject: [
                "user_id": player, "signed_transaction": app.signedTransaction(purchase),
            ])
            if try await exchange("POST", "/transactions", body, round: round) {
                state.withLock {
                    $0.purchases += 1; $0.balances[player, default: 0] += 100
                }
            }
            if round.isMultiple(of: 2) {
                let spend = try JSONSerialization.data(withJSONObject: [
                    "currency": "coins", "amount": 30, "idempotency_key": "\(player)-spend-\(round)",
                ])
                if try await exchange("POST", "/users/\(player)/consumptions", spend, round: round) {
                    state.withLock { $0.balances[player, default: 0] -= 30 }
                }
            }
            if round.isMultiple(of: 3) { _ = try await exchange("GET", "/users/\(player)", nil, round: round) }
        }
    }

    /// One request to the server whose turn it is; false (and a failure kept) for anything but 200.
    private func exchange(_ method: String, _ path: String, _ body: Data?, round: Int) async throws -> Bool {
        let target = state.withLock { $0.targets[round % $0.targets.count] }
        var request = URLRequest(url: URL(string: target + "/v1/apps/\(RollingUpgradeTests.bundle)" + path)!)
        request.httpMethod = method
        request.httpBody = body
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        do {
            let (data, response) = try await URLSession.shared.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            state.withLock { _ = $0.served.insert(target) }
            guard status == 200 else {
                state.withLock { $0.failures.append("\(method) \(path) on \(target): \(status) \(String(decoding: data, as: UTF8.self))") }
                return false
            }
            return true
        } catch {
            state.withLock { $0.failures.append("\(method) \(path) on \(target): \(error)") }
            return false
        }
    }
}
