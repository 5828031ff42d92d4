// The "Combine's Future" sample of ComingFromOtherLibraries.md, compiled in
// a file that imports both modules, as the article describes (DocSamplesTests
// checks the block appears here verbatim).
import CollapsingFutures
@preconcurrency import OpenCombine
import Testing

typealias Future = CollapsingFutures.Future

func answers() -> (Future<Int>, OpenCombine.Future<Int, Never>) {
    let answer: Future<Int> = .succeeded(42)
    let published = OpenCombine.Future<Int, Never> { promise in promise(.success(42)) }
    return (answer, published)
}

@Suite struct CombineNameClash {
    @Test func theTypealiasNamesOursAndCombinesStaysReachable() {
        let (answer, published) = answers()
        #expect(answer.forceGetResult() == 42)
        nonisolated(unsafe) var received: Int?
        let subscription = published.sink { received = $0 }
        #expect(received == 42)
        _ = subscription
    }
}
