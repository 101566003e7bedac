import AppStoreSimulator
import Foundation
import FuzzTargets

/// `ledger-fuzz`: the parsers of untrusted bytes under libFuzzer (`Tools/fuzz TARGET SECONDS`
/// builds it with `-sanitize=fuzzer,address` and `LEDGER_FUZZING`), their seed corpora, and a
/// replay of inputs without libFuzzer.
///
///     ledger-fuzz seeds DIR            seed corpora: DIR/<target>/…, from the simulator and the fixtures
///     ledger-fuzz replay TARGET FILE…  runs inputs once (any build)
///     LEDGER_FUZZ_TARGET=jws ledger-fuzz [libFuzzer options] CORPUS…   (fuzzing build only)
@main
struct FuzzDriver {
    static func main() throws {
        let arguments = CommandLine.arguments
        let fixtures = URL(fileURLWithPath: ProcessInfo.processInfo.environment["LEDGER_FUZZ_FIXTURES"] ?? "../shared/fixtures/apple")
        let authorityFolder = ProcessInfo.processInfo.environment["LEDGER_FUZZ_AUTHORITY"].map { URL(fileURLWithPath: $0) }
        let context = FuzzContext(fixtures: fixtures, extraRoots: authorityFolder.map { [$0.appendingPathComponent("root.der")] } ?? [])
        switch arguments.dropFirst().first {
        case "seeds":
            guard arguments.count == 3, let authorityFolder else { usage() }
            try Seeds.write(to: URL(fileURLWithPath: arguments[2]), fixtures: fixtures, authority: try .persistent(in: authorityFolder))
        case "replay":
            guard arguments.count >= 4, let target = FuzzTarget(rawValue: arguments[2]) else { usage() }
            for path in arguments.dropFirst(3) {
                let input = try Data(contentsOf: URL(fileURLWithPath: path))
                blocking { await target.run(input, with: context) }
                print("ok \(path)")
            }
        default:
            #if LEDGER_FUZZING
                guard let name = ProcessInfo.processInfo.environment["LEDGER_FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
                    usage()
                }
                exit(LibFuzzer.run(target, context: context))
            #else
                usage()
            #endif
        }
    }

    static func usage() -> Never {
        let targets = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(
            Data(
                """
                usage: ledger-fuzz seeds DIR            (LEDGER_FUZZ_AUTHORITY=folder of the simulator's signing chain)
                       ledger-fuzz replay TARGET FILE…
                       LEDGER_FUZZ_TARGET=TARGET ledger-fuzz [libFuzzer options] CORPUS…   (a build with -sanitize=fuzzer: Tools/fuzz)
                targets: \(targets)

                """.utf8))
        exit(2)
    }
}

/// Runs async work to its end from a thread outside the concurrency pool (`main`, libFuzzer's
/// callback), which may wait for it; never from a task.
func blocking(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}

#if LEDGER_FUZZING
    /// libFuzzer's entry points: its driver is started from our `main` (SwiftPM gives every
    /// executable its own), and it calls back for each input.
    ///
    /// One long-lived task runs the inputs, each read from `input`, which the callback sets and
    /// clears: nothing per input is held by a task that ends after the callback returns. (With a
    /// task per input, libFuzzer's leak check — run as soon as an input ends with more
    /// allocations than frees — found the input half-released by the finishing task and called
    /// it a leak.)
    enum LibFuzzer {
        nonisolated(unsafe) static var current: (target: FuzzTarget, context: FuzzContext)?
        nonisolated(unsafe) static var input = Data()
        static let (ticks, tick) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .unbounded)
        static let done = DispatchSemaphore(value: 0)

        static func run(_ target: FuzzTarget, context: FuzzContext) -> Int32 {
            current = (target, context)
            Task.detached {
                for await _ in ticks {
                    await runCurrent()
                    done.signal()
                }
            }
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            return runDriver(&argc, &argv, fuzzOne)
        }

        /// Its copies of the input are released when it returns, before the callback is told.
        static func runCurrent() async {
            guard let (target, context) = current else { return }
            await target.run(input, with: context)
        }
    }

    @_silgen_name("LLVMFuzzerRunDriver")
    func runDriver(
        _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// Also what libFuzzer's own `main`, linked but unused, refers to.
    @_cdecl("LLVMFuzzerTestOneInput")
    func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
        LibFuzzer.input = start.map { Data(bytes: $0, count: count) } ?? Data()
        LibFuzzer.tick.yield()
        LibFuzzer.done.wait()
        // Freed before returning: the last input, kept to the end, was reported as a leak at exit.
        LibFuzzer.input = Data()
        return 0
    }
#endif
