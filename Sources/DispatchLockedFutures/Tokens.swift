// The Dispatch-lock baseline: the same public API as CollapsingFutures, with
// each token's state and handler list guarded by a lock, as the original
// Objective-C library did with @synchronized.
import Dispatch
import Synchronization

public enum CancelTokenState: Sendable, Hashable { case stillCancellable, cancelled, immortal }

/// One registered handler. Its fields are guarded by its token's lock.
final class _Entry: @unchecked Sendable {
    var handler: (@Sendable () -> Void)?
    var queue: DispatchQueue?
    var mainSticky = false
    var onDiscard: (() -> Void)?
    var onUnlessRemoved: (() -> Void)?
    var companion: CancelRegistration?
    /// Guarded by the token's lock: live, then exactly one of ran (claimed
    /// to run), removed or discarded. Claimed when its turn in the drain
    /// comes, so a remove() made by an earlier handler still wins.
    var fate = _Fate.live
    init(_ h: @escaping @Sendable () -> Void) { handler = h }

    /// Runs the handler where the threading contract says. After a hop,
    /// it runs only if `unless` (the `unless:` token's state) has not been
    /// cancelled meanwhile; else it counts as removed by `unless`.
    func fire(unless: _TokenState? = nil) {
        guard let h = handler else { return }
        handler = nil
        let hop = queue ?? (mainSticky && !_isMainThread() ? DispatchQueue.main : nil)
        guard let hop else { h(); return }
        nonisolated(unsafe) let removed = onUnlessRemoved
        onUnlessRemoved = nil
        hop.async {
            if let unless, unless.lock.sync({ unless.state == .cancelled }) { removed?() } else { h() }
        }
    }
}

enum _Fate { case live, ran, removed, discarded }

final class _TokenState: @unchecked Sendable {
    let lock = _Lock()
    var state: CancelTokenState
    var handlers: [_Entry] = []
    init(_ s: CancelTokenState) { state = s }

    @discardableResult
    func settle(_ to: CancelTokenState) -> Bool {
        let taken: [_Entry]? = lock.sync {
            guard state == .stillCancellable else { return nil }
            state = to
            let h = handlers
            handlers = []
            return h
        }
        guard let taken else { return false }
        _Drain.run(taken.map { e in { self.settleTaken(e, to) } })
        return true
    }

    /// Runs or discards an entry taken off the list (or queued unlinked),
    /// if nothing removed it before its turn.
    func settleTaken(_ e: _Entry, _ to: CancelTokenState) {
        let won = lock.sync { () -> Bool in
            guard e.fate == .live else { return false }
            e.fate = to == .cancelled ? .ran : .discarded
            return true
        }
        guard won else { return }
        let unless = e.companion?.state
        e.companion?._removeQuietly()
        e.companion = nil
        if to == .cancelled {
            e.fire(unless: unless)
        } else {
            e.handler = nil; e.onDiscard?(); e.onDiscard = nil
        }
    }

    /// Adds `e`, or returns the settled state without adding.
    func add(_ e: _Entry) -> CancelTokenState {
        lock.sync {
            if state == .stillCancellable { handlers.append(e) }
            return state
        }
    }

    /// Removes `e` if it has not been claimed (linear, as the original's array).
    func remove(_ e: _Entry) -> Bool {
        lock.sync {
            guard e.fate == .live else { return false }
            e.fate = .removed
            if let i = handlers.firstIndex(where: { $0 === e }) { handlers.remove(at: i) }
            return true
        }
    }
}

public struct CancelRegistration: Sendable {
    let state: _TokenState?
    let entry: _Entry?
    let neverRuns: Bool

    @discardableResult
    public func remove() -> Bool {
        guard let state, let entry else { return neverRuns }
        if state.remove(entry) {
            entry.handler = nil
            entry.onDiscard = nil
            entry.companion?._removeQuietly()
            entry.companion = nil
            return true
        }
        return state.lock.sync { entry.fate != .ran }
    }

    func _removeQuietly() { _ = remove() }

    func _removeByUnless() {
        guard let state, let entry else { return }
        if state.remove(entry) {
            entry.handler = nil
            entry.onDiscard = nil
            entry.companion = nil
            let f = entry.onUnlessRemoved
            entry.onUnlessRemoved = nil
            f?()
        }
    }
}

public struct CancelToken: Sendable, Hashable, CustomStringConvertible {
    let _s: _TokenState?

    public static let cancelled = CancelToken(_s: _TokenState(.cancelled))
    public static let immortal = CancelToken(_s: nil)

    public var state: CancelTokenState {
        guard let s = _s else { return .immortal }
        return s.lock.sync { s.state }
    }
    public var isCancelled: Bool { state == .cancelled }
    public var canStillBeCancelled: Bool { state == .stillCancellable }
    public var description: String { "CancelToken(\(state))" }
    public static func == (a: CancelToken, b: CancelToken) -> Bool { a._s === b._s }
    public func hash(into h: inout Hasher) { h.combine(_s.map { ObjectIdentifier($0) }) }

    @discardableResult
    public func whenCancelled(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                              _ handler: @escaping @Sendable () -> Void) -> CancelRegistration {
        let e = _Entry(handler)
        if let queue { e.queue = queue } else if _isMainThread() { e.mainSticky = true }
        return _add(e, unless: unless)
    }

    func _add(_ e: _Entry, unless: CancelToken, removeOnUnlessImmortal: Bool = false) -> CancelRegistration {
        guard let s = _s else {
            e.handler = nil; e.onDiscard?()
            return CancelRegistration(state: nil, entry: nil, neverRuns: true)
        }
        if unless._s === s || unless.isCancelled {
            e.handler = nil
            e.onUnlessRemoved?()
            return CancelRegistration(state: nil, entry: nil, neverRuns: true)
        }
        let reg = CancelRegistration(state: s, entry: e, neverRuns: false)
        if let us = unless._s {
            let link = _Entry { reg._removeByUnless() }
            if removeOnUnlessImmortal { link.onDiscard = { reg._removeQuietly() } }
            e.companion = CancelRegistration(state: us, entry: link, neverRuns: false)
            switch s.add(e) {
            case .cancelled where _Drain.mustQueue:
                _Drain.run([{ s.settleTaken(e, .cancelled) }])
                _addLink(link, on: us)
            case .cancelled:
                e.companion = nil
                e.fate = .ran
                _Drain.runInline { e.fire(unless: us) }
                return CancelRegistration(state: nil, entry: nil, neverRuns: false)
            case .immortal:
                e.companion = nil
                e.handler = nil; e.onDiscard?()
                return CancelRegistration(state: nil, entry: nil, neverRuns: true)
            case .stillCancellable:
                _addLink(link, on: us)
            }
            return reg
        }
        switch s.add(e) {
        case .cancelled where _Drain.mustQueue:
            _Drain.run([{ s.settleTaken(e, .cancelled) }])
            return reg
        case .cancelled:
            e.fate = .ran
            _Drain.runInline { e.fire() }
            return CancelRegistration(state: nil, entry: nil, neverRuns: false)
        case .immortal:
            e.handler = nil; e.onDiscard?()
            return CancelRegistration(state: nil, entry: nil, neverRuns: true)
        case .stillCancellable:
            return reg
        }
    }

    /// Pushes the unless-link of an entry that was registered (or queued).
    private func _addLink(_ link: _Entry, on us: _TokenState) {
        switch us.add(link) {
        case .cancelled where _Drain.mustQueue: _Drain.run([{ us.settleTaken(link, .cancelled) }])
        case .cancelled: link.fate = .ran; link.fire()
        case .immortal: link.handler = nil; link.onDiscard?()
        case .stillCancellable: break
        }
    }

    public static func any(_ tokens: CancelToken...) -> CancelToken { any(tokens) }
    public static func any(_ tokens: [CancelToken]) -> CancelToken {
        var live: [CancelToken] = []
        for t in tokens {
            switch t.state {
            case .cancelled: return .cancelled
            case .immortal: continue
            case .stillCancellable: if !live.contains(t) { live.append(t) }
            }
        }
        if live.isEmpty { return .immortal }
        if live.count == 1 { return live[0] }
        let source = CancelTokenSource()
        let result = source.token
        for t in live { _ = t._add(_Entry { source.cancel() }, unless: result) }
        return result
    }

    public static func all(_ tokens: CancelToken...) -> CancelToken { all(tokens) }
    public static func all(_ tokens: [CancelToken]) -> CancelToken {
        var live: [CancelToken] = []
        for t in tokens {
            switch t.state {
            case .cancelled: continue
            case .immortal: return .immortal
            case .stillCancellable: if !live.contains(t) { live.append(t) }
            }
        }
        if live.isEmpty { return .cancelled }
        if live.count == 1 { return live[0] }
        let s = _TokenState(.stillCancellable)
        let result = CancelToken(_s: s)
        let counter = _Box(live.count)
        for t in live {
            let e = _Entry { if counter.tick() { s.settle(.cancelled) } }
            e.onDiscard = { s.settle(.immortal) }
            _ = t._add(e, unless: result, removeOnUnlessImmortal: true)
        }
        return result
    }
}

final class _Box: Sendable {
    let n: Atomic<Int>
    init(_ count: Int) { n = Atomic(count) }
    func tick() -> Bool { n.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 }
}

public final class CancelTokenSource: Sendable {
    let _s = _TokenState(.stillCancellable)
    let _cancelOnDeinit: Bool
    public init() { _cancelOnDeinit = false }
    public init(cancelOnDeinit: Bool) { _cancelOnDeinit = cancelOnDeinit }
    public init(until token: CancelToken) {
        _cancelOnDeinit = false
        if token.isCancelled { _s.settle(.cancelled) }
        else if token.canStillBeCancelled {
            let s = _s
            _ = token._add(_Entry { s.settle(.cancelled) }, unless: self.token, removeOnUnlessImmortal: true)
        }
    }
    deinit { _s.settle(_cancelOnDeinit ? .cancelled : .immortal) }
    public var token: CancelToken { CancelToken(_s: _s) }
    public func cancel() { _s.settle(.cancelled) }
    @discardableResult public func tryCancel() -> Bool { _s.settle(.cancelled) }
}

extension CancelToken {
    /// Handlers currently in the token's list (as the lock-free version's
    /// linked-node count): for the benchmark's peak-live-nodes figure.
    @_spi(Testing) public var _linkedNodeCount: Int {
        guard let s = _s else { return 0 }
        return s.lock.sync { s.handlers.count }
    }
}
