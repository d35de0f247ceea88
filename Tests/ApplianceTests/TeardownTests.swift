import XCTest
@testable import Appliance

/// The run's one list of what is open: closed newest first, exactly once.
final class TeardownTests: XCTestCase {
    func testClosesInReverseOnceAndANameAddedAgainMovesToTheEnd() {
        let teardown = Teardown()
        var closed: [String] = []
        teardown.add("screen") { closed.append("screen") }
        teardown.add("capture") { closed.append("capture alone") }
        XCTAssertEqual(teardown.pending, ["capture", "screen"])
        // The pipeline takes the frames: the capture now stops before it, and differently.
        teardown.add("pipeline") { closed.append("pipeline") }
        teardown.add("capture") { closed.append("capture, then the buffer") }
        XCTAssertEqual(teardown.pending, ["capture", "pipeline", "screen"])
        teardown.run()
        XCTAssertEqual(closed, ["capture, then the buffer", "pipeline", "screen"])
        teardown.run()
        XCTAssertEqual(closed.count, 3, "a second run closes nothing again")
    }

    /// The signal thread is made last but must outlive the pipeline's drain.
    func testAStepCanBeMadeToCloseRightAfterAnother() {
        let teardown = Teardown()
        var closed: [String] = []
        teardown.add("screen") { closed.append("screen") }
        teardown.add("pipeline") { closed.append("pipeline") }
        teardown.add("console") { closed.append("console") }
        teardown.add("signals", before: "pipeline") { closed.append("signals") }
        teardown.add("orphan", before: "nothing such") { closed.append("orphan") }
        teardown.run()
        XCTAssertEqual(closed, ["orphan", "console", "pipeline", "signals", "screen"])
    }
}
