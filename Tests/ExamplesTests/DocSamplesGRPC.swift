// The gRPC samples of README.md and DeadlinesAcrossServices.md, compiled
// with the package's GRPC trait (DocSamplesTests checks the blocks appear
// here verbatim). The stand-ins: a method, a text coder, a lookup.
#if GRPC
import CollapsingFutures
import CollapsingFuturesGRPC
import GRPCCore
import Testing

let askMethod = MethodDescriptor(fullyQualifiedService: "samples.Ask", method: "Ask")

struct TextCoder: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: String) throws -> Bytes { Bytes(Array(message.utf8)) }
    func deserialize<Bytes: GRPCContiguousBytes>(_ bytes: Bytes) throws -> String {
        bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }
}

func lookUp(_ question: String, until token: CancelToken) -> Future<String> {
    Future.delayed("answer to \(question)", by: .milliseconds(1), unless: token)
}

// MARK: DeadlinesAcrossServices.md (README.md's sample is its service A)

// The client: a deadline, and the call limited by it.
func askA(_ a: GRPCClient<some ClientTransport>, _ question: String) async throws -> String {
    let deadline = CancelTokenSource(cancellingAfter: .milliseconds(300))
    return try await Future.rpc(until: deadline.token) { options in
        try await a.unary(request: ClientRequest(message: question), descriptor: askMethod,
                          serializer: TextCoder(), deserializer: TextCoder(), options: options) { try $0.message }
    }.get()
}

// Service A: its token carries the client's deadline; the call to B gets what is left.
func serveA(_ request: ServerRequest<String>, _ context: ServerContext,
            b: GRPCClient<some ClientTransport>) async throws -> ServerResponse<String> {
    try await withRPCCancelToken(context, metadata: request.metadata) { token in
        let answer = try await Future.rpc(until: token) { options in
            try await b.unary(request: ClientRequest(message: request.message), descriptor: askMethod,
                              serializer: TextCoder(), deserializer: TextCoder(), options: options) { try $0.message }
        }.get()
        return ServerResponse(message: answer)
    }
}

// Service B: the work stops when the client's deadline passes, or the client goes away.
func serveB(_ request: ServerRequest<String>, _ context: ServerContext) async throws -> ServerResponse<String> {
    try await withRPCCancelToken(context, metadata: request.metadata) { token in
        let answer = lookUp(request.message, until: token)   // a Future<String>
        return ServerResponse(message: try await answer.get())
    }
}

@Suite struct GRPCDocSamples {
    /// Service B's sample answers within the deadline, and fails when the
    /// RPC is cancelled first.
    @Test func serviceBAnswersUntilItsRPCIsCancelled() async throws {
        let context = ServerContext(descriptor: askMethod, remotePeer: "", localPeer: "", cancellation: .init())
        var metadata: Metadata = [:]
        metadata.addString("1H", forKey: "grpc-timeout")
        let response = try await serveB(ServerRequest(metadata: metadata, message: "life"), context)
        #expect(try response.message == "answer to life")
        context.cancellation.cancel()
        await #expect(throws: CancellationError.self) {
            _ = try await serveB(ServerRequest(metadata: metadata, message: "life"), context)
        }
    }
}
#endif
