// `swift run Examples deadline-hop` (with the package's GRPC trait): a
// client, service A and service B, each in a process of its own, over gRPC's
// HTTP/2 transport on loopback. The client's deadline reaches B through A as
// gRPC carries it (`grpc-timeout`), and B's token follows it. The
// cross-process tests run the same roles (`grpc-b`, `grpc-a`, `grpc-client`).
#if GRPC
import CollapsingFutures
import CollapsingFuturesGRPC
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import Synchronization

/// UTF-8 text as a gRPC message: no protobuf.
struct TextCoder: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: String) throws -> Bytes { Bytes(Array(message.utf8)) }
    func deserialize<Bytes: GRPCContiguousBytes>(_ bytes: Bytes) throws -> String {
        bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }
}

let hopMethod = MethodDescriptor(fullyQualifiedService: "collapsingfutures.Hop", method: "Call")

/// Nanoseconds on Linux's `CLOCK_BOOTTIME`, which `ContinuousClock` reads:
/// the same for every process on the machine, so instants printed by
/// different processes compare.
public func bootNanoseconds(_ instant: ContinuousClock.Instant = .now) -> Int64 {
    var t = timespec()
    clock_gettime(CLOCK_BOOTTIME, &t)
    let now = Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    let (s, atto) = ContinuousClock.now.duration(to: instant).components
    return now + s * 1_000_000_000 + atto / 1_000_000_000
}

/// A line on standard output, at once (another process reads it).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The handlers registered on the services' tokens that were freed, and all of them.
let handlersMade = Atomic<Int>(0), handlersFreed = Atomic<Int>(0)
final class HandlerCapture: Sendable {
    init() { handlersMade.add(1, ordering: .relaxed) }
    deinit { handlersFreed.add(1, ordering: .relaxed) }
}

/// One method, `Call`: `report` answers with the deadline its token has;
/// `hold` waits until its token is cancelled; `stats` answers with the
/// handler counts. Service A (`next` set) forwards `report` and `hold` to B.
struct HopService: RegistrableRPCService {
    let name: String
    let next: GRPCClient<HTTP2ClientTransport.Posix>?

    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        router.registerHandler(forMethod: hopMethod, deserializer: TextCoder(), serializer: TextCoder()) { stream, context in
            let request = try await ServerRequest(stream: stream)
            let reply = try await withRPCCancelToken(context, metadata: request.metadata) { token in
                try await handle(request.message, until: token)
            }
            return StreamingServerResponse(single: ServerResponse(message: reply))
        }
    }

    func handle(_ message: String, until token: CancelToken) async throws -> String {
        if message == "stats" {
            return "made \(handlersMade.load(ordering: .relaxed)) freed \(handlersFreed.load(ordering: .relaxed))"
        }
        if message == "warm" {   // opens the connections, prints nothing
            return try await next?.unary(request: ClientRequest(message: message), descriptor: hopMethod,
                                         serializer: TextCoder(), deserializer: TextCoder(),
                                         options: .defaults) { try $0.message } ?? "warm"
        }
        let deadline = token.deadline.map { "\(bootNanoseconds($0))" } ?? "none"
        say("\(name) deadline \(deadline)")
        let capture = HandlerCapture()
        token.whenCancelled(on: .completingThread) {
            say("\(name) cancelled \(bootNanoseconds())")
            withExtendedLifetime(capture) {}
        }
        if let next {
            return try await Future.rpc(until: token) { options in
                try await next.unary(request: ClientRequest(message: message), descriptor: hopMethod,
                                     serializer: TextCoder(), deserializer: TextCoder(),
                                     options: options) { try $0.message }
            }.get()
        }
        if message == "hold" {
            _ = await token.cancelled()
            throw RPCError(code: .cancelled, message: "\(name): the call's token was cancelled")
        }
        return "\(name) saw deadline \(deadline)"
    }
}

/// Serves `HopService` on a free loopback port, printed as `port N`, until
/// standard input closes.
func serveHop(name: String, nextPort: Int?) async throws {
    let transport = HTTP2ServerTransport.Posix(address: .ipv4(host: "127.0.0.1", port: 0),
                                               transportSecurity: .plaintext)
    try await withHopClient(port: nextPort) { next in
        try await withGRPCServer(transport: transport, services: [HopService(name: name, next: next)]) { server in
            guard let port = try await transport.listeningAddress.ipv4?.port else { throw RPCError(code: .internalError, message: "no port") }
            say("port \(port)")
            // Until the parent closes our standard input (or dies), read on
            // a thread of its own: not one of the Tasks' few threads.
            await withCheckedContinuation { done in
                Thread.detachNewThread {
                    _ = FileHandle.standardInput.readDataToEndOfFile()
                    done.resume()
                }
            }
            server.beginGracefulShutdown()
        }
    }
}

/// Runs `body` with a client of the service on `port` (nil: none).
func withHopClient(port: Int?, _ body: (GRPCClient<HTTP2ClientTransport.Posix>?) async throws -> Void) async throws {
    guard let port else { return try await body(nil) }
    let transport = try HTTP2ClientTransport.Posix(target: .ipv4(address: "127.0.0.1", port: port),
                                                   transportSecurity: .plaintext)
    try await withGRPCClient(transport: transport) { client in try await body(client) }
}

/// The client: `calls` calls of `message` to the service on `port`, each
/// until a token with a deadline `deadlineMs` away (nil: none) that is
/// cancelled by hand after `cancelMs` (nil: never). Prints when each starts
/// and how it ends.
func hopClient(port: Int, message: String, deadlineMs: Int?, cancelMs: Int?, calls: Int) async throws {
    try await withHopClient(port: port) { client in
        guard let client else { return }
        // Through to B once first: a call that opens a connection counts
        // its set-up after gRPC measured the timeout it sends.
        _ = try await client.unary(request: ClientRequest(message: "warm"), descriptor: hopMethod,
                                   serializer: TextCoder(), deserializer: TextCoder(),
                                   options: .defaults) { try $0.message }
        for _ in 0..<calls {
            let source = deadlineMs.map { CancelTokenSource(cancellingAfter: .milliseconds($0)) } ?? CancelTokenSource()
            say("client start \(bootNanoseconds()) deadline \(source.token.deadline.map { "\(bootNanoseconds($0))" } ?? "none")")
            if let cancelMs {
                Task {
                    try await Task.sleep(for: .milliseconds(cancelMs))
                    say("client cancel \(bootNanoseconds())")
                    source.cancel()
                }
            }
            let reply = Future<String>.rpc(until: source.token) { options in
                try await client.unary(request: ClientRequest(message: message), descriptor: hopMethod,
                                       serializer: TextCoder(), deserializer: TextCoder(),
                                       options: options) { try $0.message }
            }
            do {
                say("client reply \(try await reply.get())")
            } catch let error as RPCError {
                say("client failed \(error.code) \(bootNanoseconds())")
            } catch {
                say("client failed \(type(of: error)) \(bootNanoseconds())")
            }
        }
    }
}

/// The roles, by their command-line arguments: `grpc-b`, `grpc-a PORT_B`,
/// `grpc-client PORT MESSAGE DEADLINE_MS|none CANCEL_MS|none CALLS`.
public func runHopRole(_ arguments: [String]) async throws -> Bool {
    switch arguments.first {
    case "grpc-b": try await serveHop(name: "b", nextPort: nil)
    case "grpc-a" where arguments.count == 2: try await serveHop(name: "a", nextPort: Int(arguments[1]))
    case "grpc-client" where arguments.count == 6:
        try await hopClient(port: Int(arguments[1])!, message: arguments[2], deadlineMs: Int(arguments[3]),
                            cancelMs: Int(arguments[4]), calls: Int(arguments[5])!)
    default: return false
    }
    return true
}

/// A role in a process of its own, its standard output read line by line.
public final class HopProcess: Sendable {
    let process = Process()
    private let input = Pipe()
    private let received = ReceivedLines()

    public init(_ executable: URL, _ arguments: [String]) throws {
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        // A thread that reads until the end (not a `readabilityHandler`:
        // Foundation's dispatch source for one crashed here on Linux).
        let reading = output.fileHandleForReading
        Thread.detachNewThread { [received] in
            while case let data = reading.availableData, !data.isEmpty { received.append(data) }
        }
    }

    /// Every line so far.
    public var output: [String] { received.lines }

    /// The first line starting with `prefix`, waiting up to `seconds` for it.
    public func line(startingWith prefix: String, within seconds: Double = 20) -> String? {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if let l = output.first(where: { $0.hasPrefix(prefix) }) { return l }
            usleep(2_000)
        }
        return nil
    }

    /// Waits for the process to exit (a client), up to `seconds`.
    @discardableResult
    public func finish(within seconds: Double = 30) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < end { usleep(5_000) }
        usleep(20_000)   // the last lines
        return !process.isRunning
    }

    /// Closes its standard input (a server then stops) and waits for it.
    public func stop() {
        try? input.fileHandleForWriting.close()
        if !finish(within: 10) { process.terminate() }
    }
}

/// Text read from a pipe, as complete lines.
final class ReceivedLines: Sendable {
    private let state = Mutex<(lines: [String], partial: String)>(([], ""))

    var lines: [String] { state.withLock { $0.lines } }

    func append(_ data: Data) {
        state.withLock { state in
            state.partial += String(decoding: data, as: UTF8.self)
            var parts = state.partial.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            state.partial = parts.removeLast()
            state.lines += parts
        }
    }
}

/// `deadline-hop`: B, A and a client whose call has a 300 ms deadline, each
/// a process running this executable; prints what each one saw.
public func deadlineHopExample(executable: URL) throws -> [String] {
    let b = try HopProcess(executable, ["grpc-b"])
    defer { b.stop() }
    guard let portB = b.line(startingWith: "port ")?.dropFirst(5) else { return ["b did not start"] }
    let a = try HopProcess(executable, ["grpc-a", String(portB)])
    defer { a.stop() }
    guard let portA = a.line(startingWith: "port ")?.dropFirst(5) else { return ["a did not start"] }
    let client = try HopProcess(executable, ["grpc-client", String(portA), "hold", "300", "none", "1"])
    client.finish()
    _ = b.line(startingWith: "b cancelled", within: 2)
    guard let start = client.output.first.flatMap({ Int64($0.split(separator: " ")[2]) }) else { return ["client did not start"] }
    // Instants as milliseconds after the client's start.
    func relative(_ line: String) -> String {
        line.split(separator: " ").map { word in
            guard let ns = Int64(word), ns > 1_000_000_000 else { return String(word) }
            return "+\((ns - start) / 1_000_000) ms"
        }.joined(separator: " ")
    }
    return (client.output + a.output + b.output).filter { !$0.hasPrefix("port") }.map(relative)
}
#endif
