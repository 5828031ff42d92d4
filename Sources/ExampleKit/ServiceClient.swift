// A command-line service client, as a new user writes one: 200 requests
// with a retry, built on the main thread, then the main thread waits for
// them. The retry's `catch` is registered on the main thread, so by the
// threading rule it runs on the main queue.
import CollapsingFutures
import Dispatch
import Foundation

struct Flaky: Error {}

/// A service call answered on another thread; odd ids fail the first try.
func request(_ id: Int, attempt: Int) -> Future<String> {
    Future.dispatch(on: .global()) {
        if attempt == 0 && id % 2 == 1 { throw Flaky() }
        return "reply \(id)"
    }
}

func requestWithRetry(_ id: Int, attempt: Int = 0, unless stop: CancelToken) -> Future<String> {
    request(id, attempt: attempt).catch(unless: stop) { error in
        guard attempt < 2 else { throw error }
        return requestWithRetry(id, attempt: attempt + 1, unless: stop)
    }
}

/// Waits with `wait()`, which runs the main-queue continuations meanwhile:
/// it completes. Call it on the main thread.
public func clientWaitExample() -> [String] {
    let stop = CancelTokenSource()
    let replies = Future.all((0..<200).map { requestWithRetry($0, unless: stop.token) })
    var lines = ["on main thread: \(Thread.isMainThread)"]
    do {
        let all = try replies.wait()
        lines.append("replies: \(all.count), first: \(all[0]), last: \(all[199])")
    } catch {
        lines.append("failed: \(error)")
    }
    // A dispatch to the main queue, waited for on the main thread.
    lines.append("dispatched to main: \((try? Future.dispatch(on: .main) { 5 }.wait()) ?? -1)")
    // Waiting inside a handler that runs on the main thread, for a two-step
    // chain whose steps hop to the main queue: wait() runs the first, and
    // the second, which it settles, runs at once too.
    let x = FutureSource<Int>()
    let twoSteps = x.future.then { $0 + 1 }.then { $0 + 1 }
    let go = FutureSource<Void>()
    let inner = Lines()
    go.future.thenDo { _ in
        DispatchQueue.global().async { x.trySetResult(1) }
        inner.say("waited inside a handler: \((try? twoSteps.wait()) ?? -1)")
    }
    go.trySetResult(())
    return lines + inner.all
}

/// Waits with a semaphore of its own: the retries wait for a main queue
/// that the blocked main thread never drains, so this gives up after
/// `seconds` (debug builds say why on standard error after one second).
public func clientSemaphoreExample(seconds: Int) -> [String] {
    let stop = CancelTokenSource()
    let replies = Future.all((0..<200).map { requestWithRetry($0, unless: stop.token) })
    let done = DispatchSemaphore(value: 0)
    replies.finallyDo(on: .completingThread) { _ in done.signal() }
    let waited = done.wait(timeout: .now() + .seconds(seconds))
    return ["on main thread: \(Thread.isMainThread)", "completed: \(waited == .success)"]
}
