// How a node is registered: one value (`_Registration`), written through
// its presets, and the one call that registers a node with it
// (`_register(on:_:)`). What registering does — run now, discard, or push —
// is the lifecycle's (`_NodeRef._enter`, Nodes/_Lifecycle.swift).
import CCollapsingFutures
import Dispatch

/// How a node is registered: the threading it runs under, and what the
/// registration path may shortcut. Callers take one of the presets, which
/// name every combination that means something (there is none for a queue
/// with the library's bookkeeping, or the main actor with a queue); the
/// initializer is internal only because the inlinable presets call it. A
/// trivial value (the queue is borrowed from the caller for the call):
/// building one costs no reference counting. The `unless:` token goes
/// beside it, borrowed too.
@usableFromInline @frozen
struct _Registration {
    /// The threading, which `_enter` records as the node's run policy.
    @usableFromInline let threading: _Threading
    /// `.user`'s queue, borrowed for the call; nil for the rule of
    /// `CancelToken.whenCancelled` without a queue.
    @usableFromInline let queue: Unmanaged<DispatchQueue>?
    /// Whether the `unless` link also removes the node when `unless`
    /// becomes immortal: for bookkeeping that stops mattering once a
    /// result settles either way.
    @usableFromInline let removedWhenUnlessImmortal: Bool
    /// Whether, registered on a cancelled token inside a handler whose
    /// started work still waits, or `CF_INLINE_DEPTH_MAX` inline runs
    /// deep, the node queues on this thread's drain instead of running now
    /// (cf_core.h, "Drain order" and "Stack depth"). False for the
    /// library's bookkeeping, which runs now whatever the depth.
    @usableFromInline let queuesBehindStartedWork: Bool
    /// Whether another thread may reach the node already: an `unless`
    /// link, whose target is published before it. Then the push, and on a
    /// settled token its claim, decide (a remover may win).
    @usableFromInline let reachable: Bool

    @inlinable @inline(__always)
    init(_ threading: _Threading, queue: DispatchQueue? = nil, removedWhenUnlessImmortal: Bool = false,
         queuesBehindStartedWork: Bool, reachable: Bool = false) {
        self.threading = threading
        if let queue { self.queue = Unmanaged.passUnretained(queue) } else { self.queue = nil }
        self.removedWhenUnlessImmortal = removedWhenUnlessImmortal
        self.queuesBehindStartedWork = queuesBehindStartedWork
        self.reachable = reachable
    }

    /// The threadings a registration can ask for; `_enter` turns each into
    /// a `_RunPolicy`.
    @usableFromInline
    enum _Threading: UInt8 {
        /// The contract of `CancelToken.whenCancelled`: on the queue, or,
        /// without one, on the completing thread, or the main queue when
        /// registered on the main thread.
        case user
        /// Always on the main actor, after a hop (`_RunPolicy.mainActor`).
        case mainActor
        /// Inline on the completing thread (`_RunPolicy.inline`).
        case inline
        /// Inline, except on the timer driver's thread
        /// (`_RunPolicy.completingThread`).
        case offTheDriver
        /// Inline once the token settles either way
        /// (`_RunPolicy.inlineWhenSettled`).
        case whenSettled
    }

    /// A user's handler or continuation, on `queue` or by the rule of
    /// `CancelToken.whenCancelled`.
    @inlinable @inline(__always)
    static func user(queue: DispatchQueue?) -> _Registration {
        _Registration(.user, queue: queue, queuesBehindStartedWork: true)
    }

    /// The `on: MainActor` continuations: always on the main actor, after
    /// a hop, even from the main thread.
    @inlinable @inline(__always)
    static var mainActor: _Registration { _Registration(.mainActor, queuesBehindStartedWork: true) }

    /// The library's part of a continuation (forwarding an outcome, a
    /// combinator's input arriving): inline on the completing thread, as
    /// one counted inline run.
    @inlinable @inline(__always)
    static var library: _Registration { _Registration(.inline, queuesBehindStartedWork: true) }

    /// `library`, also removed when `unless` becomes immortal.
    @inlinable @inline(__always)
    static var libraryUntilUnlessSettles: _Registration {
        _Registration(.inline, removedWhenUnlessImmortal: true, queuesBehindStartedWork: true)
    }

    /// The library's step that calls the user's code (a retry's next try):
    /// inline, except on the timer driver's thread, where it goes to the
    /// firing pool (`_RunPolicy.hop`).
    @inlinable @inline(__always)
    static var libraryCallingUser: _Registration { _Registration(.offTheDriver, queuesBehindStartedWork: true) }

    /// The library's bookkeeping (links between sources, timers): inline on
    /// the cancelling thread, now, whatever the depth.
    @inlinable @inline(__always)
    static var bookkeeping: _Registration { _Registration(.inline, queuesBehindStartedWork: false) }

    /// `bookkeeping`, also removed when `unless` becomes immortal.
    @inlinable @inline(__always)
    static var bookkeepingUntilUnlessSettles: _Registration {
        _Registration(.inline, removedWhenUnlessImmortal: true, queuesBehindStartedWork: false)
    }

    /// Bookkeeping that runs once the token settles either way, cancelled
    /// or immortal, inline and now.
    @inlinable @inline(__always)
    static var whenSettled: _Registration { _Registration(.whenSettled, queuesBehindStartedWork: false) }

    /// An `unless` link (`_UnlessNode`), pushed once its target is listed.
    @inlinable @inline(__always)
    static var unlessLink: _Registration { _Registration(.inline, queuesBehindStartedWork: true, reachable: true) }
}

extension _Node {
    /// The one registration path of a `_Node`: registered on the token
    /// stored in `owner`, as `registration` says, removed by `unless`.
    /// What happens is `_enter`'s; this part, inlined into the caller, only
    /// builds the handle, so one the caller discards costs no reference
    /// counting. (A step's output future registers itself through `_enter`
    /// too, in `_StepFuture.init(from:)`.)
    @inlinable @inline(__always) @discardableResult
    func _register(on owner: AnyObject, _ registration: _Registration,
                   unless: CancelToken = .immortal) -> CancelRegistration {
        let r = _NodeRef(_ptr)._enter(owner, registration, unless: unless)
        guard r == Int32(CF_REG_ADDED) else { return CancelRegistration(neverRuns: r != Int32(CF_REG_CANCELLED)) }
        return CancelRegistration(owner: owner, node: self)
    }
}

/// The `unless` a continuation on the token stored in `owner` obeys: that
/// token itself is never cancelled *before* the continuation runs, so as
/// `unless` it never stops anything.
@inlinable @inline(__always)
func _unless(_ unless: CancelToken, forContinuationOn owner: AnyObject) -> CancelToken {
    unless._owner === owner ? .immortal : unless
}

/// The output of a continuation that will never run (its source is
/// immortal): it fails with `CancellationError` when the `unless` token
/// (owned by `unlessOwner`) is cancelled, and becomes immortal when that
/// token does, or at once without one. The registration on the `unless`
/// token holds the output alone: the continuation's function and its input
/// are already released, so a long-lived `unless` keeps nothing the
/// continuation captured alive.
@usableFromInline
func _failOnUnless(_ output: any _ContinuationOutput, _ unlessOwner: AnyObject?) {
    guard let uo = unlessOwner else {
        output._tryImmortalize()
        return
    }
    _ContinuationNode._make(output: output) { output._failCancelled() }._register(on: uo, .library)
}

extension CancelToken {
    /// The library's own handlers (links between sources, timers, combinator
    /// bookkeeping): `action` runs inline on the cancelling thread, with no
    /// main-queue hop and no queue — at once if this token is already
    /// cancelled; never if it is or becomes immortal (nothing is registered on
    /// `.immortal` or a settled token), or if `unless` is cancelled first.
    @discardableResult
    func _whenCancelledInline(unless: CancelToken, _ action: @escaping @Sendable () -> Void) -> CancelRegistration {
        _whenCancelledInline(.bookkeeping, unless: unless, action)
    }

    /// `_whenCancelledInline`, whose registration also goes when `output`
    /// becomes immortal: bookkeeping for a result, which stops mattering
    /// once that result settles either way.
    @discardableResult
    func _whenCancelledInline(untilSettled output: CancelToken,
                              _ action: @escaping @Sendable () -> Void) -> CancelRegistration {
        _whenCancelledInline(.bookkeepingUntilUnlessSettles, unless: output, action)
    }

    private func _whenCancelledInline(_ registration: _Registration, unless: CancelToken,
                                      _ action: @escaping @Sendable () -> Void) -> CancelRegistration {
        guard let owner = _owner else { return CancelRegistration(neverRuns: true) }
        return _HandlerNode._make(action)._register(on: owner, registration, unless: unless)
    }

    /// Library bookkeeping that must happen once the token settles either
    /// way (removing registrations that stopped mattering, stopping a
    /// timer): `action` runs inline on the settling thread when the token is
    /// cancelled or becomes immortal, at once if it already has. Returns the
    /// registration, for bookkeeping that itself stops mattering earlier.
    @discardableResult
    func _whenSettledInline(_ action: @escaping @Sendable () -> Void) -> CancelRegistration {
        guard let owner = _owner else { action(); return CancelRegistration(neverRuns: false) }
        let r = _HandlerNode._make(action)._register(on: owner, .whenSettled)
        // Not pushed: `action` has run, whichever way the token settled.
        return r._node != nil ? r : CancelRegistration(neverRuns: false)
    }

    /// Removes `registrations` (O(n), once) when this token settles either
    /// way: what a combinator registered on its inputs stops mattering with
    /// its result.
    func _removeWhenSettled(_ registrations: [CancelRegistration]) {
        _whenSettledInline { for r in registrations { r.remove() } }
    }
}
