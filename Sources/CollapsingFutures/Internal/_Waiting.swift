final class _Waiting: Sendable {
    private let state = _Locked<_UnsafeTaskHandle?>(nil)
    func start(_ h: _UnsafeTaskHandle) { state.withLock { $0 = h } }
    func stop() { state.withLock { $0 = nil } }
    func cancelIfWaiting() { state.withLock { $0?.task.cancel() } }
}
