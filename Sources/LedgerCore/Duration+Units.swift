extension Duration {
    /// As seconds, for rates, SQL intervals and metrics.
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// Whole milliseconds (rounded down), for APIs that count in them (NIO's timeouts, jitter).
    package var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}

extension Duration {
    /// Whole nanoseconds, for swift-metrics' timers.
    package var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}
