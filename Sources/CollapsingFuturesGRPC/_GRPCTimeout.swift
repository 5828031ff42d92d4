#if GRPC
import GRPCCore

/// The request's `grpc-timeout` (its first value), as gRPC's HTTP/2
/// protocol gives it: 1 to 8 ASCII digits and a unit, `H` hours, `M`
/// minutes, `S` seconds, `m` milliseconds, `u` microseconds, `n`
/// nanoseconds. Nil when it is absent or does not parse. (At most
/// 99,999,999 hours: no product overflows.)
func _grpcTimeout(in metadata: Metadata) -> Duration? {
    var values = metadata[stringValues: "grpc-timeout"].makeIterator()
    guard let value = values.next() else { return nil }
    let bytes = Array(value.utf8)
    guard (2...9).contains(bytes.count) else { return nil }
    var amount: Int64 = 0
    for byte in bytes.dropLast() {
        guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
        amount = amount * 10 + Int64(byte - UInt8(ascii: "0"))
    }
    switch bytes[bytes.count - 1] {
    case UInt8(ascii: "H"): return .seconds(amount * 3600)
    case UInt8(ascii: "M"): return .seconds(amount * 60)
    case UInt8(ascii: "S"): return .seconds(amount)
    case UInt8(ascii: "m"): return .milliseconds(amount)
    case UInt8(ascii: "u"): return .microseconds(amount)
    case UInt8(ascii: "n"): return .nanoseconds(amount)
    default: return nil
    }
}
#endif
