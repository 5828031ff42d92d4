// Compile-checks the README's code (the quick start and the controller).
import CollapsingFutures
import Testing

final class ReadmeController: Sendable {
    let lifetime = CancelTokenSource(cancelOnDeinit: true)
    init(events: AsyncStream<Int>) {
        let token = lifetime.token
        Task(until: token) { [weak self] in
            for await e in events.until(token) { self?.handle(e) }
        }
    }
    func handle(_ e: Int) {}
}

final class Screen: @unchecked Sendable {
    var token: CancelToken?
    func watch(_ t: CancelToken) {
        token = t
        t.whenCancelled { self.close() }
    }
    func close() {}
}

@Suite struct ReadmeSnippets {
    @Test func quickStartRuns() {
        let source = CancelTokenSource()
        source.token.whenCancelled { print("cancelled") }
        source.cancel()

        let result = FutureSource<Int>()
        let doubled = result.future.then { $0 * 2 }
        result.trySetResult(21)
        #expect(doubled.forceGetResult() == 42)

        let text: Future<String> = doubled.then { n in Future.succeeded("\(n)") }
        #expect(text.forceGetResult() == "42")

        let stop = CancelTokenSource()
        let guarded = result.future.then(unless: stop.token) { $0 + 1 }
        #expect(guarded.forceGetResult() == 22)

        let all = Future.all([Future.succeeded(1), .delayed(2, by: .milliseconds(10))])
        let fastest = Future<Int>.race([{ _ in .delayed(1, by: .seconds(1)) }, { _ in .succeeded(2) }])
        let robust = Future<Int>.retrying(upTo: 4, baseTimeout: .milliseconds(100)) { _ in Future.succeeded(42) }
        #expect(fastest.forceGetResult() == 2)
        #expect(robust.forceGetResult() == 42)
        _ = all
    }

    @Test func screenIsFreedWhenTheSourceDies() {
        weak var weakScreen: Screen?
        var source: CancelTokenSource? = CancelTokenSource()
        do {
            let s = Screen()
            weakScreen = s
            s.watch(source!.token)
        }
        #expect(weakScreen != nil)
        source = nil
        _ = source
        #expect(weakScreen == nil)
    }
}
