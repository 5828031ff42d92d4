import CCollapsingFutures

/// A step of `then`, `catch` or `finally`, in the value and the collapsing
/// forms: its output future is its node. This `Future<R>` is registered on
/// the input's token, and when the input completes it runs `f` and
/// completes itself, so a step is one object. Its fields:
/// - `_node` and `_policy`, as a `_Node`'s (`_NodeRef`);
/// - `_function`, the user's function, in a box of its shape
///   (`_Function` or `_FutureFunction`), which only the step knows: raw
///   words here, so that this generic class's deinit (never specialized)
///   has no generic field to destroy, which would look up its metadata on
///   every step;
/// - until the step runs, `Future`'s own fields that only a completed or
///   flattening future uses hold the rest: the outcome words hold the step
///   (`_Step`, the code that runs it, built by the specialized caller), and
///   the target reference holds the input (retained). The step takes them
///   all before it completes the future.
/// So a pending step takes 104 bytes (a 112-byte malloc chunk), as a
/// future and a node it would take 80 and 96.
@usableFromInline
final class _StepFuture<R: Sendable>: Future<R>, @unchecked Sendable {
    /// The step's `cf_node`, with the core's owner bit: the first stored
    /// property after `Future`'s, `_futureNodeOffset` into the object.
    @usableFromInline final var _node = cf_node()
    /// As `_Node._policy`; must follow `_node`.
    @exclusivity(unchecked) @usableFromInline final var _policy = _RunPolicy.inline
    @exclusivity(unchecked) @usableFromInline final var _function: (UInt, UInt) = (0, 0)

    /// The one step builder: a step of `then`, `catch` or `finally` from
    /// `input`, registered on it as `registration` says, removed by
    /// `unless`. When `input` completes, the step takes the input, `f` and
    /// itself out of this future's fields, then `run` completes it from
    /// them; a step that never runs (`input` immortal, or removed by
    /// `unless`) makes this output follow `unless` (`_failOnUnless`), or
    /// fails it when `unless` removed it. Inlined into the specialized
    /// caller, so `run` is a constant there and the step captures nothing.
    @inlinable @inline(__always)
    init<I, Fn>(from input: Future<I>, _ f: __owned Fn, _ registration: _Registration, unless: CancelToken,
                run: @escaping (_ input: Future<I>, _ f: Fn, _ output: _StepFuture) -> Void) {
        super.init()
        assert(MemoryLayout<Fn>.size == MemoryLayout.size(ofValue: _function), "a step's function is one closure")
        _ = withUnsafeMutablePointer(to: &_function) { UnsafeMutableRawPointer($0).initializeMemory(as: Fn.self, to: f) }
        cf_node_init_in_future(_ptr)
        _targetRef = Unmanaged.passRetained(input).toOpaque()
        _wordsAddress.initializeMemory(as: _Step.self, to: _Step { object, action in
            let me = Unmanaged<_StepFuture>.fromOpaque(object).takeUnretainedValue()
            me._wordsAddress.assumingMemoryBound(to: _Step.self).deinitialize(count: 1)
            me._words = (0, 0)
            let input = Unmanaged<Future<I>>.fromOpaque(me._targetRef.unsafelyUnwrapped).takeRetainedValue()
            me._targetRef = nil
            let f = withUnsafeMutablePointer(to: &me._function) { UnsafeMutableRawPointer($0).assumingMemoryBound(to: Fn.self).move() }
            me._function = (0, 0)
            switch action {
            case .run: run(input, f, me)
            case .discard(let unlessOwner): _failOnUnless(me, unlessOwner)
            case .remove(let byUnless): if byUnless { me._failCancelled() }
            }
        })
        assert(UInt(bitPattern: _ptr) & 15 == 0
               && { _ptr.pointee.next = _ptr; defer { cf_node_init_in_future(_ptr) }; return _node.next == _ptr }()
               && UnsafeMutableRawPointer(_NodeRef(_ptr).policy) == withUnsafeMutablePointer(to: &_policy) { UnsafeMutableRawPointer($0) }
               && _wordsAddress == _object + _futureWordsOffset,
               "a step future's cf_node must follow Future's fields, 16-byte aligned, and its run policy the cf_node")
        // No handle: only its `unless` link removes a step.
        _ = _NodeRef(_ptr)._enter(input, registration, unless: unless)
    }

    @inlinable @inline(__always)
    var _object: UnsafeMutableRawPointer { UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque()) }

    @inlinable @inline(__always)
    var _ptr: UnsafeMutablePointer<cf_node> { (_object + _futureNodeOffset).assumingMemoryBound(to: cf_node.self) }
}

/// A step future's step (`_StepFuture`): performs an action on the step
/// future at the given address. Built by the specialized caller, so it
/// captures nothing there. A struct, not a bare function: stored and
/// loaded through raw memory (generic), a function value would be
/// reabstracted, which allocates a thunk.
@usableFromInline @frozen
struct _Step {
    @usableFromInline let perform: (_ future: UnsafeMutableRawPointer, _ action: _NodeAction) -> Void
    @inlinable init(_ perform: @escaping (_ future: UnsafeMutableRawPointer, _ action: _NodeAction) -> Void) {
        self.perform = perform
    }
}

/// The user's function of a value step (`then`, `catch`, `finally`), in
/// the shape of `then`'s parameter, `(Value) throws -> U`: stored as it is
/// passed, with no reabstraction thunk. (The parameters of `catch` and
/// `finally` take `any Error` and `Future<Value>`, not a generic type:
/// stored here they get one, one allocation, as a closure context would
/// be.) A generic box's field keeps its declared shape whatever the
/// box's arguments; a generic `_f: F` would not.
@usableFromInline @frozen
struct _Function<A, R> {
    @usableFromInline let call: (A) throws -> R
    @inlinable init(_ call: @escaping (A) throws -> R) { self.call = call }
}

/// `_Function` for the collapsing steps: `(A) throws -> Future<R>`.
@usableFromInline @frozen
struct _FutureFunction<A, R: Sendable> {
    @usableFromInline let call: (A) throws -> Future<R>
    @inlinable init(_ call: @escaping (A) throws -> Future<R>) { self.call = call }
}
