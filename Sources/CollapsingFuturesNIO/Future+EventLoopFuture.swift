import CollapsingFutures
#if NIO
import NIOCore

extension Future {
    /// A future with `future`'s outcome.
    ///
    /// Its source is held by the callback registered on `future`: if NIO
    /// drops that callback without running it (a promise leaked unfulfilled,
    /// which NIO reports in debug builds), this future becomes immortal,
    /// like any future whose source died unset (debug builds then say that
    /// its source was created at the call of this initializer).
    public convenience init(_ future: EventLoopFuture<Value>, fileID: StaticString = #fileID, line: UInt = #line) {
        self.init(fileID: fileID, line: line, _completedBy: { source in
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
#else
// Without the package's NIO trait this module has no bridges: say how to
// get them where a user looks for one.
extension Future {
    @available(*, unavailable, message: """
        the swift-nio bridges need the package's NIO trait: .package(url: …, from: "0.2.0", traits: ["NIO"])
        """)
    public func eventLoopFuture<Loop, Result>(on eventLoop: Loop) -> Result { fatalError() }
}
#endif
