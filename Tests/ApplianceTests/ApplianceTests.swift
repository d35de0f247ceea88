import Foundation
import XCTest
@testable import Appliance
import Devices
import Publishing
import HLS
import Codecs
import Media

final class ConfigTests: XCTestCase {
    func settings(_ text: String) throws -> Settings {
        var s = Settings()
        try ConfigFile.apply(try ConfigFile.parse(text, file: "onair.conf"), to: &s)
        return s
    }

    func testSectionsCommentsAndDottedKeys() throws {
        let s = try settings("""
            # onair.conf
            [video]
            quality = high
            fps = 25   # smooth enough
            rotation = 90
            encoder = x264
            ; audio
            [audio]
            enabled = off
            [hls]
            segment_seconds = 1.5
            """)
        XCTAssertEqual(s.quality, .high)
        XCTAssertEqual(s.fps, 25)
        XCTAssertEqual(s.rotation, .quarter)
        XCTAssertEqual(s.encoder, .x264)
        XCTAssertFalse(s.audioEnabled)
        XCTAssertEqual(s.segmentMilliseconds, 1500)
        XCTAssertEqual([s.encodedSize.width, s.encodedSize.height], [720, 1280], "rotated")
    }

    func testErrorsNameFileLineAndKey() {
        XCTAssertThrowsError(try settings("[video]\nfsp = 30\n")) {
            XCTAssertEqual("\($0)", "onair.conf:2: unknown key 'video.fsp'")
        }
        XCTAssertThrowsError(try settings("\n\n[video]\nfps = fast\n")) {
            XCTAssertEqual("\($0)", "onair.conf:4: video.fps: expected an integer in 1…240, got 'fast'")
        }
        XCTAssertThrowsError(try settings("[video\n")) { XCTAssertTrue("\($0)".hasPrefix("onair.conf:1:")) }
        XCTAssertThrowsError(try settings("video.fps\n")) { XCTAssertTrue("\($0)".hasPrefix("onair.conf:1:")) }
        XCTAssertThrowsError(try settings("video.width = 641\n")) { XCTAssertTrue("\($0)".contains("even")) }
        XCTAssertThrowsError(try settings("audio.sample_rate = 47000\n"))
    }

    func testMinimumFreeForms() throws {
        XCTAssertEqual(try ConfigFile.minimumFree("auto"), .automatic)
        XCTAssertEqual(try ConfigFile.minimumFree("15%"), .percent(15))
        XCTAssertEqual(try ConfigFile.minimumFree("2G"), .bytes(2 << 30))
        XCTAssertEqual(try ConfigFile.minimumFree("500m"), .bytes(500 << 20))
        XCTAssertEqual(try ConfigFile.minimumFree("4096"), .bytes(4096))
        for bad in ["", "95%", "-1G", "lots", "1.5G"] { XCTAssertThrowsError(try ConfigFile.minimumFree(bad), bad) }
    }

    func testBitrateForms() throws {
        for text in ["1500000", "1500k", "1.5M", "1500K"] { XCTAssertEqual(try ConfigFile.bitrate(text), 1_500_000, text) }
        XCTAssertEqual(try ConfigFile.bitrate("900k"), 900_000)
        for bad in ["", "1.5", "abc", "1.5G", "-1M", "1e6", "1.0000005M"] { XCTAssertThrowsError(try ConfigFile.bitrate(bad), bad) }
    }

    func testQualityPresetsAndDerivedTiming() throws {
        XCTAssertEqual(try settings("video.quality = low").captureWidth, 854)
        let medium = Settings()
        XCTAssertEqual([medium.captureWidth, medium.captureHeight, medium.videoBitrate], [1280, 720, 1_500_000])
        XCTAssertEqual(medium.keyframeInterval, 60)
        XCTAssertEqual(medium.segmentTicks, 180_000)
        XCTAssertEqual(medium.targetDuration, 2)
        let odd = try settings("video.fps = 25\nhls.segment_seconds = 1.5\nvideo.bitrate = 3M")
        XCTAssertEqual(odd.keyframeInterval, 38, "1.5 s at 25 fps rounds to whole frames")
        XCTAssertEqual(odd.targetDuration, 2)
        XCTAssertEqual(odd.videoBitrate, 3_000_000)
    }
}

final class CommandLineTests: XCTestCase {
    func testFlagsOverrideConfigAndSet() throws {
        let config = "[video]\nfps = 25\n[server]\nlisten = 0.0.0.0:9000\n"
        let invocation = try CommandLineParser.parse(
            ["run", "--config", "a.conf", "--set", "video.fps=50", "--listen", "off", "--duration=12", "--pace", "fast", "--out", "/tmp/x"],
            readFile: { _ in Array(config.utf8) })
        guard case .run(let s, let files) = invocation else { return XCTFail("\(invocation)") }
        XCTAssertEqual(files, ["a.conf"])
        XCTAssertEqual(s.fps, 50)
        XCTAssertNil(s.listen)
        XCTAssertEqual(s.durationMilliseconds, 12_000)
        XCTAssertEqual(s.pace, .fast)
        XCTAssertEqual(s.dataDirectory, "/tmp/x")
    }

    /// A board's defaults, then the owner's file: later files win, key by key.
    func testEncoderCapacityIsAPixelRateBeyondAnyBitRate() throws {
        var settings = Settings()
        try ConfigFile.apply(try ConfigFile.parse("[performance]\ncapacity.vaapi = 500M\n", file: "b.conf"), to: &settings)
        XCTAssertEqual(settings.performance.capacity[.vaapi], 500_000_000)
        XCTAssertThrowsError(try ConfigFile.apply(try ConfigFile.parse("[performance]\ncapacity.x264 = fast\n", file: "b.conf"), to: &settings)) {
            XCTAssertEqual("\($0)", "b.conf:2: performance.capacity.x264: expected pixels per second like 62208000 or 120M, got 'fast'")
        }
    }

    func testConfigFilesApplyInOrder() throws {
        let files = ["/usr/share/onair/board.conf": "[video]\nfps = 15\nwidth = 320\nheight = 180\n",
                     "/boot/firmware/onair.conf": "[video]\nfps = 25\n[publish]\nurl = http://10.0.2.2:8081/live/\n"]
        let invocation = try CommandLineParser.parse(["run", "--config", "/usr/share/onair/board.conf", "--config", "/boot/firmware/onair.conf"],
                                                     readFile: { Array((files[$0] ?? "").utf8) })
        guard case .run(let s, let names) = invocation else { return XCTFail("\(invocation)") }
        XCTAssertEqual(names.count, 2)
        XCTAssertEqual(s.fps, 25, "the owner's file wins")
        XCTAssertEqual(s.width, 320, "the board's value stays where the owner says nothing")
        XCTAssertEqual(s.publish.url, "http://10.0.2.2:8081/live/")
    }

    func testErrorsNameTheFlag() {
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--duraton", "5"])) { XCTAssertEqual("\($0)", "unknown flag '--duraton' (see 'onair run --help')") }
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--duration", "soon"])) { XCTAssertTrue("\($0)".hasPrefix("--duration: expected seconds"), "\($0)") }
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--pace"])) { XCTAssertEqual("\($0)", "--pace: missing value") }
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--listen", "8080"])) { XCTAssertTrue("\($0)".hasPrefix("--listen: expected ADDR:PORT"), "\($0)") }
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--set", "nokey"])) { XCTAssertEqual("\($0)", "--set nokey: expected KEY=VALUE") }
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--config", "/nonexistent/onair.conf"])) {
            XCTAssertEqual("\($0)", "--config /nonexistent/onair.conf: cannot read the file (No such file or directory)")
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["frobnicate"]))
    }

    func testHelpEverywhere() throws {
        XCTAssertEqual(try CommandLineParser.parse(["run", "--help"]), .help(CommandLineParser.runUsage))
        XCTAssertEqual(try CommandLineParser.parse(["validate", "--help"]), .help(CommandLineParser.validateUsage))
        XCTAssertEqual(try CommandLineParser.parse(["--help"]), .help(CommandLineParser.usage))
        XCTAssertEqual(try CommandLineParser.parse([]), .usage(CommandLineParser.usage), "asked for nothing: usage on stderr, exit 2")
        XCTAssertEqual(try CommandLineParser.parse(["version"]), .version)
    }
}

final class LogTests: XCTestCase {
    final class Lines: @unchecked Sendable {
        var lines: [String] = []
    }

    func testLogfmtAndJSON() {
        let captured = Lines()
        let logfmt = Log(format: .logfmt, write: { captured.lines.append($0) })
        logfmt("segment.stored", ("seq", 3), ("note", "two words"), ("quote", "a\"b"))
        let json = Log(format: .json, write: { captured.lines.append($0) })
        json("stream.ended", ("id", "x"), ("segments", 6), ("ok", true))
        XCTAssertTrue(captured.lines[0].hasPrefix("t_ms="))
        XCTAssertTrue(captured.lines[0].hasSuffix(" level=info event=segment.stored seq=3 note=\"two words\" quote=\"a\\\"b\"\n"), captured.lines[0])
        let object = try? JSONSerialization.jsonObject(with: Data(captured.lines[1].utf8)) as? [String: Any]
        XCTAssertEqual(object?["event"] as? String, "stream.ended")
        XCTAssertEqual(object?["segments"] as? Int, 6)
        XCTAssertEqual(object?["ok"] as? Bool, true)
        XCTAssertNotNil(object?["t_ms"] as? Double)
    }
}

final class MediaQueueTests: XCTestCase {
    static func frame(_ index: Int64) -> VideoFrame {
        VideoFrame(width: 2, height: 2, planes: [UInt8](repeating: 0, count: 6), captureTime: index, index: index)
    }
    static func chunk(_ time: Int64) -> AudioChunk {
        AudioChunk(samples: [0], channels: 1, sampleRate: 48_000, captureTime: time)
    }
    func drain(_ queue: MediaQueue) -> [String] {
        queue.close()
        var out: [String] = []
        while let item = queue.pop() {
            switch item {
            case .video(let f): out.append("v\(f.index)")
            case .audio(let c): out.append("a\(c.captureTime)")
            case .begin(let start): out.append("begin:\(start.id)")
            case .finish: out.append("finish")
            case .rate(let fps): out.append("rate:\(fps)")
            }
        }
        return out
    }

    /// A stream's start and end are never dropped, however full the queue is.
    func testControlItemsAreNeverDroppedOrCounted() {
        let queue = MediaQueue(videoCapacity: 1, audioCapacity: 1, policy: .dropOldest)
        queue.push(.begin(StreamStart(id: "s", wallClockMs: 0)))
        queue.capture(Self.frame(0)); queue.capture(Self.chunk(0))
        queue.capture(Self.frame(1)); queue.capture(Self.chunk(1))
        queue.push(.finish)
        XCTAssertEqual(drain(queue), ["begin:s", "v1", "a1", "finish"])
        XCTAssertEqual(queue.dropped.video, 1)
        XCTAssertEqual(queue.dropped.audio, 1)
    }

    func testRealTimeDropsTheOldestOfTheSameKindOnly() {
        let queue = MediaQueue(videoCapacity: 2, audioCapacity: 3, policy: .dropOldest)
        queue.capture(Self.frame(0)); queue.capture(Self.chunk(0)); queue.capture(Self.frame(1)); queue.capture(Self.chunk(1))
        queue.capture(Self.frame(2))   // video full: frame 0 goes, audio untouched
        queue.capture(Self.chunk(2)); queue.capture(Self.chunk(3))   // audio full: chunk 0 goes
        XCTAssertEqual(queue.dropped.video, 1)
        XCTAssertEqual(queue.dropped.audio, 1)
        XCTAssertEqual(drain(queue), ["v1", "a1", "v2", "a2", "a3"])
    }

    func testFastPaceMakesTheProducerWait() {
        let queue = MediaQueue(videoCapacity: 1, audioCapacity: 1, policy: .block)
        queue.capture(Self.frame(0))
        let pushed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { queue.capture(MediaQueueTests.frame(1)); pushed.signal() }
        XCTAssertEqual(pushed.wait(timeout: .now() + 0.2), .timedOut, "the second frame waits for room")
        guard case .video(let first)? = queue.pop() else { return XCTFail("expected a frame") }
        XCTAssertEqual(first.index, 0)
        XCTAssertEqual(pushed.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(drain(queue), ["v1"])
        XCTAssertEqual(queue.dropped.video, 0)
    }

    func testCloseWakesAWaitingProducerAndIgnoresLaterPushes() {
        let queue = MediaQueue(videoCapacity: 1, audioCapacity: 1, policy: .block)
        queue.capture(Self.frame(0))
        let returned = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { queue.capture(MediaQueueTests.frame(1)); returned.signal() }
        queue.close()
        XCTAssertEqual(returned.wait(timeout: .now() + 10), .success)
        queue.capture(Self.frame(2))
        XCTAssertEqual(drain(queue), ["v0"])
    }
}

/// The live path's own timing discipline, with real encoders and a real writer: whatever
/// the capture does (jitter, a dropped frame, a repeated one, a lost audio chunk), the
/// stream stays constant-rate, continuous and in sync.
final class LiveStreamTimingTests: XCTestCase {
    /// A 160x96 stream at `fps` with real x264 and AAC encoders, writing under a temporary
    /// folder that `addTeardownBlock` removes.
    func settingsAndEncoders(fps: Int) throws -> (Settings, VideoEncoder, AACEncoder, Log) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-live-\(UUID().uuidString)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: root) }
        var settings = Settings()
        settings.width = 160
        settings.height = 96
        settings.fps = fps
        settings.dataDirectory = root
        let size = settings.encodedSize
        let video = try VideoEncoder(kind: .x264, settings: VideoEncoderSettings(width: size.width, height: size.height, fps: fps,
                                                                                bitrate: 200_000, keyframeInterval: 2 * fps))
        return (settings, video, try AACEncoder(settings: AudioEncoderSettings()), Log(format: .logfmt, write: { _ in }))
    }

    func testDropsRepeatsJitterAndLostAudioStillGiveAValidStream() throws {
        let (settings, video, audio, log) = try settingsAndEncoders(fps: 30)
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 30)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin: Int64 = 5_000_000_000
        func frame(_ i: Int64, jitter: Int64 = 0) -> VideoFrame {
            pattern.frame(index: i, captureTime: origin + pattern.offset(of: i) + jitter)
        }
        let stream = try LiveStream(firstFrame: frame(0), wallClockMs: 1_796_229_753_000, settings: settings,
                                    video: video, audio: audio, log: log, observer: { _ in })
        var chunk: Int64 = 0
        for i in Int64(1)..<180 {
            if i == 50 || i == 51 { continue }                                     // two frames dropped
            try stream.encode(frame(i, jitter: (i % 3 - 1) * 4_000_000))            // ±4 ms jitter
            if i == 90 { try stream.encode(frame(i, jitter: 2_000_000)) }          // the same slot again
            while origin + chunk * 20_000_000 + 20_000_000 <= frame(i).captureTime {
                if chunk != 40 {                                                    // one 20 ms chunk lost
                    try stream.encode(AudioChunk(samples: tone.samples(from: chunk * 960, count: 960), channels: 1,
                                                 sampleRate: 48_000, captureTime: origin + chunk * 20_000_000))
                }
                chunk += 1
            }
        }
        try stream.finish()
        XCTAssertEqual(stream.framesEncoded, 180, "every slot of 6 s at 30 fps, once")
        XCTAssertEqual(stream.framesRepeated, 2)
        XCTAssertEqual(stream.framesSkipped, 1)
        // The lost chunk, and at the end the 40 ms from the last whole chunk (5.96 s) to the
        // last picture's end (6 s), so both tracks end together.
        XCTAssertEqual(stream.audioSilenceFilled, 960 + 1920)
        let directory = stream.writer.directory
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
    }
    /// What the qemu board showed: sound lagging the pictures by 300 ms, a stall that
    /// drops 26 frames, then a stop, with the sound let in until it covers the last picture
    /// (as the session's finishing state does). Both tracks still end together.
    func testAStopAfterAStallWithLaggingSoundEndsBothTracksTogether() throws {
        let (settings, video, audio, log) = try settingsAndEncoders(fps: 10)
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 10)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin: Int64 = 5_000_000_000
        func frame(_ i: Int64) -> VideoFrame { pattern.frame(index: i, captureTime: origin + i * 100_000_000) }
        func chunk(_ n: Int64) -> AudioChunk {
            AudioChunk(samples: tone.samples(from: n * 960, count: 960), channels: 1, sampleRate: 48_000, captureTime: origin + n * 20_000_000)
        }
        let stream = try LiveStream(firstFrame: frame(0), wallClockMs: 1_796_229_753_000, settings: settings,
                                    video: video, audio: audio, log: log, observer: { _ in })
        var next: Int64 = 0
        let last: Int64 = 205
        for i in Int64(1)...last {
            if (170..<196).contains(i) { continue }  // the stall
            try stream.encode(frame(i))
            // Sound arrives 300 ms behind the pictures.
            while origin + next * 20_000_000 + 20_000_000 <= frame(i).captureTime - 300_000_000 {
                try stream.encode(chunk(next))
                next += 1
            }
        }
        // Finishing: sound until it covers the last picture.
        while origin + next * 20_000_000 < frame(last).captureTime + 100_000_000 {
            try stream.encode(chunk(next))
            next += 1
        }
        try stream.finish()
        let directory = stream.writer.directory
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
    }
}


/// A camera unplugged for four seconds and back: the live stream goes on after an
/// EXT-X-DISCONTINUITY (no burst of repeated pictures, no sound from the gap), and the
/// recording keeps the last picture up through the gap while the sound goes on.
final class DiscontinuityTests: XCTestCase {
    func testACameraGapBecomesADiscontinuityLiveAndAPauseInTheRecording() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-gap-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        var settings = Settings()
        settings.width = 160
        settings.height = 96
        settings.dataDirectory = root
        settings.record.preallocateMegabytes = 0
        let encoderSettings = VideoEncoderSettings(width: 160, height: 96, fps: 30, bitrate: 200_000, keyframeInterval: 60)
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 30)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin: Int64 = 5_000_000_000
        let log = Log(format: .logfmt, write: { _ in })
        func frame(_ i: Int64) -> VideoFrame {
            var f = pattern.frame(index: i, captureTime: origin + pattern.offset(of: i))
            f.discontinuity = i == 210
            return f
        }
        let start = StreamStart(id: "20261202T120000Z-0001", wallClockMs: 1_796_229_753_000)
        let live = try LiveStream(start: start, firstFrame: frame(0), settings: settings,
                                  video: try VideoEncoder(kind: .x264, settings: encoderSettings),
                                  audio: try AACEncoder(settings: AudioEncoderSettings()), log: log, observer: { _ in })
        let recording = try RecordingStream(start: start, firstFrame: frame(0), profile: settings.record, fps: 30, settings: settings,
                                            video: try VideoEncoder(kind: .x264, settings: encoderSettings),
                                            audio: try AACEncoder(settings: AudioEncoderSettings()), log: log)
        var chunk: Int64 = 0
        // 0–3 s pictures, 3–7 s none (the camera is away), 7–10 s pictures again; sound throughout.
        for i in Int64(1)..<300 where i < 90 || i >= 210 {
            try live.encode(frame(i))
            try recording.encode(frame(i))
            while origin + chunk * 20_000_000 + 20_000_000 <= frame(i).captureTime {
                let sound = AudioChunk(samples: tone.samples(from: chunk * 960, count: 960), channels: 1, sampleRate: 48_000,
                                       captureTime: origin + chunk * 20_000_000)
                try live.encode(sound)
                try recording.encode(sound)
                chunk += 1
            }
        }
        try live.finish()
        try recording.finish()

        XCTAssertEqual(live.framesEncoded, 180, "no pictures invented for the gap")
        XCTAssertEqual(live.framesRepeated, 0)
        let directory = live.writer.directory
        let playlist = try String(contentsOfFile: directory + "/playlist.m3u8", encoding: .utf8)
        XCTAssertEqual(playlist.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count, 2, playlist)
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
        let parsed = try XCTUnwrap(MediaPlaylist(parsing: playlist))
        let after = try XCTUnwrap(parsed.entries.firstIndex { $0.discontinuity })
        XCTAssertEqual(parsed.entries[after].programDateTimeMs - parsed.entries[after - 1].programDateTimeMs, 3000 + 4000 - 2000,
                       "the date after the gap is the capture time of the frame after it")
        XCTAssertEqual(parsed.entries.reduce(0.0) { $0 + (Double($1.duration) ?? 0) }, 6.0, accuracy: 0.001)

        let file = root + "/recordings/\(start.id).mp4"
        XCTAssertTrue(FileManager.default.fileExists(atPath: file))
        let movie = try ParsedMovieSummary(path: file)
        XCTAssertEqual(movie.videoFrames, 180)
        XCTAssertEqual(movie.videoSeconds, 10.0, accuracy: 0.001, "the last picture before the gap lasts through it")
        XCTAssertEqual(movie.audioSeconds, 10.0, accuracy: 0.05, "the sound goes on")
    }
}

/// Frame count and durations of a progressive MP4, read through libavformat's eyes
/// (ffprobe), so the test does not trust the writer's own reader.
struct ParsedMovieSummary {
    var videoFrames = 0
    var videoSeconds = 0.0
    var audioSeconds = 0.0

    init(path: String) throws {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-count_packets", "-show_entries", "stream=codec_type,nb_read_packets,duration",
                           "-of", "csv=p=0", path]
        let pipe = Pipe()
        probe.standardOutput = pipe
        try probe.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ",")
            guard fields.count == 3 else { continue }
            if fields[0] == "video" { videoSeconds = Double(fields[1]) ?? 0; videoFrames = Int(fields[2]) ?? 0 }
            if fields[0] == "audio" { audioSeconds = Double(fields[1]) ?? 0 }
        }
    }
}

/// The start-up buffer between the camera and the session.
final class StartupGateTests: XCTestCase {
    final class Presented: PreviewSink, @unchecked Sendable {
        let lock = NSLock()
        var frames: [Int64] = []
        func present(_ frame: VideoFrame) { lock.withLock { frames.append(frame.index) } }
        func waitForFirstFrame() {}
    }

    static func frame(_ index: Int64) -> VideoFrame {
        VideoFrame(width: 2, height: 2, planes: [UInt8](repeating: 0, count: 6), captureTime: index, index: index)
    }

    /// With --pace fast a full gate makes the source wait; if the pipeline never comes up,
    /// closing the gate lets it go (a run that fails to start must still exit).
    func testClosingLetsAWaitingProducerGo() {
        let gate = StartupGate(capacity: 1, blocking: true, preview: Presented(), log: Log(format: .logfmt, write: { _ in }))
        gate.capture(Self.frame(0))
        let released = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            gate.capture(Self.frame(1))  // waits for room
            released.signal()
        }
        XCTAssertEqual(released.wait(timeout: .now() + 0.3), .timedOut, "the producer waits while the gate is full")
        gate.close()
        XCTAssertEqual(released.wait(timeout: .now() + 10), .success)
    }

    func testHeldFramesComeFirstMarkedThenFramesPassStraightThrough() {
        let preview = Presented()
        let gate = StartupGate(capacity: 3, blocking: false, preview: preview, log: Log(format: .logfmt, write: { _ in }))
        for i: Int64 in 0..<6 {
            gate.capture(Self.frame(i))
            gate.capture(AudioChunk(samples: [0], channels: 1, sampleRate: 48_000, captureTime: i))
        }
        XCTAssertEqual(preview.frames, [0, 1, 2, 3, 4, 5], "every frame is presented at once")
        XCTAssertEqual(gate.droppedWhileHeld, 3, "the oldest go when the buffer is full")
        let queue = MediaQueue(videoCapacity: 1, audioCapacity: 1, policy: .dropOldest)
        gate.open(into: queue)
        var seen: [String] = []
        // The queue holds one item of each kind; held items wait for room instead of
        // evicting each other.
        while seen.count < 6, let item = queue.pop() {
            switch item {
            case .video(let f): seen.append("v\(f.index)\(f.held ? "h" : "")")
            case .audio(let c): seen.append("a\(c.captureTime)\(c.held ? "h" : "")")
            default: break
            }
        }
        gate.join()
        XCTAssertEqual(seen, ["v3h", "a3h", "v4h", "a4h", "v5h", "a5h"])
        XCTAssertEqual(queue.dropped.video + queue.dropped.audio, 0)
        gate.capture(Self.frame(6))
        if case .video(let f)? = queue.pop() {
            XCTAssertEqual(f.index, 6)
            XCTAssertFalse(f.held, "after the hand-over, frames pass straight on")
        } else { XCTFail("frame 6 passes through") }
    }
}

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

/// The pre-roll ring, driven by capture times on a made-up clock.
final class PrerollTests: XCTestCase {
    func testTheRingStartsAtTheIDRAtOrBeforeNewestMinusNAndMovesToTenSeconds() throws {
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 30)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin: Int64 = 3_000_000_000
        let timeline = Timeline(firstVideoCaptureTime: origin, wallClockMs: 1_796_000_000_000)
        let encoder = StreamEncoder(timeline: timeline, fps: 30, rotation: .none,
                                    keyframes: SegmentGrid(start: 900_000, segmentTicks: 90_000),  // an IDR a second
                                    video: try VideoEncoder(kind: .x264, settings: VideoEncoderSettings(width: 160, height: 96, fps: 30,
                                                                                                      bitrate: 200_000, keyframeInterval: 30)),
                                    audio: try AACEncoder(settings: AudioEncoderSettings()))
        let preroll = Preroll(encoder: encoder, seconds: 1)
        for i in Int64(0)..<100 {
            try preroll.encode(pattern.frame(index: i, captureTime: origin + pattern.offset(of: i)))
            if i % 3 == 2 {  // 100 ms of sound every third frame
                try preroll.encode(AudioChunk(samples: tone.samples(from: (i / 3) * 4800, count: 4800), channels: 1, sampleRate: 48_000,
                                              captureTime: origin + (i / 3) * 100_000_000))
            }
        }
        let start = try XCTUnwrap(preroll.origin())
        // Newest frame 99; 99 − 30 = 69; the IDR at or before it is frame 60.
        XCTAssertEqual(start.video.count, 40)
        XCTAssertTrue(start.video[0].isSync)
        XCTAssertEqual(start.video[0].dts, 900_000, "moved to the stream's 10 s")
        XCTAssertEqual(start.shift.video, 60 * 3000)
        XCTAssertEqual(start.shift.audio, 96_000, "2 s at 48 kHz")
        XCTAssertEqual(start.timeline.origin, origin + 2_000_000_000, "the stream's timeline starts at frame 60's capture")
        XCTAssertEqual(start.timeline.originWallClockMs, 1_796_000_002_000)
        let firstAudio = try XCTUnwrap(start.audio.first)
        XCTAssertLessThanOrEqual(firstAudio.dts, 480_000, "sound starts at or before the first picture")
        XCTAssertGreaterThan(firstAudio.dts + firstAudio.duration, 480_000, "with the AAC frame that covers it, none before")
        let order = start.heldInTimeOrder(audioTimescale: 48_000)
        XCTAssertEqual(order.count, start.video.count + start.audio.count)
        XCTAssertTrue(zip(order, order.dropFirst()).allSatisfy { a, b in
            let ta = a.isVideo ? a.sample.dts * 48_000 : a.sample.dts * 90_000
            let tb = b.isVideo ? b.sample.dts * 48_000 : b.sample.dts * 90_000
            return ta <= tb || (b.isVideo && !a.isVideo)
        }, "interleaved in time order")
    }
}

/// One capture, two outputs: an output that falls behind drops its own oldest pictures
/// and never holds the other one back.
final class OutputIndependenceTests: XCTestCase {
    final class Counting: StreamOutput, @unchecked Sendable {
        let name: String
        let delay: useconds_t
        let lock = NSLock()
        var frames: [Int64] = []
        init(name: String, delay: useconds_t) { self.name = name; self.delay = delay }
        func prepare() throws {}
        var encoding: EncodingCost.Output? { nil }
        func prime(_ frame: VideoFrame) throws {}
        func prime(_ chunk: AudioChunk) throws {}
        func begin(_ start: StreamStart, firstFrame: VideoFrame) throws { try encode(firstFrame) }
        func encode(_ frame: VideoFrame) throws {
            usleep(delay)
            lock.withLock { frames.append(frame.index) }
        }
        func encode(_ chunk: AudioChunk) throws {}
        func setRate(_ fps: Int) {}
        func finish() throws {}
    }

    func testASlowOutputDropsItsOwnFramesAndTheOtherGetsEveryOne() {
        let slow = Counting(name: "live", delay: 20_000), fast = Counting(name: "recording", delay: 0)
        // The recording's queue is the deeper one (as in Session); deep enough here that a
        // busy test machine cannot make it drop, while the slow output must.
        let workers = [(slow, 4), (fast, 100)].map {
            OutputWorker($0.0, queue: MediaQueue(videoCapacity: $0.1, audioCapacity: 50, policy: .dropOldest), failed: { _, _ in })
        }
        for worker in workers { worker.queue.push(.begin(StreamStart(id: "s", wallClockMs: 0))) }
        for i in Int64(0)..<100 {
            let frame = VideoFrame(width: 2, height: 2, planes: [UInt8](repeating: 0, count: 6), captureTime: i, index: i)
            for worker in workers { worker.queue.push(.video(frame)) }  // never waits: drops instead
            usleep(2_000)
        }
        for worker in workers { worker.queue.push(.finish); worker.stop() }
        XCTAssertEqual(fast.frames, Array(0..<100), "the fast output got every frame, in order")
        XCTAssertLessThan(slow.frames.count, 100)
        XCTAssertEqual(workers[0].queue.dropped.video, 100 - slow.frames.count, "the slow one dropped, and counted, the rest")
        XCTAssertEqual(workers[1].queue.dropped.video, 0)
    }
}

/// The status snapshot as /metrics and the console show it.
final class StatusSnapshotTests: XCTestCase {
    let snapshot = StatusSnapshotTests.sample()
    static func sample() -> StatusSnapshot { StatusSnapshot(state: "recording", stream: "20261202T164233Z-3f9a", uptimeSeconds: 3725.5, fps: 30, framesIn: 1800,
                                  segmentsStored: 30, segmentBytes: 11_250_000, liveBitsPerSecond: 1_520_000, droppedVideoFrames: 2,
                                  droppedAudioChunks: 0, streamsEnded: 1, recordings: 3, recordingBytes: 250_000_000,
                                  recordingNowBytes: 37_748_736, cameraFrames: nil, cameraDriverDropped: nil, cameraReopened: nil,
                                  lastError: "upload.failed url=http://origin/ reason=\"timeout\"",
                                  publish: .init(destination: "http://origin/", pendingSegments: 3, pendingBytes: 1_125_000,
                                                 oldestPendingSeconds: 6.2, streamsPublishing: 1, attempts: 40, failures: 7,
                                                 bytes: 10_125_000, lastError: "timeout")) }

    func testConsoleLine() {
        XCTAssertEqual(snapshot.consoleLine(fpsActual: 29.97),
                       "onair: recording stream=20261202T164233Z-3f9a up=1h02m05s fps=30.0/30 temp=- rate=1.52M seg=30/27 queue=3(6s) "
                       + "rec=36.0M dropped=2 err=upload.failed url=http://origin/ reason=\"timeout\"")
    }

    func testMetricsInPrometheusTextFormat() {
        let text = snapshot.metrics
        XCTAssertTrue(text.hasPrefix("# HELP onair_up_seconds Seconds since onair started.\n# TYPE onair_up_seconds gauge\nonair_up_seconds 3725.5\n"))
        for line in ["onair_recording 1", "onair_fps_target 30", "onair_frames_in_total 1800", "onair_segments_stored_total 30",
                     "onair_live_bits_per_second 1520000", "onair_dropped_video_frames_total 2", "onair_recordings_bytes 250000000",
                     "onair_publish_pending_segments 3", "onair_publish_oldest_pending_seconds 6.2", "onair_publish_failures_total 7"] {
            XCTAssertTrue(text.contains("\n" + line + "\n"), line)
        }
        XCTAssertFalse(text.contains("camera"), "no camera, no camera metrics")
        // Every sample has its HELP and TYPE, and names are onair_*.
        let samples = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        XCTAssertEqual(samples.count * 3, text.split(separator: "\n").count)
        XCTAssertTrue(samples.allSatisfy { $0.hasPrefix("onair_") })
    }
}

/// The record button's meaning, on a made-up clock.
final class ButtonLogicTests: XCTestCase {
    let ms: Int64 = 1_000_000

    func testTogglePressActsAtOnceAndALongPressFiresOnce() {
        var logic = ButtonLogic(mode: .toggle, minimumHoldMs: 1000, longPressSeconds: 3)
        XCTAssertEqual(logic.press(at: 0), [.toggle], "at the press, not the release")
        XCTAssertEqual(logic.press(at: 10 * ms), [], "a second down without an up is noise")
        XCTAssertEqual(logic.tick(at: 2999 * ms), [])
        XCTAssertEqual(logic.nextDeadline, 3000 * ms)
        XCTAssertEqual(logic.tick(at: 3000 * ms), [.longPress])
        XCTAssertEqual(logic.tick(at: 9000 * ms), [], "once per press")
        XCTAssertEqual(logic.release(at: 9500 * ms), [])
        XCTAssertEqual(logic.press(at: 10_000 * ms), [.toggle])
        XCTAssertEqual(logic.release(at: 10_200 * ms), [])
        XCTAssertEqual(logic.tick(at: 20_000 * ms), [], "a short press is no long press")
    }

    func testHoldRecordsWhileHeldAndATapStillRecordsTheMinimum() {
        var logic = ButtonLogic(mode: .hold, minimumHoldMs: 1000, longPressSeconds: 3)
        XCTAssertEqual(logic.press(at: 0), [.start])
        XCTAssertEqual(logic.tick(at: 5000 * ms), [], "no long press while holding to record")
        XCTAssertEqual(logic.release(at: 6000 * ms), [.stop])
        XCTAssertEqual(logic.press(at: 10_000 * ms), [.start])
        XCTAssertEqual(logic.release(at: 10_100 * ms), [], "a tap: the stop waits for the minimum")
        XCTAssertEqual(logic.nextDeadline, 11_000 * ms)
        XCTAssertEqual(logic.tick(at: 10_999 * ms), [])
        XCTAssertEqual(logic.tick(at: 11_000 * ms), [.stop])
        XCTAssertEqual(logic.press(at: 20_000 * ms), [.start])
        XCTAssertEqual(logic.release(at: 20_100 * ms), [])
        XCTAssertEqual(logic.press(at: 20_500 * ms), [], "pressed again inside the minimum: still recording")
        XCTAssertEqual(logic.tick(at: 21_000 * ms), [])
        XCTAssertEqual(logic.release(at: 23_000 * ms), [.stop])
    }
}

final class TallyPatternTests: XCTestCase {
    func status(pending: Int, oldest: Double?) -> Publisher.Status {
        .init(destination: "d", pendingSegments: pending, pendingBytes: 0, oldestPendingSeconds: oldest, streamsPublishing: 0,
              attempts: 0, failures: 0, bytes: 0, lastError: nil)
    }

    func testWhatTheLightSays() {
        XCTAssertEqual(TallyPattern.of(state: .armed, publish: nil, failed: false), .off)
        XCTAssertEqual(TallyPattern.of(state: .recording, publish: status(pending: 2, oldest: 3), failed: false), .on)
        XCTAssertEqual(TallyPattern.of(state: .armed, publish: status(pending: 2, oldest: 3), failed: false), .slowBlink,
                       "armed, still uploading a backlog")
        XCTAssertEqual(TallyPattern.of(state: .recording, publish: status(pending: 9, oldest: 45), failed: false), .fastBlink,
                       "nothing confirmed for 45 s needs attention")
        XCTAssertEqual(TallyPattern.of(state: .stopped, publish: nil, failed: true), .fastBlink)
        XCTAssertEqual((0..<8).map { TallyPattern.slowBlink.lit(at: Int64($0) * 250) }, [true, true, false, false, true, true, false, false])
        XCTAssertEqual((0..<4).map { TallyPattern.fastBlink.lit(at: Int64($0) * 125) }, [true, false, true, false])
    }
}

/// /status: the page and its plots.
final class StatusPageTests: XCTestCase {
    func testPlotsHoldTheLastTenMinutesScaledToTheirRange() {
        let history = History()
        for i in 0..<130 {
            history.add(.init(seconds: Double(i * 5), fps: i < 100 ? 30 : 24, temperatureC: nil,
                              bitsPerSecond: 1_500_000 + Double(i % 3) * 10_000, queue: i % 4))
        }
        let samples = history.all
        XCTAssertEqual(samples.count, 120, "ten minutes at one sample per 5 s")
        XCTAssertEqual(samples.first?.seconds, 50)
        let svg = StatusPage.svg(samples)
        XCTAssertTrue(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        XCTAssertEqual(svg.components(separatedBy: "<polyline").count - 1, 3, "no line where there is no sensor")
        XCTAssertTrue(svg.contains("frame rate: 24.0 fps"))
        XCTAssertTrue(svg.contains("temperature: no data"))
        XCTAssertTrue(svg.contains("upload queue: 1 segments"))
        let firstLine = svg.components(separatedBy: "points=\"")[1].components(separatedBy: "\"")[0]
        XCTAssertEqual(firstLine.split(separator: " ").count, 120)
        XCTAssertTrue(firstLine.hasPrefix("0.0,"), "the oldest sample at the left edge")
    }

    func testThePageEscapesWhatItShows() {
        let status = StatusSnapshot(state: "armed", stream: nil, uptimeSeconds: 3700, fps: 30, framesIn: 0, segmentsStored: 0,
                                    segmentBytes: 0, liveBitsPerSecond: 0, droppedVideoFrames: 0, droppedAudioChunks: 0,
                                    streamsEnded: 0, recordings: 0, recordingBytes: 0, recordingNowBytes: nil, cameraFrames: nil,
                                    cameraDriverDropped: nil, cameraReopened: nil, lastError: "<script>x</script>", publish: nil)
        let page = StatusPage.html(status)
        XCTAssertTrue(page.contains("<td>&lt;script&gt;x&lt;/script&gt;</td>"))
        XCTAssertTrue(page.contains("<td>1 h 1 min</td>"))
        XCTAssertTrue(page.contains("src=\"/status/plots.svg\""))
    }
}

/// The frame-rate ladder on a made-up clock.
final class ThermalLadderTests: XCTestCase {
    let s: Int64 = 1_000_000_000

    func testDownWhenHotForTheDwellUpWhenCoolNeverFasterThanTheDwell() {
        var ladder = ThermalLadder(steps: [30, 24, 20, 15, 10], fps: 30, hot: 80, cool: 70, dwellSeconds: 5)
        XCTAssertEqual(ladder.fps, 30)
        XCTAssertNil(ladder.observe(temperature: 85, pressure: false, at: 0))
        XCTAssertNil(ladder.observe(temperature: 85, pressure: false, at: 4 * s), "hot, but not for the dwell yet")
        XCTAssertEqual(ladder.observe(temperature: 85, pressure: false, at: 5 * s)?.to, 24)
        XCTAssertNil(ladder.observe(temperature: 85, pressure: false, at: 6 * s), "the next step waits a whole dwell")
        XCTAssertEqual(ladder.observe(temperature: 85, pressure: false, at: 10 * s)?.to, 20)
        XCTAssertNil(ladder.observe(temperature: 75, pressure: false, at: 11 * s), "between cool and hot: stay")
        XCTAssertNil(ladder.observe(temperature: 65, pressure: false, at: 12 * s))
        XCTAssertNil(ladder.observe(temperature: 65, pressure: false, at: 16 * s))
        let up = ladder.observe(temperature: 65, pressure: false, at: 17 * s)
        XCTAssertEqual(up?.from, 20)
        XCTAssertEqual(up?.to, 24)
        XCTAssertEqual(up?.reason, "cool")
    }

    func testEncoderBacklogCountsAsHeatAndTheLadderHasEnds() {
        var ladder = ThermalLadder(steps: [10, 30, 15], fps: 25, hot: 80, cool: 70, dwellSeconds: 1)
        XCTAssertEqual(ladder.steps, [25, 15, 10], "the configured rate on top, then the steps below it")
        XCTAssertEqual(ladder.fps, 25)
        XCTAssertNil(ladder.observe(temperature: nil, pressure: true, at: 0))
        XCTAssertEqual(ladder.observe(temperature: nil, pressure: true, at: s)?.reason, "encoder backlog")
        XCTAssertEqual(ladder.fps, 15)
        XCTAssertNotNil(ladder.observe(temperature: 95, pressure: false, at: 3 * s))
        XCTAssertEqual(ladder.fps, 10)
        XCTAssertNil(ladder.observe(temperature: 95, pressure: false, at: 10 * s), "the bottom of the ladder")
        XCTAssertNil(ladder.observe(temperature: 95, pressure: false, at: 20 * s))
    }

    /// A board opened at 15 fps on the default ladder stays at 15 when cool: found on the
    /// qemu board, which climbed to 30 and repeated every other picture.
    func testCoolNeverRaisesTheRateAboveTheConfiguredOne() {
        var ladder = ThermalLadder(steps: [30, 24, 20, 15, 10], fps: 15, hot: 80, cool: 70, dwellSeconds: 1)
        for t in 0..<60 { XCTAssertNil(ladder.observe(temperature: 50, pressure: false, at: Int64(t) * s)) }
        XCTAssertEqual(ladder.fps, 15)
    }

    func testTheSensorFileIsMillidegrees() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("onair-temp-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "48312\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(ThermalWatch.read(path), 48.312)
        XCTAssertNil(ThermalWatch.read(path + ".missing"))
    }
}

/// Every board's defaults (board/*/onair.conf, installed in its image) are valid settings.
final class BoardConfigTests: XCTestCase {
    func testEveryBoardsDefaultsParse() throws {
        let boards = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../board").standardized
        let names = try FileManager.default.contentsOfDirectory(atPath: boards.path).filter { !$0.hasSuffix(".md") }.sorted()
        XCTAssertEqual(names, ["qemu-x86_64", "rpi4", "rpi5", "x86-vaapi"])
        for name in names {
            let path = boards.appendingPathComponent(name).appendingPathComponent("onair.conf").path
            var settings = Settings()
            XCTAssertNoThrow(try ConfigFile.apply(try ConfigFile.parse(try String(contentsOfFile: path, encoding: .utf8), file: path), to: &settings),
                             name)
        }
        var qemu = Settings()
        let path = boards.appendingPathComponent("qemu-x86_64/onair.conf").path
        try ConfigFile.apply(try ConfigFile.parse(try String(contentsOfFile: path, encoding: .utf8), file: path), to: &qemu)
        XCTAssertEqual(qemu.softwarePreset, "ultrafast")
        XCTAssertEqual(qemu.button.keys, [57], "KEY_SPACE")
        try ConfigFile.apply(try ConfigFile.parse("[preview]\nmode = 640x480\n", file: "x.conf"), to: &qemu)
        XCTAssertEqual(qemu.previewMode, DRMDisplay.Mode(width: 640, height: 480, refresh: 0))
        XCTAssertThrowsError(try ConfigFile.apply(try ConfigFile.parse("[preview]\nmode = big\n", file: "x.conf"), to: &qemu)) {
            XCTAssertEqual("\($0)", "x.conf:2: preview.mode: expected auto, WIDTHxHEIGHT or WIDTHxHEIGHT@HZ such as 1920x1080@60, got 'big'")
        }
    }
}

/// The serial console is shared with the login prompt: agetty hangs the tty up when it
/// starts, which makes every file opened on it before fail with EIO. The status lines
/// must go on after that.
final class ConsoleHangupTests: XCTestCase {
    func testLinesContinueAfterTheTTYIsHungUp() throws {
        // A pseudo-terminal by hand (tty_ioctl(4)): /dev/ptmx, unlock, its number.
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        XCTAssertGreaterThanOrEqual(master, 0)
        defer { close(master) }
        var unlock: Int32 = 0, number: UInt32 = 0
        XCTAssertEqual(ioctl(master, UInt(0x4004_5431) /* TIOCSPTLCK */, &unlock), 0)
        XCTAssertEqual(ioctl(master, UInt(0x8004_5430) /* TIOCGPTN */, &number), 0)
        let slave = "/dev/pts/\(number)"
        // Keep the line open from this side too, so the hang-up leaves a tty to reopen.
        let keeper = open(slave, O_RDWR | O_NOCTTY)
        defer { close(keeper) }
        let log = Log(format: .logfmt, write: { _ in })
        let snapshot = StatusSnapshotTests.sample()
        let report = OperatorReport(device: slave, interval: 3600, notifier: nil, log: log,
                                    snapshot: { [snapshot] in snapshot }, alive: { true })
        _ = fcntl(master, F_SETFL, O_NONBLOCK)
        func readUntil(_ word: String) -> String {
            var text = ""
            var buffer = [UInt8](repeating: 0, count: 4096)
            for _ in 0..<100 where !text.contains(word) {
                let n = read(master, &buffer, buffer.count)
                if n > 0 { text += String(decoding: buffer[0..<n], as: UTF8.self) } else { usleep(10_000) }
            }
            return text
        }
        log("stream.started", ("id", "first"))
        let before = readUntil("first")
        // What agetty does when it starts on the tty (it flushes what was not yet read).
        XCTAssertEqual(ioctl(keeper, UInt(0x5437) /* TIOCVHANGUP */), 0, String(cString: strerror(errno)))
        log("stream.started", ("id", "second"))
        let after = readUntil("second")
        withExtendedLifetime(report) {}
        XCTAssertTrue(before.contains("onair: stream.started id=first"), before)
        XCTAssertTrue(after.contains("onair: stream.started id=second"), "after the hang-up: \(after)")
    }
}

/// A 64x48, 10 fps x264 + mono AAC encoder on a timeline that starts at `origin`.
func smallStreamEncoder(origin: Int64) throws -> (StreamEncoder, Timeline) {
    let video = try VideoEncoder(kind: .x264, settings: VideoEncoderSettings(width: 64, height: 48, fps: 10, bitrate: 100_000, keyframeInterval: 20))
    let audio = try AACEncoder(settings: AudioEncoderSettings(sampleRate: 48_000, channels: 1, bitrate: 64_000))
    let timeline = Timeline(firstVideoCaptureTime: origin, wallClockMs: 0)
    let encoder = StreamEncoder(timeline: timeline, fps: 10, rotation: .none,
                                keyframes: SegmentGrid(start: timeline.startTicks(timescale: Timescale.video), segmentTicks: 180_000),
                                video: video, audio: audio)
    return (encoder, timeline)
}

/// The end of a stream: both tracks end together (HLS_RULES S14) even when the sound
/// lags the pictures, as it does on a loaded board.
final class StreamEncoderEndTests: XCTestCase {
    func testSoundThatStopsShortIsPaddedToTheLastPicture() throws {
        let origin: Int64 = 5_000_000_000
        let (encoder, timeline) = try smallStreamEncoder(origin: origin)
        var videoSamples: [EncodedSample] = [], audioSamples: [EncodedSample] = []
        let picture = [UInt8](repeating: 128, count: VideoFrame.byteCount(width: 64, height: 48))
        for i in 0..<10 {
            videoSamples += try encoder.encode(VideoFrame(width: 64, height: 48, planes: picture, captureTime: origin + Int64(i) * 100_000_000, index: Int64(i)))
        }
        // Sound up to 0.7 s of the pictures' 1.0 s: the last 0.3 s is still in the microphone.
        for i in 0..<35 {
            audioSamples += try encoder.encode(AudioChunk(samples: [Int16](repeating: 100, count: 960), channels: 1, sampleRate: 48_000,
                                                          captureTime: origin + Int64(i) * 20_000_000))
        }
        let rest = try encoder.flush()
        videoSamples += rest.video
        audioSamples += rest.audio
        XCTAssertEqual(encoder.videoEndTicks, 90_000, "ten frames at 10 fps")
        let audioEnd = try XCTUnwrap(audioSamples.last.map { $0.dts + $0.duration })
        let videoEnd = timeline.startTicks(timescale: 48_000) + 48_000
        XCTAssertLessThanOrEqual(abs(audioEnd - videoEnd), 1024, "audio ends \(Double(audioEnd - videoEnd) / 48_000) s from the video")
        XCTAssertGreaterThan(encoder.audioSilenceFilled, 0)
    }
}

/// A sound card whose clock runs slow against CLOCK_MONOTONIC (the qemu board's loopback):
/// each 20 ms chunk is stamped 0.4 ms later than the samples before it account for. The
/// encoder's output is contiguous, so those gaps must add up into silence, or the sound
/// slides behind the pictures and the stream's last segment ends short (S14).
final class AudioClockDriftTests: XCTestCase {
    func testASlowSoundClockIsMadeUpWithSilenceAndTheTracksEndTogether() throws {
        let origin: Int64 = 5_000_000_000
        let (encoder, timeline) = try smallStreamEncoder(origin: origin)
        var audioSamples: [EncodedSample] = []
        let picture = [UInt8](repeating: 128, count: VideoFrame.byteCount(width: 64, height: 48))
        var chunk: Int64 = 0
        for i in 0..<100 {  // 10 s
            _ = try encoder.encode(VideoFrame(width: 64, height: 48, planes: picture, captureTime: origin + Int64(i) * 100_000_000, index: Int64(i)))
            while origin + chunk * 20_400_000 + 20_400_000 <= origin + Int64(i + 1) * 100_000_000 {
                audioSamples += try encoder.encode(AudioChunk(samples: [Int16](repeating: 100, count: 960), channels: 1, sampleRate: 48_000,
                                                              captureTime: origin + chunk * 20_400_000))
                chunk += 1
            }
        }
        audioSamples += try encoder.flush().audio
        XCTAssertGreaterThan(encoder.audioSilenceFilled, 48_000 / 10, "2 % of 10 s: about 0.2 s made up with silence")
        let audioEnd = try XCTUnwrap(audioSamples.last.map { $0.dts + $0.duration })
        let videoEnd = timeline.startTicks(timescale: 48_000) + 480_000
        XCTAssertLessThanOrEqual(abs(audioEnd - videoEnd), 1024, "audio ends \(Double(audioEnd - videoEnd) / 48_000) s from the video")
    }
}
