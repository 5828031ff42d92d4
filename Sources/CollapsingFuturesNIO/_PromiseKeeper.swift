#if NIO
import CollapsingFutures
import NIOCore

/// Holds an `EventLoopPromise` for a future's continuation: completes it
/// with the future's outcome, or — when the continuation is discarded unrun
/// (the future became immortal) and so releases this keeper — fails it
/// with `FutureError.immortal` as the keeper deinitializes.
final class _PromiseKeeper<Value: Sendable>: @unchecked Sendable {
    private let promise: EventLoopPromise<Value>
    /// Written once, by the continuation, before it releases the keeper;
    /// read by `deinit`, which runs after the last release (the release
    /// orders the write before it).
    private var completed = false

    init(_ promise: EventLoopPromise<Value>) { self.promise = promise }

    func complete(with future: Future<Value>) {
        completed = true
        switch future.result {
        case .success(let value)?: promise.succeed(value)
        case .failure(let error)?: promise.fail(error)
        case nil: promise.fail(FutureError.immortal)
        }
    }

    deinit {
        if !completed { promise.fail(FutureError.immortal) }
    }
}
#endif
