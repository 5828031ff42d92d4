public struct TestError: Error, Equatable {
    public var code = 1
    public init(code: Int = 1) { self.code = code }
}
