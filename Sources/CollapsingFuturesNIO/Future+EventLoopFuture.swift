#if NIO
import CollapsingFutures
import NIOCore

extension Future {
    /// A future with `future`'s outcome.
    ///
    /// Its source is held by the callback registered on `future`: if NIO
    /// drops that callback without running it (a promise leaked unfulfilled,
    /// which NIO reports in debug builds), this future becomes immortal,
    /// like any future whose source died unset.
    public convenience init(_ future: EventLoopFuture<Value>) {
        self.init(_completedBy: { source in
            future.whenComplete { source.trySet($0) }
        })
    }

    /// An `EventLoopFuture` on `eventLoop` with this future's outcome: it
    /// fails with `FutureError.immortal` as soon as this future is or
    /// becomes immortal, so NIO code waiting on it never hangs.
    ///
    /// The outcome is handed over on the thread that completes this future
    /// (NIO then runs the callbacks on `eventLoop`); nothing hops to the
    /// main queue, so it works from a server's main thread blocked in
    /// `closeFuture.wait()`.
    public func eventLoopFuture(on eventLoop: any EventLoop) -> EventLoopFuture<Value> {
        let promise = eventLoop.makePromise(of: Value.self)
        let keeper = _PromiseKeeper(promise)
        finallyDo(on: .completingThread) { keeper.complete(with: $0) }
        return promise.futureResult
    }
}
#endif
