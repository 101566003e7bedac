import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The PostgreSQL an operator is really handed, one shape per test, each on a cluster of its own
/// (roles belong to a whole cluster): the roles are made here as a DBA or a cloud provider makes
/// them, then every `ledger` command runs as the login that shape gives.
@Suite(.takingTurns) struct DeploymentShapeTests {
    /// A fresh cluster with a database `ledger` owned by login `ledger`, made with `loginOptions`
    /// after `dbaSQL` ran as the superuser.
    struct Shape {
        let cluster: EmbeddedPostgres

        init(loginOptions: String, dbaSQL: String = "") async throws {
            cluster = try await TestCluster.privateCluster(roles: false)
            try asSuperuser("CREATE ROLE ledger LOGIN CREATEDB \(loginOptions)")
            try asSuperuser("CREATE DATABASE ledger OWNER ledger") // alone: never inside a transaction
            if !dbaSQL.isEmpty { try asSuperuser(dbaSQL) }
        }

        func asSuperuser(_ sql: String) throws {
            try PostgresConnection.connect(cluster.configuration(database: "postgres")).execute(script: sql)
        }

        func url(_ login: String = "ledger") -> String {
            PostgresConfiguration.unixSocket(
                directory: cluster.socketDirectory.path, port: cluster.options.port, database: "ledger", user: login
            )
            .connectionString
        }

        func ledger(
            _ arguments: [String], login: String = "ledger", extra: [String: String] = [:], binary: String = LedgerCommandTests.ledgerBinary
        ) async throws -> ChildProcess.Outcome {
            var environment = ProcessInfo.processInfo.environment
            environment["LEDGER_DATABASE_URL"] = url(login)
            environment["LEDGER_SECRETS_KEY"] = LedgerCommandTests.secretsKey
            environment.removeValue(forKey: "LEDGER_DATABASE_ROLE")
            environment.merge(extra) { $1 }
            return try await ChildProcess.run(binary, arguments, environment: environment)
        }

        /// The environment `ledger serve` is started with as `login`.
        func environment(login: String, extra: [String: String] = [:]) -> [String: String] {
            var environment = ProcessInfo.processInfo.environment
            environment["LEDGER_DATABASE_URL"] = url(login)
            environment["LEDGER_SECRETS_KEY"] = LedgerCommandTests.secretsKey
            environment.removeValue(forKey: "LEDGER_DATABASE_ROLE")
            return environment.merging(extra) { $1 }
        }

        /// `ledger serve` as `login` until `body` returns; `body` gets the base URL.
        func serving(login: String = "ledger", extra: [String: String] = [:], _ body: (String) async throws -> Void) async throws {
            let log = NSTemporaryDirectory() + "ledger-shape-\(UUID().uuidString.prefix(8)).log"
            var environment = ProcessInfo.processInfo.environment
            environment["LEDGER_DATABASE_URL"] = url(login)
            environment["LEDGER_SECRETS_KEY"] = LedgerCommandTests.secretsKey
            environment.merge(extra) { $1 }
            let served = try await ServeProcess.start(environment: environment, log: log)
            defer { served.stop() }
            let port = served.port
            let ready = try await poll("http://127.0.0.1:\(port)/readyz", until: 200)
            try #require(
                ready?.0 == 200,
                "not ready: \(String(describing: ready)); log: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            try await body("http://127.0.0.1:\(port)")
        }
    }

    /// Everything a deployment does with the CLI and the server, as `owner` (and the server as `runtime`).
    func exerciseEveryCommand(_ shape: Shape, owner: String = "ledger", runtime: String? = nil, extra: [String: String] = [:]) async throws
    {
        let migrate = try await shape.ledger(["migrate"], login: owner, extra: extra)
        #expect(migrate.status == 0, "migrate: \(migrate.output)")
        let created = try await shape.ledger(["keys", "create", "--name", "ops", "--scopes", "admin"], login: owner, extra: extra)
        #expect(created.status == 0, "keys create: \(created.output)")
        let secret = try #require(created.output.split(separator: "\n").last.map(String.init))
        try await shape.serving(login: runtime ?? owner, extra: extra) { base in
            let app = try await send(
                "PUT", base + "/v1/apps/com.example.shape", key: secret,
                json: #"{"environments": ["Sandbox"], "shared_secret": "s"}"#)
            #expect(app.0 == 200, "configure app: \(app.1)")
            let product = try await send(
                "PUT", base + "/v1/apps/com.example.shape/products/coins", key: secret,
                json: #"{"type": "consumable", "grants": {"coins": 10}}"#)
            #expect(product.0 == 200, "configure product: \(product.1)")
            let user = try await send("GET", base + "/v1/apps/com.example.shape/users/u1", key: secret)
            #expect(user.0 == 200, "user state: \(user.1)")
            // Erasure rewrites the log through the owner's function, whichever role the server runs as.
            for name in ["u1", "u2"] {
                let grant = try await send(
                    "POST", base + "/v1/apps/com.example.shape/users/\(name)/grants", key: secret,
                    json: #"{"entitlement": "vip", "duration": "P7D", "reason": "welcome"}"#)
                #expect(grant.0 == 201, "grant: \(grant.1)")
            }
            let erased = try await send("DELETE", base + "/v1/apps/com.example.shape/users/u2", key: secret)
            #expect(erased.0 == 200 && erased.1.contains(#""pseudonym":"erased:"#), "erase over HTTP: \(erased.1)")
        }
        let erase = try await shape.ledger(["erase", "--app", "com.example.shape", "--user", "u1"], login: owner, extra: extra)
        #expect(erase.status == 0 && erase.output.contains("erased:"), "ledger erase: \(erase.output)")
        for command in [
            ["keys", "list"], ["rebuild"], ["verify"], ["export", "transactions", "--app", "com.example.shape", "--from", "2026-01-01"],
        ] {
            let outcome = try await shape.ledger(command, login: owner, extra: extra)
            #expect(outcome.status == 0, "\(command.joined(separator: " ")): \(outcome.output)")
        }
    }

    @Test func anOwnerWithCreateRoleMakesTheApplicationRoleAndJoinsIt() async throws {
        let shape = try await Shape(loginOptions: "CREATEROLE")
        try await exerciseEveryCommand(shape)
        let membership = try PostgresConnection.connect(shape.cluster.configuration(database: "postgres"))
            .query("SELECT pg_has_role('ledger', 'ledger_app', 'MEMBER') AS member")
        #expect(try membership[0]["member"].bool())
    }

    @Test func anOwnerWithoutCreateRoleUsesTheRoleADBAPrepared() async throws {
        let shape = try await Shape(loginOptions: "NOCREATEROLE", dbaSQL: "CREATE ROLE ledger_app NOLOGIN; GRANT ledger_app TO ledger;")
        try await exerciseEveryCommand(shape)
    }

    @Test func anOwnerWithoutCreateRoleAndNoRoleIsToldTheSQLByEveryCommand() async throws {
        let shape = try await Shape(loginOptions: "NOCREATEROLE")
        for command in [
            ["migrate"], ["serve", "--port", "0"], ["keys", "list"], ["rebuild"], ["verify"],
            ["export", "transactions", "--app", "com.example.shape"],
        ] {
            let started = Date()
            let outcome = try await shape.ledger(command)
            #expect(outcome.status != 0, "\(command[0]) must fail")
            #expect(outcome.output.contains("application role ledger_app does not exist"), "\(command[0]): \(outcome.output)")
            #expect(outcome.output.contains("CREATE ROLE ledger_app NOLOGIN;"), "\(command[0]): \(outcome.output)")
            #expect(outcome.output.contains(#"GRANT ledger_app TO "ledger";"#), "\(command[0]): \(outcome.output)")
            #expect(outcome.output.contains("--database-role"), "\(command[0]): \(outcome.output)")
            #expect(Date().timeIntervalSince(started) < 30, "fails fast")
        }
        // What the message says works.
        try shape.asSuperuser(#"CREATE ROLE ledger_app NOLOGIN; GRANT ledger_app TO "ledger";"#)
        #expect(try await shape.ledger(["migrate"]).status == 0)
    }

    @Test func aRoleThatExistsWithoutMembershipIsToldTheGrant() async throws {
        let shape = try await Shape(loginOptions: "NOCREATEROLE", dbaSQL: "CREATE ROLE ledger_app NOLOGIN;")
        let outcome = try await shape.ledger(["migrate"])
        #expect(outcome.status != 0)
        #expect(outcome.output.contains("login ledger is not a member of the application role ledger_app"), "\(outcome.output)")
        #expect(outcome.output.contains(#"GRANT ledger_app TO "ledger";"#), "\(outcome.output)")
    }

    @Test func anotherRoleGivenWithDatabaseRoleReceivesTheGrants() async throws {
        let shape = try await Shape(loginOptions: "NOCREATEROLE", dbaSQL: "CREATE ROLE shop_ledger NOLOGIN; GRANT shop_ledger TO ledger;")
        try await exerciseEveryCommand(shape, extra: ["LEDGER_DATABASE_ROLE": "shop_ledger"])
        let grants = try PostgresConnection.connect(shape.cluster.configuration(database: "ledger")).query(
            """
            SELECT has_table_privilege('shop_ledger', 'ledger.events', 'INSERT') AS inserts,
                   has_table_privilege('shop_ledger', 'ledger.events', 'UPDATE') AS updates,
                   EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ledger_app') AS default_role
            """)[0]
        #expect(try grants["inserts"].bool() && !grants["updates"].bool())
        #expect(try !grants["default_role"].bool(), "no ledger_app was made for this deployment")
    }

    @Test func aRuntimeLoginWithNoDDLRightsServesAndIsSentToTheOwnerForMigrations() async throws {
        let shape = try await Shape(
            loginOptions: "NOCREATEROLE",
            dbaSQL: """
                CREATE ROLE ledger_app NOLOGIN; GRANT ledger_app TO ledger;
                CREATE ROLE ledger_runtime LOGIN; GRANT ledger_app TO ledger_runtime;
                """)
        // Before the owner migrated: the runtime login cannot, and says who must.
        let early = try await shape.ledger(["serve", "--port", "0"], login: "ledger_runtime")
        #expect(early.status != 0)
        #expect(early.output.contains("run `ledger migrate` once with the owner's LEDGER_DATABASE_URL"), "\(early.output)")
        #expect(early.output.contains("0001_event_store"), "\(early.output)")
        try await exerciseEveryCommand(shape, runtime: "ledger_runtime")
        let rights = try PostgresConnection.connect(shape.cluster.configuration(database: "ledger")).query(
            """
            SELECT has_database_privilege('ledger_runtime', 'ledger', 'CREATE') AS creates,
                   has_table_privilege('ledger_runtime', 'ledger.events', 'UPDATE') AS updates
            """)[0]
        #expect(try !rights["creates"].bool() && !rights["updates"].bool(), "the runtime login really has no DDL or rewrite rights")
    }

    @Test func aPostgresFailureNamesWhatTheLedgerWasDoingAndTheServersWords() async throws {
        // A login that may not even create the schema in a database it does not own.
        let shape = try await Shape(
            loginOptions: "NOCREATEROLE",
            dbaSQL: """
                CREATE ROLE ledger_app NOLOGIN; CREATE ROLE visitor LOGIN; GRANT ledger_app TO visitor;
                """)
        let outcome = try await shape.ledger(["migrate"], login: "visitor")
        #expect(outcome.status != 0)
        #expect(
            outcome.output.contains("creating the ledger schema: permission denied for database ledger (SQLSTATE 42501)"),
            "\(outcome.output)")
        #expect(outcome.output.contains("connecting to postgresql"), "\(outcome.output)")
    }
}

/// One HTTP exchange with a JSON body, for the shape tests.
func send(_ method: String, _ url: String, key: String, json: String? = nil) async throws -> (Int, String) {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
    if let json {
        request.httpBody = Data(json.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
}
