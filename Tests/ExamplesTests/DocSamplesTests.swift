import CollapsingFutures
import Foundation
import Testing

/// The repository root, from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

@Suite struct DocSamplesTests {
    /// Every ```swift block of the README and the DocC articles (manifest
    /// fragments aside) appears verbatim in DocSamples.swift (or, for a
    /// sample that needs imports of its own, another DocSamples*.swift),
    /// which the test target compiles. Lines are compared trimmed, blank lines ignored.
    @Test func everySampleIsCompiled() throws {
        let samples = repositoryRoot.appendingPathComponent("Tests/ExamplesTests")
        let compiledLines = try FileManager.default.contentsOfDirectory(atPath: samples.path)
            .filter { $0.hasPrefix("DocSamples") && !$0.hasSuffix("Tests.swift") }.sorted()
            .flatMap { lines(try String(contentsOf: samples.appendingPathComponent($0), encoding: .utf8)) }
        let docc = repositoryRoot.appendingPathComponent("Sources/CollapsingFutures/CollapsingFutures.docc")
        let articles = try FileManager.default.contentsOfDirectory(atPath: docc.path).filter { $0.hasSuffix(".md") }
        let files = [repositoryRoot.appendingPathComponent("README.md")] + articles.sorted().map { docc.appendingPathComponent($0) }
        var checked = 0
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            for block in swiftBlocks(text) where !block.contains(".package(url:") {
                let sample = lines(block).filter { !$0.hasPrefix("import ") }
                #expect(contains(compiledLines, sample), "\(file.lastPathComponent): a sample is not in DocSamples.swift:\n\(block)")
                checked += 1
            }
        }
        #expect(checked >= 14)
    }

    @Test func theSamplesBehaveAsTheirCommentsSay() async throws {
        #expect(readmeImmortality())
        let (doubled, guarded, _, fastest, robust, patient, both) = try readmeQuickStart()
        #expect(doubled == 42)
        #expect(patient.forceGetResult() == 7)
        #expect(both == [42, 22])
        #expect(guarded.forceGetResult() == 22)
        #expect(fastest.forceGetResult() == 2)
        #expect(robust.forceGetResult() == 42)
        #expect(gettingStartedTokens() == false)
        #expect(gettingStartedFutures() == "42")
        #expect(try await contacts(of: AddressBook(names: ["Ada"])).get() == ["Ada"])
        await #expect(throws: Denied.self) { try await contacts(of: AddressBook(names: nil)).get() }
        #expect(try await fetchWithRetry(3).get() == Data([1]))
        #expect(try await reply(to: Request()).get().status == 200)
        #expect(waitForReply(.succeeded(Response(status: 201)))?.status == 201)
        let screen = AvatarScreen()
        showAvatar(.succeeded(Image()), on: screen)
        #expect(screen.shown.all == ["image"])
    }

    func lines(_ s: String) -> [String] {
        s.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    func swiftBlocks(_ markdown: String) -> [String] {
        var blocks: [String] = [], current: [Substring]? = nil
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.trimmingCharacters(in: .whitespaces) == "```swift" { current = []; continue }
            if current != nil, line.trimmingCharacters(in: .whitespaces) == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
                continue
            }
            current?.append(line)
        }
        return blocks
    }

    func contains(_ haystack: [String], _ needle: [String]) -> Bool {
        guard !needle.isEmpty, needle.count <= haystack.count else { return needle.isEmpty }
        for start in 0...(haystack.count - needle.count) where Array(haystack[start..<start + needle.count]) == needle {
            return true
        }
        return false
    }
}
