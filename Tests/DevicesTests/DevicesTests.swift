import TestSupport
import Threading
import XCTest
@testable import Devices
import Media

final class SyntheticPatternTests: XCTestCase {
    func testBandCarriesTheFrameIndex() {
        let pattern = SyntheticPattern(width: 1280, height: 720, fps: 30)
        XCTAssertEqual(pattern.bandHeight, 44)
        for index: Int64 in [0, 1, 2, 29, 30, 12345, 0x7FFF_FFFF, 0xFFFF_FFFF] {
            let frame = pattern.frame(index: index, captureTime: 0)
            let decoded = frame.planes.withUnsafeBufferPointer { SyntheticPattern.decodeIndex(luma: $0, width: 1280, height: 720) }
            XCTAssertEqual(decoded, UInt32(truncatingIfNeeded: index))
        }
        // Block 31 (rightmost) is bit 0; its luma is 235, and block 30's is 16.
        let one = pattern.frame(index: 1, captureTime: 0)
        XCTAssertEqual(one.planes[10 * 1280 + 31 * 40 + 20], 235)
        XCTAssertEqual(one.planes[10 * 1280 + 30 * 40 + 20], 16)
        XCTAssertEqual(one.planes[1280 * 720], 128, "chroma is neutral in the band")
    }

    func testFlashOnTheFirstFrameOfEverySecondAndDarkOtherwise() {
        for fps in [30, 25, 24] {
            let pattern = SyntheticPattern(width: 320, height: 240, fps: fps)
            let flashes = (0..<Int64(3 * fps + 1)).filter { pattern.isFlash($0) }
            XCTAssertEqual(flashes, [0, Int64(fps), Int64(2 * fps), Int64(3 * fps)])
        }
        let pattern = SyntheticPattern(width: 320, height: 240, fps: 30)
        let mean = { (i: Int64) in pattern.frame(index: i, captureTime: 0).planes.withUnsafeBufferPointer {
            SyntheticPattern.meanLumaBelowBand(luma: $0, width: 320, height: 240) } }
        XCTAssertEqual(mean(30), 235)
        for i: Int64 in [1, 7, 29, 31] { XCTAssertLessThan(mean(i), 100) }
        XCTAssertNotEqual(pattern.frame(index: 1, captureTime: 0).planes, pattern.frame(index: 2, captureTime: 0).planes, "it moves")
    }

    func testDecodeRefusesSomethingElse() {
        let grey = [UInt8](repeating: 128, count: 320 * 240)
        XCTAssertNil(grey.withUnsafeBufferPointer { SyntheticPattern.decodeIndex(luma: $0, width: 320, height: 240) })
    }
}

final class SyntheticToneTests: XCTestCase {
    func testBeepsForTheFirst100msOfEverySecond() {
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let two = tone.samples(from: 0, count: 96_000)
        let loud = two.indices.filter { abs(Int(two[$0])) > 100 }
        XCTAssertEqual(loud.first, 1, "sample 0 is sin(0)")
        XCTAssertLessThan(loud.filter { $0 < 48_000 }.last!, 4800)
        XCTAssertEqual(loud.first { $0 >= 48_000 }, 48_001)
        XCTAssertEqual(Int(two.map { abs(Int($0)) }.max()!), 16384, "−6 dBFS")
        XCTAssertEqual(tone.samples(from: 48_000 - 5, count: 10), tone.samples(from: 96_000 - 5, count: 10), "every second alike")
        let stereo = SyntheticTone(sampleRate: 48_000, channels: 2).samples(from: 0, count: 10)
        XCTAssertEqual(stereo.count, 20)
        XCTAssertEqual(stereo[6], stereo[7])
    }
}

final class SyntheticSourceTests: XCTestCase {
    final class Recorder: CaptureSink, Sendable {
        private let recorded = Locked<[(kind: String, time: Int64, index: Int64)]>([])
        var events: [(kind: String, time: Int64, index: Int64)] { recorded.withLock { $0 } }
        let done = Completion()
        let wanted: Int
        init(wanted: Int) { self.wanted = wanted }
        func capture(_ frame: VideoFrame) { record("v", frame.captureTime, frame.index) }
        func capture(_ chunk: AudioChunk) { record("a", chunk.captureTime, Int64(chunk.frameCount)) }
        func record(_ kind: String, _ time: Int64, _ index: Int64) {
            let count = recorded.withLock { $0.append((kind, time, index)); return $0.count }
            if count == wanted { done.signal() }
        }
    }

    func testFastPaceDeliversNominalTimesInOrder() {
        let source = SyntheticSource(width: 64, height: 32, fps: 30, audio: (48_000, 1), pace: .fast)
        let recorder = Recorder(wanted: 200)
        let origin = source.start(into: recorder)
        recorder.done.wait()
        source.stop()
        let events = recorder.events
        let video = events.filter { $0.kind == "v" }, audio = events.filter { $0.kind == "a" }
        XCTAssertEqual(video.prefix(31).map(\.index), Array(0...30))
        for (i, frame) in video.enumerated() { XCTAssertEqual(frame.time, origin + rescale(Int64(i), from: 30, to: 1_000_000_000)) }
        for (i, chunk) in audio.enumerated() {
            XCTAssertEqual(chunk.time, origin + Int64(i) * 20_000_000)
            XCTAssertEqual(chunk.index, 960)
        }
        // A chunk is delivered once complete: never before a frame captured earlier than its end.
        var lastDelivery: Int64 = 0
        for event in events {
            let due = event.kind == "v" ? event.time : event.time + 20_000_000
            XCTAssertGreaterThanOrEqual(due, lastDelivery)
            lastDelivery = due
        }
    }

    /// Real-time pace on a clock the test drives: each capture waits on the clock's
    /// sleep, so on virtual time a second of frames and sound takes no real second, and
    /// the clock stands at the last delivery's due time.
    func testRealTimePaceSleepsOnTheClockItIsGiven() {
        let clock = ManualClock(now: 5_000_000_000)
        let source = SyntheticSource(width: 64, height: 32, fps: 25, audio: (48_000, 1), pace: .realtime, clock: clock)
        let recorder = Recorder(wanted: 76)  // 26 frames and 50 chunks: the first second
        let origin = source.start(into: recorder)
        recorder.done.wait()
        source.stop()
        XCTAssertEqual(origin, 5_000_000_000)
        let events = recorder.events
        let video = events.filter { $0.kind == "v" }
        XCTAssertEqual(video.prefix(26).map(\.time), (0..<26).map { origin + Int64($0) * 40_000_000 })
        // The source slept until each due time: the clock is at least at the 76th delivery's.
        XCTAssertGreaterThanOrEqual(clock.now(), origin + 1_000_000_000)
    }
}

/// Button events as the kernel hands them out, from recorded bytes.
final class ButtonEventTests: XCTestCase {
    func gpioEvent(_ time: UInt64, _ id: UInt32) -> [UInt8] {
        var bytes = withUnsafeBytes(of: time.littleEndian) { Array($0) }
        for field: UInt32 in [id, 17, 1, 1, 0, 0, 0, 0, 0, 0] { bytes += withUnsafeBytes(of: field.littleEndian) { Array($0) } }
        return bytes
    }

    func inputEvent(type: UInt16, code: UInt16, value: Int32) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16)  // struct timeval on LP64
        bytes += withUnsafeBytes(of: type.littleEndian) { Array($0) }
        bytes += withUnsafeBytes(of: code.littleEndian) { Array($0) }
        bytes += withUnsafeBytes(of: value.littleEndian) { Array($0) }
        return bytes
    }

    func testGPIOLineEventsAreEdgesWithTheirTimes() {
        let records = gpioEvent(1_000, 1) + gpioEvent(2_000, 2) + gpioEvent(3_000, 7)
        XCTAssertEqual(records.count, 3 * 48, "struct gpio_v2_line_event is 48 bytes")
        let edges = records.withUnsafeBytes { ButtonEvents.gpio($0) }
        XCTAssertEqual(edges, [ButtonEdge(pressed: true, time: 1_000), ButtonEdge(pressed: false, time: 2_000)])
    }

    func testEvdevKeysPressAndReleaseOnlyForTheWantedCodes() {
        let stream = inputEvent(type: 4, code: 4, value: 57)            // EV_MSC scan code
            + inputEvent(type: 1, code: 57, value: 1)                    // KEY_SPACE down
            + inputEvent(type: 0, code: 0, value: 0)                     // SYN_REPORT
            + inputEvent(type: 1, code: 57, value: 2)                    // autorepeat
            + inputEvent(type: 1, code: 30, value: 1)                    // KEY_A: not ours
            + inputEvent(type: 1, code: 57, value: 0)                    // KEY_SPACE up
        let events = stream.withUnsafeBytes { ButtonEvents.evdev($0, keys: [57, 167]) }
        XCTAssertEqual(events.map(\.code), [57, 57])
        XCTAssertEqual(events.map(\.pressed), [true, false])
        XCTAssertEqual(ButtonEvents.parseKeys("KEY_RECORD, key_space,300"), [167, 57, 300])
        XCTAssertNil(ButtonEvents.parseKeys("KEY_NOPE"))
    }

    func testDebounceDropsChatter() {
        var debouncer = Debouncer(periodNanoseconds: 20_000_000)
        let edges = [(true, 0), (false, 3), (true, 5), (false, 100), (false, 150), (true, 300)].map {
            ButtonEdge(pressed: $0.0, time: Int64($0.1) * 1_000_000)
        }
        XCTAssertEqual(edges.filter { debouncer.accept($0) }.map(\.time), [0, 100_000_000, 300_000_000])
    }

    func testAGPIOChipThatIsNoneIsOneClearError() {
        XCTAssertThrowsError(try GPIOButton(line: "/dev/null:3", activeLow: true, bias: "pull-up", debounceMilliseconds: 20)) {
            XCTAssertEqual("\($0)", "button.gpio /dev/null:3: not a GPIO chip")
        }
        XCTAssertThrowsError(try GPIOButton(line: "gpiochip0", activeLow: true, bias: "none", debounceMilliseconds: 0))
    }
}
