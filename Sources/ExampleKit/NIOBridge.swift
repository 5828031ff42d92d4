// Futures and swift-nio: a value from the library awaited by NIO code, an
// orphaned future that fails NIO's instead of hanging it, and a server
// handler that answers with a library future. Built with the package's NIO
// trait (`make test` enables it).
#if NIO
import CollapsingFutures
import CollapsingFuturesNIO
import NIOCore
import NIOEmbedded
import NIOPosix

/// Answers each inbound line with `lookup`'s future, on the channel's loop.
public final class LookupHandler: ChannelInboundHandler, Sendable {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer
    let lookup: @Sendable (String) -> Future<String>

    public init(lookup: @escaping @Sendable (String) -> Future<String>) { self.lookup = lookup }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let key = String(buffer: unwrapInboundIn(data))
        lookup(key).eventLoopFuture(on: context.eventLoop).assumeIsolated().whenComplete { result in
            let text: String
            switch result {
            case .success(let value): text = value
            case .failure(let error): text = "error: \(error)"
            }
            context.writeAndFlush(NIOAny(ByteBuffer(string: text)), promise: nil)
        }
    }
}

public func nioBridgeExample() async -> [String] {
    let out = Lines()
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop = group.next()
    // The library's future, awaited as an EventLoopFuture.
    let source = FutureSource<String>()
    let onLoop = source.future.eventLoopFuture(on: loop)
    source.trySetResult("from the library")
    out.say("nio got: \((try? await onLoop.get()) ?? "nothing")")
    // Its producer dies unset: NIO's future fails instead of hanging.
    var producer: FutureSource<String>? = FutureSource<String>()
    let orphan = producer!.future.eventLoopFuture(on: loop)
    producer = nil
    do { _ = try await orphan.get() } catch { out.say("orphan failed with FutureError.immortal: \(error as? FutureError == .immortal)") }
    // An EventLoopFuture as the library's future.
    out.say("library got: \((try? Future(loop.submit { "from the loop" }).wait()) ?? "nothing")")
    out.say("handler replied: \(handlerReply(to: "ada") ?? "nothing")")
    try? await group.shutdownGracefully()
    return out.all
}

/// The handler, driven through an embedded channel (on one thread, as
/// `EmbeddedEventLoop` requires: no `await` in here).
func handlerReply(to line: String) -> String? {
    let channel = EmbeddedChannel(handler: LookupHandler { key in .succeeded(key.uppercased()) })
    defer { _ = try? channel.finish() }
    _ = try? channel.writeInbound(ByteBuffer(string: line))
    channel.embeddedEventLoop.run()
    return (try? channel.readOutbound(as: ByteBuffer.self)).flatMap { $0 }.map { String(buffer: $0) }
}
#endif
