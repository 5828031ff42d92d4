/// The registration that cancels a `Task(until:)`, removed when the task ends
/// (whichever of "task ended" and "registration attached" comes second removes it).
final class _TaskRegistration: Sendable {
    private let state = _Locked<(registration: CancelRegistration?, finished: Bool)>((nil, false))
    func attach(_ r: CancelRegistration) {
        let finished = state.withLock { s -> Bool in
            if !s.finished { s.registration = r }
            return s.finished
        }
        if finished { r.remove() }
    }
    func finish() {
        let r = state.withLock { s -> CancelRegistration? in
            s.finished = true
            defer { s.registration = nil }
            return s.registration
        }
        r?.remove()
    }
}
