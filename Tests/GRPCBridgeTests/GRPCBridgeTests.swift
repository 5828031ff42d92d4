// Built with the package's GRPC trait (`make test` enables it). The bridge
// in one process, with a ServerContext made by hand; the cross-process
// tests are in ExamplesTests (GRPCHopTests).
#if GRPC
import CollapsingFutures
import CollapsingFuturesGRPC
import GRPCCore
import Testing
import TestSupport

func context() -> ServerContext {
    ServerContext(descriptor: MethodDescriptor(fullyQualifiedService: "test.Service", method: "Call"),
                  remotePeer: "test", localPeer: "test", cancellation: .init())
}

func metadata(timeout: String?) -> Metadata {
    var m: Metadata = [:]
    if let timeout { m.addString(timeout, forKey: "grpc-timeout") }
    return m
}

@Suite struct RPCCancelTokens {
    @Test(arguments: [("7H", Duration.seconds(7 * 3_600)), ("3M", .seconds(180)), ("20S", .seconds(20)),
                      ("2500m", .milliseconds(2_500)), ("4000000u", .seconds(4)), ("50000000n", .milliseconds(50)),
                      ("99999999m", .milliseconds(99_999_999))])
    func theDeadlineIsTheRequestsTimeoutInEachUnit(_ header: String, _ timeout: Duration) async {
        let before = ContinuousClock.now
        let deadline = await withRPCCancelToken(context(), metadata: metadata(timeout: header)) { $0.deadline }
        let after = ContinuousClock.now
        // Counted from the call.
        #expect(deadline.map { $0 >= before + timeout && $0 <= after + timeout } == true, "\(header)")
    }

    @Test(arguments: [nil, "", "5", "m", "123456789m", "-5m", "+5m", "5x", "5 m", " 5m", "5M5", "٣m", "5mm", "5000000000n"])
    func anAbsentOrMalformedTimeoutIsNoDeadline(_ header: String?) async {
        let (deadline, cancelled) = await withRPCCancelToken(context(), metadata: metadata(timeout: header)) { token in
            (token.deadline, token.isCancelled)
        }
        #expect(deadline == nil, "\(String(describing: header))")
        #expect(!cancelled)
    }

    @Test func aZeroTimeoutHasPassedAndIsStillADeadline() async {
        let (deadline, cancelled) = await withRPCCancelToken(context(), metadata: metadata(timeout: "0n")) { token in
            (token.deadline, await token.cancelled())
        }
        #expect(deadline != nil)
        #expect(cancelled)
    }

    @Test func theTokenIsCancelledWhenGRPCCancelsTheRPC() async {
        let rpc = context()
        let cancelled = await withRPCCancelToken(rpc, metadata: [:]) { token in
            #expect(!token.isCancelled)
            rpc.cancellation.cancel()
            return await token.cancelled()
        }
        #expect(cancelled)
    }

    @Test func anRPCCancelledAlreadyGivesACancelledToken() async {
        let rpc = context()
        rpc.cancellation.cancel()
        let cancelled = await withRPCCancelToken(rpc, metadata: [:]) { token in await token.cancelled() }
        #expect(cancelled)
    }

    @Test func theTokenIsCancelledWhenTheCallingTaskIs() async {
        let started = CancelTokenSource()
        let task = Task {
            await withRPCCancelToken(context(), metadata: [:]) { token in
                started.cancel()
                return await token.cancelled()
            }
        }
        _ = await started.token.cancelled()
        task.cancel()
        #expect(await task.value)
    }

    @Test func theTokenOfTheClientsDeadlineIsCancelledAtIt() async {
        let cancelled = await withRPCCancelToken(context(), metadata: metadata(timeout: "20m")) { token in
            await token.cancelled()
        }
        #expect(cancelled)
    }

    /// Nothing stays registered once the body returns: what handlers on the
    /// token captured is freed, whether the RPC ends well, is cancelled by
    /// gRPC or by its deadline.
    @Test(arguments: [nil, "cancel", "1m"])
    func nothingStaysRegisteredAfterTheBody(_ ending: String?) async {
        let deinits = Counter()
        let ran = Counter()
        for _ in 0..<200 {
            let rpc = context()
            await withRPCCancelToken(rpc, metadata: metadata(timeout: ending == "1m" ? "1m" : nil)) { token in
                let capture = Tracked(deinits)
                token.whenCancelled(on: .completingThread) { capture.touch(); ran.increment() }
                if ending == "cancel" { rpc.cancellation.cancel() }
                if ending != nil { _ = await token.cancelled() }
            }
        }
        #expect(await eventually { deinits.value == 200 })
        #expect(ran.value == (ending == nil ? 0 : 200))
    }

    @Test func itCanBeCalledFromAnActor() async {
        actor Handler {
            var seen: ContinuousClock.Instant?
            func handle(_ context: ServerContext) async {
                await withRPCCancelToken(context, metadata: metadata(timeout: "1S")) { token in
                    seen = token.deadline   // isolated to the actor: no hop, no Sendable capture
                }
            }
        }
        let handler = Handler()
        await handler.handle(context())
        #expect(await handler.seen != nil)
    }
}

@Suite struct LimitedCallOptions {
    @Test func aTokenWithoutDeadlineLeavesTheOptions() {
        var options = CallOptions.defaults
        #expect(options.limited(by: CancelTokenSource().token).timeout == nil)
        #expect(options.limited(by: .immortal).timeout == nil)
        options.timeout = .seconds(3)
        #expect(options.limited(by: CancelTokenSource().token).timeout == .seconds(3))
    }

    @Test func aSoonerDeadlineLimitsTheTimeout() {
        let source = CancelTokenSource(cancellingAfter: .seconds(3_600))
        var options = CallOptions.defaults
        let limited = options.limited(by: source.token).timeout
        #expect(limited.map { $0 <= .seconds(3_600) && $0 > .seconds(3_000) } == true)
        options.timeout = .seconds(1)
        #expect(options.limited(by: source.token).timeout == .seconds(1))
        options.timeout = .seconds(7_200)
        #expect(options.limited(by: source.token).timeout.map { $0 <= .seconds(3_600) } == true)
    }

    @Test func aCancelledTokenGivesAZeroTimeout() {
        let source = CancelTokenSource()
        source.cancel()
        var options = CallOptions.defaults
        options.timeout = .seconds(5)
        #expect(options.limited(by: source.token).timeout == .zero)
        let passed = CancelTokenSource(cancellingAfter: .nanoseconds(1))
        #expect(eventually { passed.token.isCancelled })
        #expect(CallOptions.defaults.limited(by: passed.token).timeout == .zero)
    }
}

@Suite struct RPCFutures {
    @Test func theCallGetsTheLimitedOptionsAndItsOutcomeIsTheFutures() async throws {
        // Deadlines an hour away where they are not the subject: a loaded
        // machine may start the call's Task much later than now.
        let source = CancelTokenSource(cancellingAfter: .seconds(3_600))
        var given = CallOptions.defaults
        given.timeout = .seconds(7_200)
        let seen = Locked<Duration?>(nil)
        let reply = Future<String>.rpc(until: source.token, options: given) { options in
            seen.withLock { $0 = options.timeout }
            return "ok"
        }
        #expect(try await reply.get() == "ok")
        #expect(seen.withLock { $0 }.map { $0 <= .seconds(3_600) && $0 > .seconds(3_000) } == true)
    }

    @Test func aCancelledTokenCallsNothing() async {
        let calls = Counter()
        let source = CancelTokenSource()
        source.cancel()
        let reply = Future<Int>.rpc(until: source.token) { _ in calls.increment(); return 1 }
        await #expect(throws: CancellationError.self) { try await reply.get() }
        let passed = CancelTokenSource(cancellingAfter: .nanoseconds(1))
        #expect(await eventually { passed.token.isCancelled })
        let late = Future<Int>.rpc(until: passed.token) { _ in calls.increment(); return 1 }
        await #expect(throws: RPCError.self) { try await late.get() }
        #expect((late.result.flatMap { try? $0.get() }) == nil)
        if case .failure(let e as RPCError)? = late.result { #expect(e.code == .deadlineExceeded) }
        #expect(calls.value == 0)
    }

    @Test func aCancelBeforeTheDeadlineIsCancellationErrorAndCancelsTheCall() async {
        let source = CancelTokenSource(cancellingAfter: .seconds(3_600))
        let callCancelled = CancelTokenSource()
        let started = CancelTokenSource()
        let reply = Future<Int>.rpc(until: source.token) { _ in
            started.cancel()
            await withTaskCancellationHandler {
                _ = await callCancelled.token.cancelled()
            } onCancel: { callCancelled.cancel() }
            throw RPCError(code: .cancelled, message: "cancelled by its task")
        }
        _ = await started.token.cancelled()
        source.cancel()
        await #expect(throws: CancellationError.self) { try await reply.get() }
        #expect(await callCancelled.token.cancelled())
    }

    @Test func theTokensDeadlineIsDeadlineExceeded() async {
        let source = CancelTokenSource(cancellingAfter: .milliseconds(20))
        let reply = Future<Int>.rpc(until: source.token) { _ in
            try await Task.sleep(for: .seconds(30))
            return 1
        }
        do {
            _ = try await reply.get()
            Issue.record("the call succeeded past its deadline")
        } catch let error as RPCError {
            #expect(error.code == .deadlineExceeded)
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func otherRPCErrorsArriveUnchanged() async {
        let reply = Future<Int>.rpc(until: CancelTokenSource(cancellingAfter: .seconds(3_600)).token) { _ in
            throw RPCError(code: .unavailable, message: "down")
        }
        await #expect(throws: RPCError(code: .unavailable, message: "down")) { try await reply.get() }
        let gRPCsOwn = Future<Int>.rpc(until: .immortal) { _ in
            throw RPCError(code: .deadlineExceeded, message: "RPC timed out before completing")
        }
        await #expect(throws: RPCError(code: .deadlineExceeded, message: "RPC timed out before completing")) {
            try await gRPCsOwn.get()
        }
    }

    @Test func whatTheCallCapturedIsFreedOnceItEnds() async {
        let deinits = Counter()
        for _ in 0..<100 {
            let capture = Tracked(deinits)
            let source = CancelTokenSource()
            let reply = Future<Int>.rpc(until: source.token) { _ in
                capture.touch()
                try await Task.sleep(for: .seconds(30))
                return 1
            }
            source.cancel()
            _ = try? await reply.get()
        }
        #expect(await eventually { deinits.value == 100 })
    }
}
#endif
