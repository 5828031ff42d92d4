final class _Weak<O: AnyObject & Sendable>: Sendable {
    weak let object: O?
    init(_ o: O) { object = o }
}
