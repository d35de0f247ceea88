import Foundation
import Threading
import XCTest
@testable import Devices
import Media

/// The real libasound capture path without a sound card: an ALSA configuration written by
/// the test defines a PCM whose `file` plugin reads a generated tone (its `infile`) over
/// the `null` device, exactly what a microphone would hand to onair.
final class ALSAMicrophoneTests: XCTestCase {
    final class Chunks: CaptureSink, Sendable {
        let taken = Locked<[AudioChunk]>([])
        let enough = Completion()
        let wanted: Int
        init(wanted: Int) { self.wanted = wanted }
        var chunks: [AudioChunk] { taken.withLock { $0 } }
        func capture(_ frame: VideoFrame) {}
        func capture(_ chunk: AudioChunk) {
            let count = taken.withLock { $0.append(chunk); return $0.count }
            if count == wanted { enough.signal() }
        }
    }

    static let directory: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("onair-alsa-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1).samples(from: 0, count: 48_000)
        FileManager.default.createFile(atPath: path + "/tone.raw", contents: tone.withUnsafeBytes { Data($0) })
        let config = """
            pcm.onairtone {
                type file
                slave.pcm "null"
                file "/dev/null"
                infile "\(path)/tone.raw"
                format "raw"
            }
            """
        try? config.write(toFile: path + "/asound.conf", atomically: true, encoding: .utf8)
        // The system configuration first (it defines "null"), then the test's PCM.
        setenv("ALSA_CONFIG_PATH", "/usr/share/alsa/alsa.conf:\(path)/asound.conf", 1)
        return path
    }()

    func testCapturesExactlyWhatTheDeviceDeliversIn20msPeriods() throws {
        let tone = try Data(contentsOf: URL(fileURLWithPath: Self.directory + "/tone.raw")).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let microphone = try ALSAMicrophone(device: "onairtone", sampleRate: 48_000, channels: 1)
        XCTAssertEqual(microphone.sampleRate, 48_000)
        XCTAssertEqual(microphone.periodFrames, 960)
        let sink = Chunks(wanted: 25)
        microphone.start(into: sink)
        XCTAssertTrue(sink.enough.wait(seconds: 30))
        microphone.stop()
        let chunks = Array(sink.chunks.prefix(25))
        XCTAssertTrue(chunks.allSatisfy { $0.frameCount == 960 && $0.sampleRate == 48_000 && $0.channels == 1 })
        XCTAssertEqual(chunks.flatMap(\.samples), Array(tone.prefix(25 * 960)), "the samples, in order, none lost")
        for (a, b) in zip(chunks, chunks.dropFirst()) { XCTAssertLessThanOrEqual(a.captureTime, b.captureTime) }
        XCTAssertEqual(microphone.xruns, 0)
    }

    func testAMissingDeviceIsNamedInOneLine() {
        _ = Self.directory
        XCTAssertThrowsError(try ALSAMicrophone(device: "nosuchpcm", sampleRate: 48_000, channels: 1)) {
            XCTAssertTrue("\($0)".hasPrefix("audio device nosuchpcm: cannot open: "), "\($0)")
            XCTAssertFalse("\($0)".contains("\n"))
        }
    }

    func testThirtyTwoBitSamplesAreNarrowedToTheirTopSixteenBits() {
        var out = [Int16](repeating: 0, count: 4)
        ALSAMicrophone.narrow([Int32(0x7FFF_FFFF), Int32(-0x8000_0000), 0x0001_8000, -1], count: 4, into: &out)
        XCTAssertEqual(out, [32767, -32768, 1, -1])
    }

    func testTheToneDeviceTakesSixteenBitsDirectly() throws {
        _ = Self.directory
        XCTAssertFalse(try ALSAMicrophone(device: "onairtone", sampleRate: 48_000, channels: 1).widened)
    }
}
