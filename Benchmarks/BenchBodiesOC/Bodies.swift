// OpenCombine's `Future` for the scenarios that have a counterpart: what a
// Combine user on Linux picks. A Combine future runs its closure at once and
// keeps the promise; subscribers (`map`, `flatMap`, `sink`) do the rest.
import BenchKit
import OpenCombine

/// A Combine future whose promise the caller completes later.
func pending() -> (OpenCombine.Future<Int, Never>, (Int) -> Void) {
    var promise: ((Result<Int, Never>) -> Void)?
    let f = OpenCombine.Future<Int, Never> { promise = $0 }
    return (f, { promise!(.success($0)) })
}

public enum OpenCombineBodies {
    /// future + map + sink, then the promise completed (per future).
    public static var thenSet: Body {
        { it in
            for i in 0..<it {
                let (f, set) = pending()
                let c = f.map { $0 + 1 }.sink { precondition($0 > 0) }
                set(i)
                c.cancel()
            }
        }
    }

    /// future + sink, then the promise completed: the like of promise+handler+set.
    public static var sinkSet: Body {
        { it in
            for i in 0..<it {
                let (f, set) = pending()
                let c = f.sink { precondition($0 >= 0) }
                set(i)
                c.cancel()
            }
        }
    }

    /// 10 chained maps + sink (per map step).
    public static var chain10: Body {
        { it in
            for i in 0..<it {
                let (f, set) = pending()
                var p = f.eraseToAnyPublisher()
                for _ in 0..<10 { p = p.map { $0 + 1 }.eraseToAnyPublisher() }
                let c = p.sink { precondition($0 > 9) }
                set(i)
                c.cancel()
            }
        }
    }

    /// flatMap to a pending future, then both completed (per step).
    public static var flatten: Body {
        { it in
            for i in 0..<it {
                let (f, set) = pending()
                let (inner, setInner) = pending()
                let c = f.flatMap { _ in inner }.sink { precondition($0 >= 0) }
                set(i)
                setInner(i)
                c.cancel()
            }
        }
    }
}
