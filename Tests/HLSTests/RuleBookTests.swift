import Foundation
import XCTest

/// docs/HLS_RULES.md is the rule book the checker cites: every rule id the source can
/// report is defined there, and its list of what the checker emits is the true one.
final class RuleBookTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every `"P4"`-like literal in the checker's sources: the ids a finding can carry.
    func emittedIDs() throws -> Set<String> {
        let pattern = try NSRegularExpression(pattern: "\"((?:LL|[CILPSV])[0-9]{1,2})\"")
        var ids: Set<String> = []
        let sources = Self.repository.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        for file in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                ids.insert((text as NSString).substring(with: match.range(at: 1)))
            }
        }
        return ids
    }

    func testEveryRuleTheCheckerEmitsIsDefinedInTheRuleBook() throws {
        let book = try String(contentsOf: Self.repository.appendingPathComponent("docs/HLS_RULES.md"), encoding: .utf8)
        let emitted = try emittedIDs()
        XCTAssertGreaterThan(emitted.count, 50, "the checker's rule ids were found")
        for id in emitted.sorted() { XCTAssertTrue(book.contains("**\(id)**"), "\(id) is not defined in docs/HLS_RULES.md") }
        let listed = try XCTUnwrap(book.range(of: "The checker emits ").map { book[$0.upperBound...].prefix { $0 != "." } })
        let named = Set(listed.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\n" }).map(String.init))
        XCTAssertEqual(named, emitted, "the rule book's list of what the checker emits")
    }
}
