// The cost of the gRPC bridge (`make bench-grpc`, which enables the
// package's GRPC trait): a unary call on loopback over grpc-swift's HTTP/2
// transport, with the bridge on both sides (the client's options limited by
// a deadline token, the handler inside withRPCCancelToken) and without it
// (the same timeout set by hand, so that both send a grpc-timeout and gRPC's
// own deadline work is the same): the difference is the bridge's.
#if GRPC
import BenchKit
import CollapsingFutures
import CollapsingFuturesGRPC
import Dispatch
import GRPCCore
import GRPCNIOTransportHTTP2Posix

struct BenchText: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: String) throws -> Bytes { Bytes(Array(message.utf8)) }
    func deserialize<Bytes: GRPCContiguousBytes>(_ bytes: Bytes) throws -> String {
        bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }
}

let plainEcho = MethodDescriptor(fullyQualifiedService: "bench.Echo", method: "Plain")
let bridgedEcho = MethodDescriptor(fullyQualifiedService: "bench.Echo", method: "Bridged")

struct BenchEcho: RegistrableRPCService {
    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        router.registerHandler(forMethod: plainEcho, deserializer: BenchText(), serializer: BenchText()) { stream, _ in
            let request = try await ServerRequest(stream: stream)
            return StreamingServerResponse(single: ServerResponse(message: request.message))
        }
        router.registerHandler(forMethod: bridgedEcho, deserializer: BenchText(), serializer: BenchText()) { stream, context in
            let request = try await ServerRequest(stream: stream)
            let reply = await withRPCCancelToken(context, metadata: request.metadata) { _ in request.message }
            return StreamingServerResponse(single: ServerResponse(message: reply))
        }
    }
}

/// A server and a client on loopback, started on first use and kept for the run.
let grpcLoopback: GRPCClient<HTTP2ClientTransport.Posix> = {
    let transport = HTTP2ServerTransport.Posix(address: .ipv4(host: "127.0.0.1", port: 0), transportSecurity: .plaintext)
    let server = GRPCServer(transport: transport, services: [BenchEcho()])
    Task.detached { try await server.serve() }
    let port = Locked(0)
    blockingAsync { port.set(try! await transport.listeningAddress.ipv4!.port) }
    let client = GRPCClient(transport: try! HTTP2ClientTransport.Posix(
        target: .ipv4(address: "127.0.0.1", port: port.get()), transportSecurity: .plaintext))
    Task.detached { try await client.runConnections() }
    return client
}()

/// A value set on one thread and read on another.
final class Locked<T: Sendable>: @unchecked Sendable {
    private var value: T
    private let lock = DispatchQueue(label: "bench.locked")
    init(_ value: T) { self.value = value }
    func set(_ v: T) { lock.sync { value = v } }
    func get() -> T { lock.sync { value } }
}

func grpcUnary(bridged: Bool) -> Body {
    { it in
        let client = grpcLoopback
        blockingAsync {
            for _ in 0..<it {
                let reply: String
                if bridged {
                    let deadline = CancelTokenSource(cancellingAfter: .seconds(30))
                    reply = try! await client.unary(request: ClientRequest(message: "ping"), descriptor: bridgedEcho,
                                                    serializer: BenchText(), deserializer: BenchText(),
                                                    options: CallOptions.defaults.limited(by: deadline.token)) { try $0.message }
                } else {
                    var options = CallOptions.defaults
                    options.timeout = .seconds(30)
                    reply = try! await client.unary(request: ClientRequest(message: "ping"), descriptor: plainEcho,
                                                    serializer: BenchText(), deserializer: BenchText(),
                                                    options: options) { try $0.message }
                }
                precondition(reply == "ping")
            }
        }
    }
}

func grpcScenarios() -> [Scenario] {
    [Scenario(name: "gRPC unary call on loopback",
              summary: "a unary call over HTTP/2 on loopback with a 30 s timeout; ours: its options limited by a deadline token and the handler inside withRPCCancelToken; grpc: the same timeout set by hand, a plain handler",
              opsPerIteration: 1, iterations: 2_000,
              bodies: ["lockfree": grpcUnary(bridged: true), "grpc": grpcUnary(bridged: false)])]
}
#endif
