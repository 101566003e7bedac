import AppStoreServerAPI
import ArgumentParser
import Foundation
import GooglePlay
import LedgerCore
import LedgerEventStore
import LedgerIngestion
import LedgerPostgres
import LedgerProjections
import LedgerProofs
import LedgerSchema
import LedgerSecrets
import Logging

/// `ledger doctor`: an installation checked the way support would check it, one line per check —
/// the settings, the database, the roles and grants the server runs with, the schema, the secrets
/// key, the digest key, and each app's Apple and Google credentials asked of the stores — and for
/// what is wrong, what to do. Changes nothing; exit status 1 when anything is wrong.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check settings, database, roles and grants, schema, keys and each app's store credentials; say what to do.")

    @OptionGroup var database: DatabaseOptions
    @Flag(help: "Do not ask Apple or Google (the credentials are only opened).") var offline = false

    struct Finding {
        var ok: Bool
        var what: String
        var detail: String
        var todo: String?
    }

    func run() async throws {
        var logger = LoggingSetup.logger("ledger.doctor")
        logger.logLevel = .error
        var findings: [Finding] = []
        defer { Self.print(findings) }
        let settings: Configuration
        do {
            settings = try database.settings
            findings.append(Finding(ok: true, what: "settings", detail: "every LEDGER_ variable read"))
        } catch {
            findings.append(
                Finding(ok: false, what: "settings", detail: "\(error)", todo: "fix the variables named (docs/configuration.md)"))
            throw ExitCode(1)
        }
        let opened: Database
        do {
            opened = try database.open(logger: logger)
        } catch {
            findings.append(
                Finding(
                    ok: false, what: "database", detail: "\(error)",
                    todo: "check LEDGER_DATABASE_URL, that PostgreSQL is up, and that this login may connect"))
            throw ExitCode(1)
        }
        defer { opened.close(logger: logger) }
        findings += await Self.databaseChecks(opened, settings: settings, logger: logger)
        if findings.allSatisfy(\.ok) {
            findings += await Self.appChecks(opened, settings: settings, offline: offline, logger: logger)
        }
        if !findings.allSatisfy(\.ok) { throw ExitCode(1) }
    }

    /// Reachable, schema applied, the application role's grants, the secrets and digest keys.
    static func databaseChecks(_ opened: Database, settings: Configuration, logger: Logger) async -> [Finding] {
        var findings: [Finding] = []
        let owner: PostgresConnection
        do {
            owner = try PostgresConnection.connect(opened.owner)
            let version = try owner.query("SHOW server_version")[0]["server_version"].string()
            findings.append(Finding(ok: true, what: "database", detail: "PostgreSQL \(version) at \(opened.owner)"))
        } catch {
            return [Finding(ok: false, what: "database", detail: "\(error)", todo: "check LEDGER_DATABASE_URL and that PostgreSQL is up")]
        }
        do {
            let migrator = try Migrator(migrations: LedgerSchema.migrations(), role: opened.role, logger: logger)
            let pending = try migrator.pending(owner)
            findings.append(
                pending.isEmpty
                    ? Finding(ok: true, what: "schema", detail: "all \(try LedgerSchema.migrations().count) migrations applied")
                    : Finding(
                        ok: false, what: "schema", detail: "\(pending.count) migration(s) not applied, the first \(pending[0].fileStem)",
                        todo: "run `ledger migrate` (docs/deployment.md)"))
        } catch {
            findings.append(Finding(ok: false, what: "schema", detail: "\(error)", todo: "run `ledger migrate` as the database owner"))
        }
        do {
            let privileges = try LogPrivileges.of(PostgresConnection.connect(opened.application))
            let role = privileges.role
            if !privileges.mayAppend {
                findings.append(
                    Finding(
                        ok: false, what: "roles", detail: "\(role) may not append to the log",
                        todo: "run `ledger migrate` as the owner: it grants the application role what it needs"))
            } else if privileges.mayRewrite {
                findings.append(
                    Finding(
                        ok: false, what: "roles", detail: "\(role) may update or delete events",
                        todo: "revoke UPDATE and DELETE on the log from \(role): it is append-only (docs/event-store.md)"))
            } else {
                let login = privileges.loginIsSuperuser ? " (the login is a superuser: a least-privileged login is safer)" : ""
                findings.append(Finding(ok: true, what: "roles", detail: "the server runs as \(role): appends, never rewrites\(login)"))
            }
        } catch {
            findings.append(
                Finding(
                    ok: false, what: "roles", detail: "\(error)",
                    todo: "grant the login the application role: GRANT \(opened.role.name) TO <login> (docs/deployment.md)"))
        }
        do {
            let keyring = try SecretsKeys.keyring(settings, for: opened, logger: logger)
            let (listed, unopened) = try SecretVault(keyring: keyring).check(owner)
            if !unopened.isEmpty {
                findings.append(
                    Finding(
                        ok: false, what: "secrets key",
                        detail: "\(unopened.count) stored secret(s) do not open: \(unopened.joined(separator: ", "))",
                        todo: "finish the rotation with both keys (`ledger secrets rotate`, docs/deployment.md)"))
            } else {
                findings.append(
                    Finding(
                        ok: true, what: "secrets key",
                        detail: listed.map { "opens every stored secret (keys listed: \($0.joined(separator: ", ")))" }
                            ?? "no key listed yet: the first server lists its own"))
            }
        } catch {
            findings.append(
                Finding(ok: false, what: "secrets key", detail: "\(error)", todo: "set LEDGER_SECRETS_KEY to this database's key"))
        }
        if let path = settings.digestKeyFile {
            do {
                let key = try DigestKey(contentsOf: path)
                findings.append(Finding(ok: true, what: "digest key", detail: "\(path) signs as \(key.publicKey.keyID)"))
            } catch {
                findings.append(
                    Finding(ok: false, what: "digest key", detail: "\(error)", todo: "make one with `ledger digest-key generate`"))
            }
        }
        return findings
    }

    /// Each app's App Store Server API key and Google service account, opened and (unless
    /// `offline`) asked of the store: Apple is asked for a transaction that does not exist (its
    /// 404 proves the key), Google for an access token.
    static func appChecks(_ opened: Database, settings: Configuration, offline: Bool, logger: Logger) async -> [Finding] {
        do {
            return try await withParts(opened, settings: settings, logger: logger) { directory, api in
                var findings: [Finding] = []
                let apps = try await directory.bundleIDs()
                if apps.isEmpty { findings.append(Finding(ok: true, what: "apps", detail: "none configured yet")) }
                for bundleID in apps {
                    let app = try await directory.app(bundleID)
                    if app.hasServerAPI {
                        findings.append(await apple(app, api: api, offline: offline))
                    }
                    if app.googleAccountEmail != nil {
                        findings.append(await google(app, offline: offline))
                    }
                    if !app.hasServerAPI && app.googleAccountEmail == nil {
                        findings.append(Finding(ok: true, what: bundleID, detail: "no store credentials (nothing to ask the stores)"))
                    }
                }
                return findings
            }
        } catch {
            return [Finding(ok: false, what: "apps", detail: "\(error)", todo: "see the checks above")]
        }
    }

    static func apple(_ app: AppConfiguration, api: AppStoreServerAPIClient, offline: Bool) async -> Finding {
        let what = "\(app.bundleID): App Store Server API"
        let credentials: ServerAPICredentials
        do {
            credentials = try AppleLookups.key(of: app)
        } catch {
            return Finding(ok: false, what: what, detail: "\(error)", todo: "PUT the app's app_store_server_api key again")
        }
        if offline { return Finding(ok: true, what: what, detail: "key \(credentials.keyID) opens (not asked: --offline)") }
        let environment = app.settings.environments.contains(.production) ? AppleEnvironment.production : .sandbox
        do {
            _ = try await api.transactionInfo("0", in: environment, as: credentials)
            return Finding(ok: true, what: what, detail: "key \(credentials.keyID) accepted by Apple (\(environment.rawValue))")
        } catch let error as LedgerError where error.code == .appleTransactionNotFound {
            return Finding(ok: true, what: what, detail: "key \(credentials.keyID) accepted by Apple (\(environment.rawValue))")
        } catch let error as LedgerError where error.code == .appleAPIUnauthorized {
            return Finding(
                ok: false, what: what, detail: "Apple refused key \(credentials.keyID): \(error.message)",
                todo: "check the issuer id, key id and key in App Store Connect, then PUT the app again")
        } catch {
            return Finding(ok: false, what: what, detail: "\(error)", todo: "try again; if it stays, Apple is unreachable from here")
        }
    }

    static func google(_ app: AppConfiguration, offline: Bool) async -> Finding {
        let what = "\(app.bundleID): Google Play service account"
        let account: GoogleServiceAccount
        do {
            guard let opened = try app.googleAccount else { throw LedgerError(.googlePlayNotConfigured, "no service account") }
            account = opened
        } catch {
            return Finding(ok: false, what: what, detail: "\(error)", todo: "PUT the app's google_play service account again")
        }
        if offline { return Finding(ok: true, what: what, detail: "\(account.clientEmail) opens (not asked: --offline)") }
        do {
            _ = try await GoogleAccessTokens(account: account).token()
            return Finding(ok: true, what: what, detail: "\(account.clientEmail) given a token by Google")
        } catch {
            return Finding(
                ok: false, what: what, detail: "\(account.clientEmail): \(error.message)",
                todo: "check the key in Google Cloud (not revoked) and that the account is invited in Play Console")
        }
    }

    /// The app directory (secrets opened with the configured key, nothing sealed or listed) and an
    /// App Store Server API client, for the length of `body`.
    static func withParts<T>(
        _ opened: Database, settings: Configuration, logger: Logger,
        _ body: (AppDirectory, AppStoreServerAPIClient) async throws -> T
    ) async throws -> T {
        let keyring = try SecretsKeys.keyring(settings, for: opened, logger: logger)
        let pool = PostgresPool(configuration: opened.application, size: 1, logger: logger)
        let store = EventStore(pool: pool, logger: logger)
        let directory = AppDirectory(
            pool: pool, store: store, freshness: ProjectionFreshness(pool: pool, progress: nil), keyring: keyring)
        let result = await Result { try await body(directory, AppStoreServerAPIClient(configuration: settings.serverAPI, logger: logger)) }
        await pool.close()
        return try result.get()
    }

    static func print(_ findings: [Finding]) {
        for finding in findings {
            Swift.print("\(finding.ok ? "ok  " : "FAIL") \(finding.what): \(finding.detail)")
            if let todo = finding.todo { Swift.print("     → \(todo)") }
        }
        let failed = findings.filter { !$0.ok }.count
        Swift.print(failed == 0 ? "nothing wrong found" : "\(failed) problem(s) found")
    }
}
