import CCollapsingFutures

/// Completes a `Future`.
///
/// Every `trySet*` may be called from any thread; exactly one call wins and
/// the others return `false`. The future's continuations run on the winning
/// thread (see `Future` for the threading rules). When the source is
/// deallocated while unset, the future becomes immortal and discards every
/// continuation unrun.
public final class FutureSource<Value: Sendable>: Sendable, CustomStringConvertible {
    /// The future this source completes.
    public let future: Future<Value>

    #if DEBUG
    /// Debug builds: where this source was created, recorded in its future
    /// if the source dies unset (NIO reports a leaked promise's creation site
    /// the same way). Release builds keep nothing.
    @usableFromInline let _fileID: StaticString
    @usableFromInline let _line: UInt
    #endif

    /// A source whose future is pending until set, and immortal if this
    /// source dies first. (`fileID`/`line` are recorded in debug builds only,
    /// to say where an immortal future's source was created.)
    @inlinable public convenience init(fileID: StaticString = #fileID, line: UInt = #line) {
        self.init(_completing: Future(), fileID: fileID, line: line)
    }

    /// The source of `future`, which the caller has just made (pending, no
    /// other source).
    @inlinable init(_completing future: Future<Value>, fileID: StaticString, line: UInt) {
        assert(future.state == .pending, "a source adopts only a new pending future")
        self.future = future
        #if DEBUG
        _fileID = fileID
        _line = line
        #endif
    }

    /// The future fails with `CancellationError` if `token` is cancelled
    /// before it is set. The registration on `token` is removed as soon as the
    /// future completes or becomes immortal.
    public convenience init(until token: CancelToken, fileID: StaticString = #fileID, line: UInt = #line) {
        self.init(fileID: fileID, line: line)
        let f = future
        token._whenCancelledInline(untilSettled: f.completionToken) {
            f._failCancelled()
        }
    }

    deinit {
        #if DEBUG
        // Recorded before the immortalizing settle publishes it (claim first,
        // so a future that was set keeps no site).
        if let claimed = future._takeClaim() {
            let site = "\(_fileID):\(_line)"
            _ImmortalSites.record(site, for: future)
            claimed._withUnsafeGuaranteedRef {
                if $0 !== future { _ImmortalSites.record(site, for: $0) }
                _ = $0._immortalizeClaimed()
            }
        }
        #else
        future._tryImmortalize()
        #endif
    }

    /// `FutureSource(Future(pending))`, `FutureSource(Future(succeeded: 3))`, …
    public var description: String { "FutureSource(\(future))" }

    /// Succeeds with `value`. `false` if the future was already set.
    @inlinable @discardableResult public func trySetResult(_ value: Value) -> Bool { future._trySet(.success(value)) }

    /// Collapses: the future takes on `future`'s outcome. A cycle (a future
    /// set to itself, directly or through others) makes every future in it
    /// immortal. `false` if already set. (A continuation of this future is
    /// not such a link: set to one, the future waits for itself; see
    /// <doc:CollapsingAndCycles>.)
    @inlinable @discardableResult public func trySetResult(_ future: Future<Value>) -> Bool { self.future._trySetFuture(future) }

    /// `trySetResult(_:)` with a future, also returning how many flattening
    /// targets its cycle walk followed (tests count this work).
    @_spi(Testing) public func _trySetResultCountingSteps(_ future: Future<Value>) -> (set: Bool, steps: Int) {
        self.future._setFuture(future)
    }

    /// Fails with `error`. `false` if already set.
    @inlinable @discardableResult public func trySetFailure(_ error: any Error) -> Bool { future._trySet(.failure(error)) }

    /// Fails with `CancellationError`. `false` if already set.
    @discardableResult public func trySetFailedWithCancel() -> Bool { future._tryFail(CancellationError()) }

    /// Fails with `TimeoutError`. `false` if already set.
    @discardableResult public func trySetFailedWithTimeout() -> Bool { future._tryFail(TimeoutError()) }

    /// Completes with `result`. `false` if already set.
    @inlinable @discardableResult public func trySet(_ result: Result<Value, any Error>) -> Bool { future._trySet(result) }

    /// Succeeds with `value`. Precondition: not yet set.
    public func forceSetResult(_ value: Value) { _force(trySetResult(value), "forceSetResult(_:)") }

    /// Collapses into `future`. Precondition: not yet set.
    public func forceSetResult(_ future: Future<Value>) { _force(trySetResult(future), "forceSetResult(_:)") }

    /// Fails with `error`. Precondition: not yet set.
    public func forceSetFailure(_ error: any Error) { _force(trySetFailure(error), "forceSetFailure(_:)") }

    /// Fails with `CancellationError`. Precondition: not yet set.
    public func forceSetFailedWithCancel() { _force(trySetFailedWithCancel(), "forceSetFailedWithCancel()") }

    /// Fails with `TimeoutError`. Precondition: not yet set.
    public func forceSetFailedWithTimeout() { _force(trySetFailedWithTimeout(), "forceSetFailedWithTimeout()") }

    /// Stops the program, in release builds too, when `set` says a
    /// `forceSet*` found its future already set.
    private func _force(_ set: Bool, _ function: String) {
        if !set { fatalError("FutureSource.\(function) on a future that was already set: \(future)") }
    }
}

extension FutureSource where Value == Void {
    /// Succeeds with `()`. `false` if already set.
    @discardableResult public func trySetResult() -> Bool { trySetResult(()) }
    /// Succeeds with `()`. Precondition: not yet set.
    public func forceSetResult() { forceSetResult(()) }
}

extension Future {
    /// For bridges in this package: a pending future, and its source for
    /// `start` to hand on; the future is immortal once the source dies
    /// unset (debug builds name `fileID`:`line`, the bridge's caller).
    package convenience init(fileID: StaticString, line: UInt, _completedBy start: (FutureSource<Value>) -> Void) {
        self.init()
        start(FutureSource(_completing: self, fileID: fileID, line: line))
    }
}
