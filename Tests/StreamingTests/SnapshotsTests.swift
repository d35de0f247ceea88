import Media
import XCTest
@testable import Streaming

/// `/api/snapshot.jpg` asked for once a frame: the JPEG is made at most once a second of
/// capture, whoever asks and however often.
final class SnapshotsTests: XCTestCase {
    func frame(_ index: Int64, at captureTime: Int64) -> VideoFrame {
        VideoFrame(width: 64, height: 48, planes: [UInt8](repeating: 128, count: 64 * 48 * 3 / 2), captureTime: captureTime, index: index)
    }

    func testAClientAskingEveryFrameCostsOneEncodeASecond() throws {
        let snapshots = Snapshots(rotation: .none, log: .silent())
        XCTAssertNil(snapshots.jpeg(), "nothing before the first frame")
        var answers: [[UInt8]] = []
        // Three seconds of 30 fps, asked for after every frame, twice.
        for index in Int64(0)..<90 {
            snapshots.keep(frame(index, at: 5_000_000_000 + index * 33_333_333))
            answers.append(try XCTUnwrap(snapshots.jpeg()))
            answers.append(try XCTUnwrap(snapshots.jpeg()))
        }
        XCTAssertEqual(snapshots.encodes, 3, "one a second of capture")
        XCTAssertEqual(answers.first?.prefix(2), [0xFF, 0xD8], "a JPEG")
        // A camera that came back with an earlier clock (a new capture) is not kept waiting.
        snapshots.keep(frame(0, at: 1_000))
        _ = snapshots.jpeg()
        XCTAssertEqual(snapshots.encodes, 4)
    }
}
