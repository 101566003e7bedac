import Foundation

/// The whole machine's busy CPU time, from `/proc/stat`: what a run cost the server, PostgreSQL
/// and the load generator together. On a shared VM a run's rate drifts with the host (by a third
/// within an hour here) while its CPU per request moves less (±7 % between runs of one binary):
/// time the host takes shows as steal, not as busy time. And CPU per request is what a rate on
/// this machine's two cores is made of (issue 16).
struct MachineCPU {
    /// Busy time so far (user, nice, system, irq, softirq; not steal), in milliseconds.
    var busy: Double

    /// Now; nil where there is no `/proc/stat` (the benchmark then prints no CPU figures).
    static func now() -> MachineCPU? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
        else { return nil }
        let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard ticks.count >= 7 else { return nil }
        let perTick = 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
        return MachineCPU(busy: (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]) * perTick)
    }

    /// What `body` cost the machine, beside its result.
    static func measure<T>(_ body: () async throws -> T) async rethrows -> (result: T, cost: MachineCPU?) {
        let before = now()
        let result = try await body()
        guard let before, let after = now() else { return (result, nil) }
        return (result, MachineCPU(busy: after.busy - before.busy))
    }
}
