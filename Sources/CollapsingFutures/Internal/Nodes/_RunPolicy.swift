import CCollapsingFutures
import Dispatch

/// When and where a node's action runs: the threading contract it was
/// registered under (`_NodeRef._enter`), and, for the library's
/// bookkeeping, whether its token becoming immortal runs it too. A node
/// registered with an `unless:` token keeps its link here instead, and the
/// link keeps the contract (`_UnlessNode.targetPolicy`).
///
/// One word: the empty cases take values that neither a `DispatchQueue`
/// nor an `_UnlessNode` reference ever has, so a node stores its threading
/// and its link in the space of one reference (which keeps a handler's node
/// in the 64-byte malloc size class).
@usableFromInline
enum _RunPolicy {
    /// The library's bookkeeping: on the completing thread, once the token
    /// is cancelled, even the timer driver's (it never blocks).
    case inline
    /// A user's handler or continuation on the completing thread, once the
    /// token is cancelled; when that is the timer driver's, on the firing
    /// pool instead (cf_firing_pool.h), so user code never delays a timer.
    case completingThread
    /// On the settling thread, once the token is cancelled or has become
    /// immortal (`CancelToken._whenSettledInline`).
    case inlineWhenSettled
    /// Registered on the main thread: on the main queue when the token is
    /// cancelled elsewhere, inline when it is cancelled there.
    case mainQueueUnlessThere
    /// On this queue.
    case queue(DispatchQueue)
    /// On the main actor, always after a hop (a `Task` on it), even from
    /// the main thread: what the `on: MainActor` continuations promise.
    case mainActor
    /// As `link.targetPolicy` says; `link` is registered on the `unless`
    /// token (or about to be), and the node removes it when it settles, so
    /// nothing accumulates on a long-lived `unless` token.
    case linked(_UnlessNode)
    /// The link was removed or dropped, once the node settled (its contract
    /// read first). The link may still hold a registration that calls
    /// `cf_node_remove` on the node (a cancel of `unless` racing the run),
    /// so the node is not registered again while that registration is
    /// held (it is kept for reuse only once nothing holds it).
    case unlinked

    /// The contract, read through the link while there is one.
    var threading: _RunPolicy {
        if case .linked(let link) = self { return link.targetPolicy }
        return self
    }

    /// Where a run must hop to under this contract, a queue, the main
    /// actor, or the firing pool (`.completingThread` on the timer
    /// driver's thread); nil to run inline (and for a link: ask its
    /// `targetPolicy`).
    @inline(__always)
    var hop: _RunPolicy? {
        switch self {
        case .queue, .mainActor: return self
        case .mainQueueUnlessThere: return _isOnMain() ? nil : .queue(DispatchQueue.main)
        case .completingThread: return cf_wheel_on_driver_thread() != 0 ? self : nil
        case .inline, .inlineWhenSettled, .linked, .unlinked: return nil
        }
    }

    /// The owner of the `unless` token while linked.
    var unlessOwner: AnyObject? {
        if case .linked(let link) = self { return link.unlessOwner }
        return nil
    }
}
