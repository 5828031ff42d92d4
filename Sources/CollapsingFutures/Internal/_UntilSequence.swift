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
                return token._whenCancelledInline(unless: .immortal) { _runOffTheDriver { waiting.cancelIfWaiting() } }
            }
            let element: Base.Element?
            do {
                element = try await base.next(isolation: actor)
            } catch {
                waiting.stop()
                registration?.remove()
                // The token's cancel ended the wait (the base threw because
                // we cancelled the task): the sequence ends, as documented.
                if token.isCancelled { done = true; return nil }
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

/// The task an `until` sequence's iterator is waiting in, if any: the
/// token's handler cancels it.
final class _Waiting: Sendable {
    private let state = _Locked<_UnsafeTaskHandle?>(nil)
    func start(_ h: _UnsafeTaskHandle) { state.withLock { $0 = h } }
    func stop() { state.withLock { $0 = nil } }
    func cancelIfWaiting() { state.withLock { $0?.task.cancel() } }
}
