import Foundation
import XCTest
@testable import Streaming
import Devices
import Publishing
import HLS
import Codecs

/// The cost estimate before a session starts, and the order of sacrifice.
final class EncodingCostTests: XCTestCase {
    let live = EncodingCost.Output(name: "live", kind: .x264, width: 1280, height: 720, fps: 30)
    let recording = EncodingCost.Output(name: "recording", kind: .x264, width: 1920, height: 1080, fps: 30)

    func testOutputsOnOneEncoderShareItAndSeparateEncodersDoNot() {
        let both = EncodingCost(outputs: [live, recording], capacity: [.x264: 100_000_000])
        XCTAssertEqual(both.value, (27_648_000 + 62_208_000) / 100_000_000, accuracy: 1e-9)
        var hardware = recording
        hardware.kind = .v4l2m2m
        let split = EncodingCost(outputs: [live, hardware], capacity: [.x264: 100_000_000, .v4l2m2m: 62_208_000])
        XCTAssertEqual(split.value, 1.0, accuracy: 1e-9, "the busiest encoder decides")
        XCTAssertEqual(split.lowered()?.changes, [], "exactly full is not over")
    }

    func testTheRecordingGoesDownToTheLiveSizeFirstThenTheLiveFrameRate() throws {
        let first = try XCTUnwrap(EncodingCost(outputs: [live, recording], capacity: [.x264: 60_000_000]).lowered())
        XCTAssertEqual(first.changes, ["recording to 1280x720"])
        XCTAssertEqual(first.outputs.map(\.width), [1280, 1280])
        let second = try XCTUnwrap(EncodingCost(outputs: [live, recording], capacity: [.x264: 50_000_000]).lowered())
        XCTAssertEqual(second.changes, ["recording to 1280x720", "live to 24 fps"])
        XCTAssertLessThanOrEqual(EncodingCost(outputs: second.outputs, capacity: [.x264: 50_000_000]).value, 1)
        XCTAssertNil(EncodingCost(outputs: [live, recording], capacity: [.x264: 10_000_000]).lowered(), "nothing fits")
    }
}
