import CollapsingFutures

/// A clock whose time moves only when a test moves it: code that waits on
/// it (the library's timed APIs take a `clock:`) can be tested without
/// waiting for real time.
///
/// ```swift
/// let clock = ManualClock()
/// let reply = Future<Int>.withTimeout(.seconds(30), clock: clock) { token in pending.unless(token) }
/// await clock.waitUntilSleeping()          // the timeout's deadline is armed
/// #expect(clock.nextDeadline == clock.now.advanced(by: .seconds(30)))
/// clock.advance(by: .seconds(30))          // it fires
/// ```
///
/// - `sleep(until:)` returns once the clock has been advanced to the
///   deadline (at once if it already is there), never earlier, and throws
///   `CancellationError` as soon as its task is cancelled, leaving nothing
///   behind.
/// - `advance(by:)` and `advance(to:)` move the time and resume every
///   sleep whose deadline the time reached, earliest deadline first (those
///   of one deadline in the order they began), on their tasks' executors:
///   what they do then runs after `advance` returns. `waitUntilSleeping(_:)`
///   waits until that many sleeps are pending, which is how a test knows
///   the code under test has armed its next deadline.
///
/// Threading: every member may be used from any thread or task.
public final class ManualClock: Clock, Sendable {
    /// A point on this clock: the time advanced since it was made.
    public struct Instant: InstantProtocol, Sendable, Hashable, CustomStringConvertible {
        /// The time advanced from the clock's start to this instant.
        public var offset: Duration

        public init(offset: Duration) { self.offset = offset }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
        public var description: String { "ManualClock.Instant(\(offset))" }
    }

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        /// Removes and returns the sleepers whose deadline `now` reached,
        /// earliest first, those of one deadline in the order they began.
        mutating func takeDue() -> [Sleeper] {
            let due = sleepers.filter { $0.deadline <= now }
                .sorted { ($0.deadline.offset, $0.id) < ($1.deadline.offset, $1.id) }
            sleepers.removeAll { $0.deadline <= now }
            return due
        }

        /// Takes the watchers satisfied by the sleepers pending now.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
            let ready = watchers.filter { $0.count <= sleepers.count }.map(\.continuation)
            watchers.removeAll { $0.count <= sleepers.count }
            return ready
        }
    }

    private let state = _Locked(State())

    /// A clock at `Instant(offset: .zero)`.
    public init() {}

    public var now: Instant { state.withLock { $0.now } }

    public var minimumResolution: Duration { .nanoseconds(1) }

    /// How many sleeps are pending.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline of a pending sleep, if any.
    public var nextDeadline: Instant? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                enum Now { case wait([CheckedContinuation<Void, Never>]), done, cancelled }
                let now: Now = state.withLock { s in
                    if Task.isCancelled { return .cancelled }
                    if deadline <= s.now { return .done }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: c))
                    return .wait(s.satisfiedWatchers())
                }
                switch now {
                case .wait(let watchers): for w in watchers { w.resume() }
                case .done: c.resume()
                case .cancelled: c.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let c = state.withLock { s -> CheckedContinuation<Void, any Error>? in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.sleepers.remove(at: i).continuation
            }
            c?.resume(throwing: CancellationError())
        }
    }

    /// Moves the time forward by `duration` (not negative).
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "ManualClock.advance(by:): the duration must not be negative (got \(duration))")
        let due = state.withLock { s in
            s.now = s.now.advanced(by: duration)
            return s.takeDue()
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves the time to `instant` (no effect if it is already there or later).
    public func advance(to instant: Instant) {
        let due = state.withLock { s in
            if instant > s.now { s.now = instant }
            return s.takeDue()
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Returns once at least `count` sleeps are pending.
    public func waitUntilSleeping(_ count: Int = 1) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s in
                if s.sleepers.count >= count { return true }
                s.watchers.append((count, c))
                return false
            }
            if ready { c.resume() }
        }
    }
}

