@_spi(Bridges) import CollapsingFutures
#if GRPC
import GRPCCore

/// Runs `body` with a token for the RPC being handled.
///
/// The token is cancelled when gRPC cancels the RPC (`context.cancellation`:
/// the client went away, or the deadline it sent passed), from any task, and
/// when the calling Task is cancelled. Its `deadline` is the client's
/// deadline as this hop sees it: the request's `grpc-timeout`, counted from
/// this call (each hop's transit shortens it, as in gRPC itself); nil when
/// the client sent none, or one that does not parse (1 to 8 ASCII digits and
/// one of the units `H M S m u n`), or one of 100 years or more.
///
/// ```swift
/// router.registerHandler(forMethod: method, deserializer: coder, serializer: coder) { stream, context in
///     let request = try await ServerRequest(stream: stream)
///     let reply = try await withRPCCancelToken(context, metadata: request.metadata) { token in
///         try await lookUp(request.message, until: token).get()
///     }
///     return StreamingServerResponse(single: ServerResponse(message: reply))
/// }
/// ```
///
/// gRPC reports a cancelled RPC through `context.cancellation`, not by
/// cancelling the handler's Task: a child task here waits on that handle, so
/// the token follows it whichever task calls this, and with a `ServerContext`
/// made by hand (a test's). Nothing stays registered once `body` returns: the
/// child task is cancelled and awaited, the task cancellation handler is
/// gone, and the token's source dies with the call (a token not cancelled by
/// then becomes immortal, discarding what `body` registered on it). Handlers
/// already queued on the firing pool may still run after it returns (see
/// <doc:Threading>).
public func withRPCCancelToken<R>(
    _ context: ServerContext, metadata: Metadata,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (CancelToken) async throws -> R
) async rethrows -> R {
    let source = _grpcTimeout(in: metadata).map {
        // "0n" keeps its deadline (passed at once): a source made with a
        // zero duration is cancelled without one, and a `Future.rpc` further
        // down could not tell the deadline from a cancel.
        CancelTokenSource(cancellingAfter: max($0, .nanoseconds(1)))
    } ?? CancelTokenSource()
    let rpc = context.cancellation
    // Already cancelled: so before `body` starts, not when the child task runs.
    if rpc.isCancelled { source.cancel() }
    return try await withThrowingTaskGroup(of: Void.self, isolation: isolation) { group in
        group.addTask {
            // Throws (and cancels nothing) when the group is cancelled first.
            do { try await rpc.cancelled } catch { return }
            source.cancel()
        }
        defer { group.cancelAll() }
        // The calling Task's cancel, as `withCancelToken` has it: in that
        // Task, `await token.cancelled()` then returns true.
        return try await withCancelToken(cancelling: source, body)
    }
}
#else
/// Without the package's GRPC trait this module has no bridges: say how to
/// get them where a user looks for one.
@available(*, unavailable, message: """
    the gRPC bridges need the package's GRPC trait: .package(url: …, from: "0.2.0", traits: ["GRPC"])
    """)
public func withRPCCancelToken<Context, Metadata, R>(_ context: Context, metadata: Metadata,
                                                     _ body: (CancelToken) async throws -> R) async rethrows -> R {
    fatalError()
}
#endif
