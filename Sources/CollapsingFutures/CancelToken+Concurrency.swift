import CCollapsingFutures
import Synchronization

/// Runs `body` with a token that is cancelled when the current Task is.
///
/// Nothing stays registered after it returns: the task cancellation handler
/// is gone, and the token's source dies with the call (an uncancelled token
/// becomes immortal, discarding whatever `body` registered on it).
public func withCancelToken<R>(
    isolation: isolated (any Actor)? = #isolation,
    _ body: (CancelToken) async throws -> R
) async rethrows -> R {
    let source = CancelTokenSource()
    return try await withTaskCancellationHandler {
        try await body(source.token)
    } onCancel: {
        source.cancel()
    }
}

extension Task where Failure == any Error {
    /// Starts a Task that is cancelled when `token` is.
    ///
    /// The registration on `token` is removed when the task finishes; if the
    /// token becomes immortal it is discarded. Neither holds anything the
    /// operation captured after that. (The operation itself must not capture
    /// the owner of the token's source strongly, as with any Task.)
    @discardableResult
    ///
    /// Like `Task.init`, `operation` inherits the caller's actor: in a
    /// `@MainActor` type it runs on the main actor and `[weak self]` works.
    /// (Unlike `Task.init`, `self` is not captured implicitly, so a strong
    /// capture — the leak this initializer exists to avoid — stays visible.)
    public init(until token: CancelToken, priority: TaskPriority? = nil,
                @_inheritActorContext operation: sending @escaping @isolated(any) () async throws -> Success) {
        let registration = _TaskRegistration()
        self = Task(priority: priority) {
            defer { registration.finish() }
            return try await operation()
        }
        let task = self
        // Bookkeeping, not a user handler: inline on the cancelling thread
        // (a main-queue hop would never run under a blocked main thread).
        registration.attach(token._whenCancelledInline(unless: .immortal) { task.cancel() })
    }
}

/// The registration that cancels a `Task(until:)`, removed when the task ends
/// (whichever of "task ended" and "registration attached" comes second removes it).
final class _TaskRegistration: Sendable {
    private let state = _Locked<(registration: CancelRegistration?, finished: Bool)>((nil, false))
    func attach(_ r: CancelRegistration) {
        let finished = state.withLock { s -> Bool in
            if !s.finished { s.registration = r }
            return s.finished
        }
        if finished { r.remove() }
    }
    func finish() {
        let r = state.withLock { s -> CancelRegistration? in
            s.finished = true
            defer { s.registration = nil }
            return s.registration
        }
        r?.remove()
    }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The same elements, ending (returning `nil`) once `token` is cancelled.
    ///
    /// If the token is cancelled while the iteration waits inside the base
    /// sequence, the iterating task is cancelled to interrupt that wait (the
    /// base sequence must honour cancellation, as `AsyncStream` does). The
    /// registration exists only while a `next()` is waiting, so an iteration
    /// that ends early leaves nothing registered.
    public func until(_ token: CancelToken) -> some AsyncSequence<Element, Failure> {
        _UntilSequence(base: self, token: token)
    }
}

struct _UntilSequence<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element: Sendable {
    typealias Element = Base.Element
    typealias Failure = Base.Failure
    let base: Base
    let token: CancelToken

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let token: CancelToken
        var done = false

        mutating func next(isolation actor: isolated (any Actor)?) async throws(Base.Failure) -> Base.Element? {
            if done || token.isCancelled { done = true; return nil }
            // While `next()` waits, a cancel of the token cancels this task.
            // The handler cancels only under the lock and only while `waiting`,
            // which is cleared before `next()` returns: the task is alive then.
            let waiting = _Waiting()
            let registration = withUnsafeCurrentTask { task -> CancelRegistration? in
                guard let task else { return nil }
                waiting.start(_UnsafeTaskHandle(task: task))
                return token._whenCancelledInline(unless: .immortal) { waiting.cancelIfWaiting() }
            }
            let element: Base.Element?
            do {
                element = try await base.next(isolation: actor)
            } catch {
                waiting.stop()
                registration?.remove()
                throw error
            }
            waiting.stop()
            registration?.remove()
            if element == nil || token.isCancelled { done = true; return nil }
            return element
        }

        mutating func next() async throws(Base.Failure) -> Base.Element? {
            try await next(isolation: nil)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), token: token) }
}

/// The task iterating an `until` sequence, cancellable while it waits.
struct _UnsafeTaskHandle: @unchecked Sendable { let task: UnsafeCurrentTask }

final class _Waiting: Sendable {
    private let state = _Locked<_UnsafeTaskHandle?>(nil)
    func start(_ h: _UnsafeTaskHandle) { state.withLock { $0 = h } }
    func stop() { state.withLock { $0 = nil } }
    func cancelIfWaiting() { state.withLock { $0?.task.cancel() } }
}

extension CancelToken {
    /// Runs `handler` with `object` when cancelled, unless `object` is gone by
    /// then; the handler holds `object` weakly, so it never keeps it alive.
    public func whenCancelled<O: AnyObject & Sendable>(weak object: O, _ h: @escaping @Sendable (O) -> Void) {
        let ref = _Weak(object)
        whenCancelled { if let o = ref.object { h(o) } }
    }
}

extension Future {
    /// Runs `h` with `object` and the value if this succeeds and `object`
    /// still exists; the handler holds `object` weakly.
    public func thenDo<O: AnyObject & Sendable>(weak object: O, _ h: @escaping @Sendable (O, Value) -> Void) {
        let ref = _Weak(object)
        thenDo { v in if let o = ref.object { h(o, v) } }
    }
}

final class _Weak<O: AnyObject & Sendable>: Sendable {
    weak let object: O?
    init(_ o: O) { object = o }
}
