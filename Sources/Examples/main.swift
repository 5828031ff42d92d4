// swift run Examples <name>   (names: address-book, pipeline, retry, race, controller; none: all)
import ExampleKit

let names = CommandLine.arguments.dropFirst()
let chosen = names.isEmpty ? Example.allCases : names.compactMap { Example(rawValue: $0) }
if chosen.count != max(names.count, chosen.count) || (!names.isEmpty && chosen.count != names.count) {
    print("unknown example; choose from: " + Example.allCases.map(\.rawValue).joined(separator: ", "))
} else {
    for e in chosen {
        print("== \(e.rawValue)")
        for line in await e.run() { print(line) }
    }
}
