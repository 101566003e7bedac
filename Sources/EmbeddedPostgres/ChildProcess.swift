import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a program to completion with `posix_spawn` and `waitpid`, output captured in a file.
///
/// Not Foundation's `Process`: inside a test runner its `waitUntilExit` was seen never to return
/// after the child had exited. And not a pipe for output: the postmaster that `pg_ctl start`
/// leaves running inherits the child's standard descriptors, so a pipe would never reach
/// end-of-file. Every other descriptor is closed in the child.
package enum ChildProcess {
    package struct Outcome: Sendable {
        package var status: Int32
        package var output: String
    }

    /// Runs to completion and returns the exit status and everything printed.
    package static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Outcome {
        let outputPath = NSTemporaryDirectory() + "ledger-child-\(UUID().uuidString)"
        defer { unlink(outputPath) }
        let pid = try spawn(executable, arguments, environment: environment, outputPath: outputPath)
        let status = wait(pid)
        return Outcome(status: status, output: (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
    }

    /// Starts a program with stdin from /dev/null and stdout+stderr appended to `outputPath`.
    package static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, outputPath: String
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of ours crosses over: a postmaster that kept a copy of a listening socket
        // of this process kept that port open after this process closed it — connections to a
        // stopped server were accepted by the kernel and never answered (seen in the tests: a
        // ledger stopped while Apple delivers looked hung, not down). Also database connections.
        if let closeFrom = Self.closeFrom { _ = closeFrom(&actions, 3) }

        // Signals as a shell would leave them: none blocked, the usual ones at their defaults. The
        // child otherwise inherits this thread's mask and the process's ignored signals (a test
        // runner's, a server's that handles SIGTERM itself), and a supervisor among the children
        // (pg_autoctl) could never stop its own services.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var pid: pid_t = 0
        let spawnStatus = withCStrings([executable] + arguments) { argv in
            guard let environment else { return posix_spawn(&pid, executable, &actions, &attributes, argv, environ) } // inherited as it is
            return withCStrings(environment.map { "\($0.key)=\($0.value)" }) { envp in
                posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
            }
        }
        guard spawnStatus == 0 else {
            throw EmbeddedPostgresError.commandFailed(
                command: executable, status: spawnStatus, output: String(cString: strerror(spawnStatus)))
        }
        return pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), looked up at run time:
    /// Swift's Glibc module does not import it. Absent on an older C library, descriptors are
    /// inherited as before.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Waits for `pid` and returns its exit status (128 + signal when it was killed).
    package static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { return -1 }
        }
        return exitStatus(status)
    }

    /// The exit status of `pid` if it has ended, nil while it runs (or -1 if it is no child).
    package static func poll(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        let ended = waitpid(pid, &status, WNOHANG)
        if ended == 0 { return nil }
        return ended == pid ? exitStatus(status) : -1
    }

    /// WIFEXITED / WEXITSTATUS, spelled out: the C macros are not imported into Swift.
    private static func exitStatus(_ status: Int32) -> Int32 {
        (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) } + [nil]
        defer { for copy in copies { free(copy) } }
        return copies.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
