import CollapsingFutures
#if GRPC
import GRPCCore

extension Future {
    /// A gRPC client call as a future, until `token`.
    ///
    /// ```swift
    /// let reply = Future.rpc(until: token) { options in
    ///     try await client.unary(request: ClientRequest(message: "hi"), descriptor: method,
    ///                            serializer: coder, deserializer: coder, options: options) { try $0.message }
    /// }
    /// ```
    ///
    /// `call` runs in a Task off any actor, with `options.limited(by: token)`
    /// (taken as the Task starts): pass those options to the call, so that
    /// its `grpc-timeout` is what is left of the token's deadline. It is not
    /// called when `token` is already cancelled. Cancelling `token` cancels
    /// the Task (gRPC then cancels the call) and fails this at once. The
    /// closure must take the options: a distinct name, so that a closure
    /// without them cannot silently pick `Future(until:_:)`.
    ///
    /// The failure is decided one way:
    /// - `token`'s deadline has passed, whichever of gRPC and the token saw
    ///   it first: `RPCError` with code `.deadlineExceeded`;
    /// - `token` cancelled before its deadline: `CancellationError`;
    /// - any other `RPCError` as gRPC gives it.
    public static func rpc(until token: CancelToken, options: CallOptions = .defaults,
                           _ call: @escaping @Sendable (CallOptions) async throws -> Value) -> Future {
        Future(until: token) { try await call(options.limited(by: token)) }
            .catch(on: .completingThread) { (error: any Error) throws -> Value in
                throw _rpcFailure(error, until: token)
            }
    }
}

/// A cancel by `token` once its deadline has passed, as gRPC reports a
/// deadline (`.deadlineExceeded`); every other failure as it is.
func _rpcFailure(_ error: any Error, until token: CancelToken) -> any Error {
    guard error is CancellationError, token.isCancelled,
          let deadline = token.deadline, ContinuousClock.now >= deadline else { return error }
    return RPCError(code: .deadlineExceeded, message: "the deadline of the call's cancel token passed")
}
#else
extension Future {
    @available(*, unavailable, message: """
        the gRPC bridges need the package's GRPC trait: .package(url: …, from: "0.2.0", traits: ["GRPC"])
        """)
    public static func rpc<Options>(until token: CancelToken, options: Options,
                                    _ call: @escaping @Sendable (Options) async throws -> Value) -> Future {
        fatalError()
    }
}
#endif
