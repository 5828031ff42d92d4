/// An object whose deinit is counted: leak tests capture these.
public final class Tracked: Sendable {
    public let deinits: Counter
    public init(_ d: Counter) { deinits = d }
    deinit { deinits.increment() }
    public func touch() {}
}
