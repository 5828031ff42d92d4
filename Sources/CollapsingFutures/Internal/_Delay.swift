/// Delays and timeouts: argument checks that name the caller, and the
/// conversions timers need, without overflow.
enum _Delay {
    /// Delays of 100 years or more mean "never": no timer is created (the
    /// wheel counts nanoseconds in 64 bits, about 584 years).
    static let neverSeconds: Int64 = 100 * 365 * 86_400

    /// Nanoseconds for a timer, or `nil` for "never": rounded up, so that
    /// a timer is never armed short of its duration.
    static func nanoseconds(_ d: Duration) -> Int64? {
        // Compared as a `Duration` first: `components` traps on one longer
        // than `Int64.max` seconds (`.seconds(Int64.max) * 2`).
        if d >= .seconds(neverSeconds) { return nil }
        // From the attoseconds, not `components`: that splits them into
        // seconds first, a division by 10^18 of 128 bits on every timer.
        let atto = d.attoseconds
        if atto <= 0 { return 0 }
        return Int64((atto + 999_999_999) / 1_000_000_000)
    }

    /// `d * k`, saturating at "never" (`k` finite and not negative): the
    /// standard library's product, exact to the attosecond, so 9 ms × 3 is
    /// 27 ms (a product through seconds in a `Double` is not).
    static func scaled(_ d: Duration, by k: Double) -> Duration {
        // Checked through seconds first: `d / .seconds(1)` cannot trap on a
        // long duration, while the exact product could overflow.
        if !((d / .seconds(1)) * k < Double(neverSeconds)) { return .seconds(neverSeconds) }
        return d * k
    }

    /// Stops with a message naming the function and argument (in release
    /// builds too: `fatalError` keeps its message, `precondition` does not).
    static func check(_ d: Duration, _ argument: String, of function: String) {
        if d < .zero { fatalError("\(function): \(argument) must not be negative (got \(d))") }
    }

    /// What both `retrying` forms check: `maxTries` and the first wait
    /// (`argument`) not negative, `backoff` finite and not negative.
    static func checkRetries(_ maxTries: Int, _ first: Duration, _ argument: String, backoff: Double,
                             of function: String) {
        if maxTries < 0 { fatalError("\(function): maxTries must not be negative (got \(maxTries))") }
        check(first, argument, of: function)
        if !(backoff.isFinite && backoff >= 0) {
            fatalError("\(function): backoff must be finite and not negative (got \(backoff))")
        }
    }
}
