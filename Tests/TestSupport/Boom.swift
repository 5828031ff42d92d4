public struct Boom: Error, Equatable {
    public var code: Int
    public init(code: Int = 0) { self.code = code }
}
