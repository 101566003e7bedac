import EmbeddedPostgres

#if canImport(Glibc)
    import Glibc
#endif

/// The child-process calls a test makes, awaited off the cooperative pool: a `ledger migrate` or
/// a `pg_dump` waited for with `waitpid` on one of its two threads held it for seconds on a slow
/// machine, and every other test's servers and clients stood still meanwhile. In an async context
/// these overloads are the ones chosen.
extension ChildProcess {
    package static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> Outcome {
        try await offThePool { try run(executable, arguments, environment: environment) }
    }

    package static func wait(_ pid: pid_t) async -> Int32 {
        (try? await offThePool { wait(pid) }) ?? -1
    }
}

/// Starting and stopping a cluster runs `pg_ctl` and waits for it: off the pool too, for the same
/// reason.
extension EmbeddedPostgres {
    @discardableResult
    package func start() async throws -> Bool {
        try await offThePool { try start() }
    }

    package func stop(mode: String = "fast") async throws {
        try await offThePool { try stop(mode: mode) }
    }
}
