import Dispatch

extension DispatchQueue {
    /// Not a queue to dispatch to but a marker for `on:`: run the handler
    /// inline on the thread that cancels the token or completes the future,
    /// even if it was registered on the main thread.
    ///
    /// By default a handler registered on the main thread runs on the main
    /// queue. A program whose main thread blocks (a command-line tool's
    /// synchronous `main`, a server's main thread waiting for shutdown) never
    /// drains that queue, so such handlers would never run; pass
    /// `on: .completingThread` to run them where the completion happens:
    ///
    ///     reply.thenDo(on: .completingThread) { print($0) }
    public static let completingThread = DispatchQueue(label: "CollapsingFutures.completingThread (a marker; never used)")
}
