import Dispatch

/// When and where a node's action runs: the threading contract it was
/// registered under (`_Node._setThreading`), and, for the library's
/// bookkeeping, whether its token becoming immortal runs it too.
///
/// One word: the empty cases take values a `DispatchQueue` reference never
/// has, so a node stores its policy in the space of the queue alone.
@usableFromInline
enum _RunPolicy {
    /// On the completing thread, once the token is cancelled.
    case inline
    /// On the settling thread, once the token is cancelled or has become
    /// immortal (`CancelToken._whenSettledInline`).
    case inlineWhenSettled
    /// Registered on the main thread: on the main queue when the token is
    /// cancelled elsewhere, inline when it is cancelled there.
    case mainQueueUnlessThere
    /// On this queue.
    case queue(DispatchQueue)
}
