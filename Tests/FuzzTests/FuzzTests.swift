import Foundation
import XCTest
import Fuzzing

/// A bounded run of the fuzzer on every `make test` (`make fuzz` runs it longer), and every
/// input it or issue 13 found, replayed: a crash or hang fails the suite (the process dies
/// or the run never ends), a broken promise stops it with the input named.
final class FuzzTests: XCTestCase {
    /// Cases per target: enough to reach every mutation kind many times in a few seconds.
    static let cases = 1500

    /// Where a case that crashes or hangs is left: the runner's alarm is armed only with
    /// one, so a hang (10 s in one case) ends the suite with its input saved, not never.
    static let finds = NSTemporaryDirectory() + "onair-fuzz-finds"

    func testEveryTargetSurvivesItsMutations() {
        for target in FuzzTargets.all {
            let result = FuzzRunner.run(target, cases: Self.cases, seed: 13, crashDirectory: Self.finds)
            XCTAssertEqual(result.cases, Self.cases, target.name)
            XCTAssertEqual(result.slow, [], "\(target.name): cases over the budget of \(FuzzRunner.budgetSeconds) s (super-linear?)")
        }
    }

    func testTheServerSurvivesRawRequests() {
        XCTAssertEqual(FuzzRunner.run(FuzzTargets.http, cases: 150, seed: 13, crashDirectory: Self.finds, budget: nil).cases, 150)
    }

    /// A running onair (the release binary) against its endpoints' parameters.
    func testTheApplianceSurvivesItsEndpoints() {
        XCTAssertEqual(FuzzRunner.run(FuzzTargets.api, cases: 150, seed: 13, crashDirectory: Self.finds, budget: nil).cases, 150)
    }

    /// `Corpus/<target>/*`: inputs that once crashed, hung or broke a promise.
    func testEveryKnownFindStaysFixed() throws {
        let corpus = try XCTUnwrap(Bundle.module.url(forResource: "Corpus", withExtension: nil))
        var replayed = 0
        for target in FuzzTargets.all + FuzzTargets.servers {
            let folder = corpus.appendingPathComponent(target.name)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] where !name.hasPrefix(".") {
                let input = Array(try Data(contentsOf: folder.appendingPathComponent(name)))
                if FuzzTargets.servers.contains(where: { $0.name == target.name }) {
                    target.run(input)
                } else {
                    XCTAssertTrue(FuzzRunner.withinBudget(target, input, seconds: FuzzRunner.budgetSeconds),
                                  "\(target.name)/\(name) took over \(FuzzRunner.budgetSeconds) s twice: a reader that is not linear in its input")
                }
                replayed += 1
            }
        }
        XCTAssertGreaterThan(replayed, 0, "the corpus holds issue 13's finds")
    }
}
