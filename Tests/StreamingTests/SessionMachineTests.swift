import XCTest
@testable import Streaming

/// The session's decisions on made-up capture times: no threads, no encoders.
final class SessionMachineTests: XCTestCase {
    let frame: Int64 = 100_000_000  // 10 fps
    func video(_ i: Int64) -> SessionMachine.Input { .video(captureTime: 1_000_000_000 + i * frame) }
    /// Sound covering picture `i`'s time, to the start of the next.
    func audio(_ i: Int64) -> SessionMachine.Input {
        .audio(captureTime: 1_000_000_000 + i * frame, endTime: 1_000_000_000 + (i + 1) * frame)
    }

    func testAPressBeginsAtTheNextPictureAndASecondPressFinishesOnceTheSoundHasCaughtUp() {
        var m = SessionMachine(fps: 10, durationMilliseconds: nil, hasAudio: true, preroll: false)
        XCTAssertEqual(m.handle(video(0)), [], "armed without a pre-roll: nothing goes to the outputs")
        XCTAssertEqual(m.handle(audio(0)), [])
        XCTAssertEqual(m.handle(.command(.toggle)), [])
        XCTAssertEqual(m.state, .recording)
        XCTAssertEqual(m.handle(audio(1)), [], "no stream until its first picture")
        XCTAssertEqual(m.handle(video(1)), [.begin, .forward])
        XCTAssertEqual(m.handle(audio(1)), [.forward])
        XCTAssertEqual(m.handle(video(2)), [.forward])
        XCTAssertEqual(m.videoEndTicks, 2 * 9000, "two pictures on the 10 fps grid")
        XCTAssertEqual(m.handle(.command(.toggle)), [])
        XCTAssertEqual(m.state, .finishing)
        XCTAssertEqual(m.handle(video(3)), [], "the sound is a picture behind: wait, and the picture is not part of it")
        XCTAssertEqual(m.handle(audio(2)), [.forward, .finish])
        XCTAssertEqual(m.state, .armed)
        XCTAssertEqual(m.handle(video(4)), [])
    }

    func testSoundThatNeverCatchesUpEndsTheStreamAfterAFewPictures() {
        var m = SessionMachine(fps: 10, durationMilliseconds: nil, hasAudio: true, preroll: false)
        _ = m.handle(.command(.start))
        XCTAssertEqual(m.handle(video(0)), [.begin, .forward])
        _ = m.handle(.command(.stop))
        for i in 1...Int64(SessionMachine.finishingWait) { XCTAssertEqual(m.handle(video(i)), [], "picture \(i)") }
        XCTAssertEqual(m.handle(video(6)), [.finish])
        XCTAssertEqual(m.state, .armed)
    }

    func testADurationEndsTheStreamAndAStopBeforeTheFirstPictureBeginsNone() {
        var m = SessionMachine(fps: 10, durationMilliseconds: 300, hasAudio: false, preroll: false)
        _ = m.handle(.command(.start))
        _ = m.handle(.command(.stop))
        XCTAssertEqual(m.state, .armed, "stopped before any picture: no stream")
        XCTAssertEqual(m.handle(video(0)), [])
        _ = m.handle(.command(.start))
        XCTAssertEqual(m.handle(video(1)), [.begin, .forward])
        XCTAssertEqual(m.handle(video(2)), [.forward])
        XCTAssertEqual(m.handle(video(3)), [.forward], "300 ms reached with the third picture")
        XCTAssertEqual(m.state, .finishing)
        XCTAssertEqual(m.handle(video(4)), [.finish], "no sound to wait for")
        XCTAssertEqual(m.state, .armed, "the duration's stop is not a press: armed again")
    }

    func testAGapInThePicturesCountsOnTheGridAndAStreamStaysOpenAcrossIt() {
        var m = SessionMachine(fps: 10, durationMilliseconds: nil, hasAudio: false, preroll: false)
        _ = m.handle(.command(.start))
        _ = m.handle(video(0))
        XCTAssertEqual(m.handle(video(25)), [.forward])
        XCTAssertEqual(m.videoEndTicks, 26 * 9000)
    }

    func testThePrerollKeepsTheEncodersFedWhileArmedAndTheRateAlwaysPassesThrough() {
        var m = SessionMachine(fps: 10, durationMilliseconds: nil, hasAudio: true, preroll: true)
        XCTAssertEqual(m.handle(video(0)), [.forward])
        XCTAssertEqual(m.handle(audio(0)), [.forward])
        XCTAssertEqual(m.handle(.command(.rate(6))), [.rate(6)])
        XCTAssertEqual(m.handle(.command(.droppedRungs(1))), [.droppedRungs(1)], "the heat drops the top rung: the outputs are told")
        XCTAssertEqual(m.state, .armed, "a rate is not a press")
    }

    func testClosingFinishesWhatIsOpenAndStopsForGood() {
        var m = SessionMachine(fps: 10, durationMilliseconds: nil, hasAudio: true, preroll: false)
        _ = m.handle(.command(.start))
        _ = m.handle(video(0))
        XCTAssertEqual(m.handle(.closed), [.finish])
        XCTAssertEqual(m.state, .stopped)
        XCTAssertEqual(m.handle(.command(.start)), [])
        XCTAssertEqual(m.handle(video(1)), [])
        XCTAssertEqual(m.state, .stopped)
        var idle = SessionMachine(fps: 10, durationMilliseconds: nil, hasAudio: true, preroll: false)
        XCTAssertEqual(idle.handle(.closed), [], "nothing open, nothing to finish")
    }
}
