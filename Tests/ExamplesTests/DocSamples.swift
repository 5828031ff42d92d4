// Every ```swift block of README.md and the DocC articles, compiled here
// verbatim (DocSamplesTests checks that each block still appears below, so a
// sample that stops compiling, or drifts from this file, fails the suite).
// Package-manifest fragments are the only blocks left out.
import CollapsingFutures
#if NIO
import CollapsingFuturesNIO
#endif
import Dispatch
import Foundation
import NIOCore
import Testing

// MARK: stand-ins for the app code the samples call

struct Image: Sendable {}
struct Connection: Sendable {}
struct Request: Sendable {}
struct Response: Sendable { var status = 200 }
struct Denied: Error {}

final class AddressBook: Sendable {
    let names: [String]?
    init(names: [String]?) { self.names = names }
    func requestAccess(granted: @escaping @Sendable ([String]) -> Void, denied: @escaping @Sendable (any Error) -> Void) {
        DispatchQueue.global().async { [names] in if let names { granted(names) } else { denied(Denied()) } }
    }
}

final class AvatarScreen: Sendable {
    let lifetime = CancelTokenSource()
    let shown = Log()
    func show(_ image: Image) { shown.add("image") }
}

final class Log: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func add(_ s: String) { lock.withLock { items.append(s) } }
    var all: [String] { lock.withLock { items } }
}

func connect(_ token: CancelToken) -> Future<Int> { .succeeded(7) }
func connect(_ token: CancelToken) -> Future<Connection> { .succeeded(Connection()) }
func request(_ token: CancelToken) -> Future<Int> { .succeeded(8) }
func send(_ request: Request, _ token: CancelToken) -> Future<Response> { .succeeded(Response()) }
func fetch() -> Future<Data> { .succeeded(Data([1])) }

// MARK: README

/// The README's sample, verbatim (it runs; the deinit is checked on a
/// mirror of `Screen` that counts, in `readmeImmortality()`).
func readmeImmortalitySample() {
final class Screen: @unchecked Sendable {
    var token: CancelToken?
    func watch(_ t: CancelToken) {
        token = t
        t.whenCancelled { self.close() }   // a cycle through the token...
    }
    func close() {}
}
var source: CancelTokenSource? = CancelTokenSource()
Screen().watch(source!.token)
source = nil                               // ...broken here: Screen deinits
    _ = source
}

/// The same cycle, on a `Screen` that reports its deinit.
func readmeImmortality() -> Bool {
    final class CountingScreen: @unchecked Sendable {
        var token: CancelToken?
        let gone: Log
        init(_ gone: Log) { self.gone = gone }
        deinit { gone.add("deinit") }
        func watch(_ t: CancelToken) {
            token = t
            t.whenCancelled { self.close() }
        }
        func close() {}
    }
    let gone = Log()
    var source: CancelTokenSource? = CancelTokenSource()
    CountingScreen(gone).watch(source!.token)
    let aliveBefore = gone.all.isEmpty
    source = nil
    _ = source
    readmeImmortalitySample()
    return aliveBefore && gone.all == ["deinit"]
}

func fetchWithRetry(_ tries: Int) -> Future<Data> {
    fetch().catch { error in
        guard tries > 1 else { throw error }
        return fetchWithRetry(tries - 1)        // a Future<Data>, flattened
    }
}

func readmeQuickStart() throws -> (Int, Future<Int>, Future<[Int]>, Future<Int>, Future<Int>, Future<Int>, [Int]) {
let source = CancelTokenSource()
source.token.whenCancelled { print("cancelled") }
source.cancel()                                   // prints "cancelled"

let result = FutureSource<Int>()
let doubled = result.future.then { $0 * 2 }       // Future<Int>
result.trySetResult(21)
print(doubled.forceGetResult())                   // 42

// unless: the registration is removed (and its closure released) if the
// token is cancelled first; the continuation's result fails with CancellationError.
let stop = CancelTokenSource()
let guarded = result.future.then(unless: stop.token) { $0 + 1 }

// Combinators
let all = Future.all([Future.succeeded(1), .delayed(2, by: .milliseconds(10))])
let fastest = Future<Int>.race([{ _ in .delayed(1, by: .seconds(1)) }, { _ in .succeeded(2) }])
let robust = Future<Int>.retrying(upTo: 4, baseTimeout: .milliseconds(100)) { token in
    Future.succeeded(42)   // an operation that should stop when `token` is cancelled
}
// Retry failures: up to 3 tries, waiting 1 s, then 2 s; fails with the last error.
let patient = Future<Int>.retrying(upTo: 3, delay: .seconds(1)) { token in
    Future.succeeded(7)    // a call that may fail
}

// Block a thread (a command-line tool's main, a test) until a future completes.
// On the main thread it runs the handlers and continuations bound for the main
// queue meanwhile, but not main-actor work: there, do not wait for a
// `Future { … }` made in main-actor code (a script's top level). It throws
// FutureError.immortal instead of waiting for a future that can never complete.
let both = try Future.all([doubled, guarded]).wait()   // [42, 22]
    return (doubled.forceGetResult(), guarded, all, fastest, robust, patient, both)
}

@MainActor final class ProfileScreen {
    var title = ""
    let lifetime = CancelTokenSource(cancelOnDeinit: true)
    func show(_ name: Future<String>) {
        name.thenDo(on: MainActor.shared, unless: lifetime.token) { [weak self] in self?.title = $0 }
    }
}

#if NIO
final class GreetingHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let greet: @Sendable (String) -> Future<String>
    init(greet: @escaping @Sendable (String) -> Future<String>) { self.greet = greet }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let name = String(buffer: unwrapInboundIn(data))
        greet(name).eventLoopFuture(on: context.eventLoop).assumeIsolated().whenComplete { result in
            let reply = (try? result.get()) ?? "error"
            context.writeAndFlush(NIOAny(ByteBuffer(string: reply)), promise: nil)
        }
    }
}
#endif

@MainActor final class TitleModel {
    var title = ""
    let lifetime = CancelTokenSource(cancelOnDeinit: true)

    func show(_ name: Future<String>) {
        name.thenDo(on: MainActor.shared, unless: lifetime.token) { [weak self] in self?.title = $0 }
    }
}

@MainActor final class PlainController {      // leaks: deinit never runs
    var task: Task<Void, Never>?
    init(events: AsyncStream<Int>) {
        task = Task { for await e in events { self.handle(e) } }
    }
    func handle(_ e: Int) {}
    deinit { task?.cancel() }
}

final class Controller: Sendable {
    let lifetime = CancelTokenSource(cancelOnDeinit: true)
    init(events: AsyncStream<Int>) {
        let token = lifetime.token
        Task(until: token) { [weak self] in
            for await e in events.until(token) { self?.handle(e) }
        }
    }
    func handle(_ e: Int) {}
}

// MARK: GettingStarted.md

func gettingStartedTokens() -> Bool {
let source = CancelTokenSource()
let registration = source.token.whenCancelled { print("cancelled") }
source.cancel()            // prints "cancelled", on this thread
registration.remove()      // false: it already ran
    return registration.remove()
}

func gettingStartedFutures() -> String {
let source = FutureSource<Int>()
let text = source.future
    .then { $0 * 2 }
    .then { "\($0)" }
source.trySetResult(21)
text.forceGetResult()      // "42"
    return text.forceGetResult()
}

// MARK: CancellationWithUnlessAndUntil.md

func bothTimeouts(lifetime: CancelTokenSource, stop: CancelTokenSource) -> (Future<Int>, Future<Int>) {
// until-style: the result lasts until `lifetime` is cancelled; on timeout the
// operation's token is cancelled first, then the result fails with TimeoutError.
let session = Future<Int>.withTimeout(.seconds(5), until: lifetime.token) { token in
    connect(token)
}

// unless-style (no label): on timeout, or when `stop` is cancelled, the
// operation's token is cancelled and the result waits for the operation to
// confirm. A late success is delivered, never dropped; the operation's
// CancellationError becomes TimeoutError on timeout.
let reply = Future<Int>.withTimeout(.seconds(5), unless: stop.token) { token in
    request(token)
}
    return (session, reply)
}

// MARK: Recipes.md

func contacts(of book: AddressBook) -> Future<[String]> {
    let source = FutureSource<[String]>()
    book.requestAccess(granted: { names in source.trySetResult(names) },
                       denied: { error in source.trySetFailure(error) })
    return source.future
}

func showAvatar(_ avatar: Future<Image>, on screen: AvatarScreen) {
    avatar.thenDo(unless: screen.lifetime.token) { image in screen.show(image) }
}

func openConnection(for session: CancelTokenSource) -> Future<Connection> {
    Future.withTimeout(.seconds(5), until: session.token) { token in connect(token) }
}

func reply(to request: Request) -> Future<Response> {
    Future.withTimeout(.seconds(2)) { token in send(request, token) }
}

func quickly(_ slow: Future<Response>) -> Future<Response> {
    slow.timeout(.seconds(2))
}

func handle(_ request: Request) -> Future<Response> {
    let deadline = CancelTokenSource(cancellingAfter: .seconds(30))
    let reply = send(request, deadline.token)
    reply.finallyDo { _ in withExtendedLifetime(deadline) {} }
    return reply
}

func fetchPatiently(for session: CancelTokenSource) -> Future<Response> {
    Future.retrying(upTo: 5, baseTimeout: .seconds(1), backoff: 2, until: session.token) { token in
        send(Request(), token)
    }
}

func fetchReliably(for session: CancelTokenSource) -> Future<Response> {
    Future.retrying(upTo: 3, delay: .seconds(1), backoff: 2, until: session.token,
                    shouldRetry: { !($0 is CancellationError || $0 is Denied) }) { token in
        send(Request(), token)
    }
}

@MainActor final class ProfileModel {
    var title = ""
    let lifetime = CancelTokenSource(cancelOnDeinit: true)

    func bind(name: Future<String>, status: Future<String>) {
        name.thenDo(on: MainActor.shared, unless: lifetime.token) { [weak self] in self?.title = $0 }
        Task(until: lifetime.token) { [weak self] in
            let text = try await status.get()
            self?.title += " — " + text
        }
    }
}

func waitForReply(_ reply: Future<Response>) -> Response? {
    try? reply.wait()
}
