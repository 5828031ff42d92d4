// Shared by the benchmark bodies (compiled once per implementation) and the driver.
import Dispatch
import Foundation

/// A benchmark body: performs `iterations` iterations of its scenario.
public typealias Body = (Int) -> Void

/// The scenario bodies of one implementation of the CollapsingFutures API.
public struct API {
    public var registerCancel: (Int) -> Body
    /// The churn body, and the peak number of linked nodes it saw.
    public var churn: () -> (Body, () -> Int)
    public var unlessChurn: Body
    public var thenSet: Body
    /// Source, one `thenDo` (no output future), set: the like of nio's whenSuccess.
    public var thenDoSet: Body
    public var thenChain10: Body
    public var flatten: Body
    /// A retry step: a failed future's collapsing `catch` returning a
    /// pending future, then that one set (per step).
    public var catchStep: Body
    /// `threads` threads registering handlers on one token while one more
    /// cancels it (per handler).
    public var contendedRegister: (_ threads: Int) -> Body
    /// `threads` threads racing `trySetResult` over the same futures (per future).
    public var racingSet: (_ threads: Int) -> Body
    public var immortalize: Body
    /// A flatten chain built outwards: each new future set to the previous
    /// one (per level, `levels` deep per iteration).
    public var outwardChain: (Int) -> Body
    public init(registerCancel: @escaping (Int) -> Body, churn: @escaping () -> (Body, () -> Int),
                unlessChurn: @escaping Body, thenSet: @escaping Body, thenDoSet: @escaping Body,
                thenChain10: @escaping Body, flatten: @escaping Body, catchStep: @escaping Body, contendedRegister: @escaping (Int) -> Body,
                racingSet: @escaping (Int) -> Body, immortalize: @escaping Body, outwardChain: @escaping (Int) -> Body) {
        self.registerCancel = registerCancel; self.churn = churn; self.unlessChurn = unlessChurn
        self.thenSet = thenSet; self.thenDoSet = thenDoSet; self.outwardChain = outwardChain
        self.thenChain10 = thenChain10; self.flatten = flatten; self.catchStep = catchStep
        self.contendedRegister = contendedRegister; self.racingSet = racingSet; self.immortalize = immortalize
    }
}

/// Runs `work(i)` on `n` threads released together; waits for all.
public func onThreads(_ n: Int, _ work: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup(), start = DispatchSemaphore(value: 0)
    for i in 0..<n {
        group.enter()
        Thread.detachNewThread { start.wait(); work(i); group.leave() }
    }
    for _ in 0..<n { start.signal() }
    group.wait()
}
