import Foundation
import Fuzzing

// `make fuzz`: every target for longer than `make test` runs them. A crash or hang leaves
// its input in the crash directory (exit status non-zero); add it under Tests/FuzzCorpus/
// so FuzzTests replays it on every `make test`.
//   onair-fuzz [--cases N] [--seed S] [--crashes DIR] [TARGET…]
//   onair-fuzz --replay TARGET FILE     one input, e.g. a saved crash, under a debugger
var cases = 20_000, seed: UInt64 = 1, crashes = "fuzz-crashes", names: [String] = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--cases": cases = arguments.popFirst().flatMap { Int($0) } ?? cases
    case "--seed": seed = arguments.popFirst().flatMap { UInt64($0) } ?? seed
    case "--crashes": crashes = arguments.popFirst() ?? crashes
    case "--replay":
        guard let name = arguments.popFirst(), let target = FuzzTargets.named(name), let file = arguments.popFirst(),
              let data = FileManager.default.contents(atPath: file) else {
            FileHandle.standardError.write(Data("onair-fuzz: --replay TARGET FILE\n".utf8))
            exit(2)
        }
        target.run(Array(data))
        print("replayed \(file) on \(name): no crash")
        exit(0)
    default: names.append(argument)
    }
}
let targets = names.isEmpty ? FuzzTargets.all + FuzzTargets.servers : names.map { name in
    guard let target = FuzzTargets.named(name) else {
        FileHandle.standardError.write(Data("onair-fuzz: unknown target '\(name)'\n".utf8))
        exit(2)
    }
    return target
}
var failed = 0
for target in targets {
    // A server costs a round trip per case: a tenth of the cases, and no time budget.
    let server = FuzzTargets.servers.contains { $0.name == target.name }
    let result = FuzzRunner.run(target, cases: server ? max(100, cases / 10) : cases, seed: seed, crashDirectory: crashes,
                                budget: server ? nil : FuzzRunner.budgetSeconds)
    if result.slow.isEmpty {
        print("fuzz \(target.name): \(result.cases) cases in \(String(format: "%.1f", result.seconds)) s, no crash, no hang, none slow")
    } else {
        failed += 1
        print("fuzz \(target.name): \(result.slow.count) cases over \(FuzzRunner.budgetSeconds) s each (saved in \(crashes)/): cases \(result.slow.prefix(10))")
    }
}
if failed == 0 { try? FileManager.default.removeItem(atPath: crashes) }
print("\(targets.count - failed) passed, \(failed) failed")
exit(failed == 0 ? 0 : 1)
