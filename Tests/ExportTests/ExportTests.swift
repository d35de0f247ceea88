import Foundation
import XCTest
import Codecs
import Devices
@testable import Export
import Files
import HLS
import Logging
import Media
import Server
@testable import Streaming
import TestSupport

/// A stored stream out as one progressive MP4: whole or a part, through ffmpeg's eyes,
/// and over HTTP with ranges.
final class ExportTests: XCTestCase {
    static let fps = 30
    static let size = (width: 320, height: 192)

    func testTheWholeStreamIsOneMovieWithEveryFrameInOrderAndTheSoundInStep() throws {
        let (root, id) = try storedStream()
        let export = try StreamExport.make(root: root, ExportRequest(stream: id))
        XCTAssertEqual(export.name, "\(id).mp4")
        XCTAssertEqual(export.segments, 6)
        let path = root + "/whole.mp4"
        try Data(try export.file.readAll()).write(to: URL(fileURLWithPath: path))
        let movie = try Probe(path)
        XCTAssertTrue(movie.moovFirst, "moov before mdat: it plays while it downloads")
        XCTAssertEqual(movie.indices, (0..<UInt32(12 * Self.fps)).map { $0 })
        XCTAssertEqual(movie.videoStart, 0, accuracy: 0.001, "the first picture at 0")
        XCTAssertEqual(movie.audioStart, 0, accuracy: 1.0 / Double(Self.fps), "the sound starts with it (edit list over the priming)")
        XCTAssertEqual(movie.audioSeconds, 12, accuracy: 0.05)
        XCTAssertEqual(movie.errors, "", "decodes cleanly")
    }

    func testAPartStartsAtTheIDRAtOrBeforeItAndEndsWithTheSegmentHoldingItsEnd() throws {
        let (root, id) = try storedStream()
        let export = try StreamExport.make(root: root, ExportRequest(stream: id, start: 3.1, end: 7.2))
        XCTAssertEqual(export.name, "\(id)_2-8s.mp4")
        XCTAssertEqual(export.start, 2, accuracy: 0.001)
        XCTAssertEqual(export.end, 8, accuracy: 0.001)
        let path = root + "/part.mp4"
        try Data(try export.file.readAll()).write(to: URL(fileURLWithPath: path))
        let movie = try Probe(path)
        XCTAssertEqual(movie.indices, (60..<240).map { UInt32($0) }, "frames 60–239: from the IDR at 2 s to the end of the segment at 8 s")
        XCTAssertEqual(movie.videoStart, 0, accuracy: 0.001)
        XCTAssertEqual(movie.audioStart, 0, accuracy: 1.0 / Double(Self.fps))
        XCTAssertEqual(movie.errors, "")
        // By wall-clock time: the stream's dates start at 2026-12-02T16:42:33Z.
        let dated = try StreamExport.make(root: root, ExportRequest(stream: id, from: 1_796_229_756_100, to: 1_796_229_760_200))
        XCTAssertEqual(try dated.file.readAll(), try export.file.readAll(), "the same part, asked by date")
        let last = try StreamExport.make(root: root, ExportRequest(stream: id, last: 3.5))
        XCTAssertEqual(last.name, "\(id)_8-12s.mp4", "the last 3.5 s: from the IDR at 8 s")
    }

    func testACameraGapKeepsThePictureUpAndTheSoundInStep() throws {
        let (root, id) = try storedStream(gapFrames: 60)
        let path = root + "/gap.mp4"
        try Data(try StreamExport.make(root: root, ExportRequest(stream: id)).file.readAll()).write(to: URL(fileURLWithPath: path))
        let movie = try Probe(path)
        XCTAssertEqual(movie.indices, (0..<UInt32(12 * Self.fps - 60)).map { $0 }, "every frame once")
        XCTAssertEqual(movie.videoSeconds, 12, accuracy: 0.05, "the last picture before the gap lasts through it")
        XCTAssertEqual(movie.audioSeconds, 12, accuracy: 0.05)
        XCTAssertEqual(movie.errors, "")
    }

    func testARecordingWholeIsItselfAndAPartIsCutAtItsIDRs() throws {
        let (root, id) = try storedStream(recording: true)
        let file = root + "/recordings/\(id).mp4"
        let whole = try StreamExport.make(root: root, .recording(id))
        XCTAssertEqual(whole.name, "\(id).mp4")
        XCTAssertEqual(try whole.file.readAll(), try Array(Data(contentsOf: URL(fileURLWithPath: file))), "the file as it is")
        let part = try StreamExport.make(root: root, .recording(id, start: 3.1, end: 7.2))
        XCTAssertEqual(part.name, "\(id)_2-8s.mp4", "from the IDR at 2 s to the end of the GOP holding 7.2 s")
        let path = root + "/recording-part.mp4"
        try Data(try part.file.readAll()).write(to: URL(fileURLWithPath: path))
        let movie = try Probe(path)
        XCTAssertEqual(movie.indices, (60..<240).map { UInt32($0) })
        XCTAssertEqual(movie.videoStart, 0, accuracy: 0.001)
        XCTAssertEqual(movie.audioStart, 0, accuracy: 1.0 / Double(ExportTests.fps), "the sound starts with the pictures")
        XCTAssertEqual(movie.audioSeconds, 6, accuracy: 0.05)
        XCTAssertEqual(movie.errors, "")
        let last = try StreamExport.make(root: root, .recording(id, last: 1))
        XCTAssertEqual(last.name, "\(id)_10-12s.mp4")
        XCTAssertThrowsError(try StreamExport.make(root: root, .recording("nope"))) { XCTAssertEqual(($0 as? ExportError)?.status, 404) }
        XCTAssertThrowsError(try StreamExport.make(root: root, .recording(id, start: 20))) { XCTAssertEqual(($0 as? ExportError)?.status, 400) }
    }

    func testBadRequestsAreOneLineEach() throws {
        let (root, id) = try storedStream()
        func refusal(_ request: ExportRequest) -> ExportError? {
            do { _ = try StreamExport.make(root: root, request); return nil } catch { return error as? ExportError }
        }
        XCTAssertEqual(refusal(ExportRequest(stream: "nope"))?.status, 404)
        XCTAssertEqual(refusal(ExportRequest(stream: "../streams"))?.status, 400)
        XCTAssertEqual(refusal(ExportRequest(stream: id, start: 8, end: 2)), ExportError(400, "start (8 s) is after end (2 s)"))
        XCTAssertEqual(refusal(ExportRequest(stream: id, start: 30)), ExportError(400, "start 30 s is past the stream's end (12 s)"))
        XCTAssertThrowsError(try ExportRequest(arguments: { ["stream": id, "start": "soon"][$0] })) {
            XCTAssertEqual($0 as? ExportError, ExportError(400, "start=soon is not a number of seconds from 0 to 1000000000"))
        }
        // Issue 29: numbers past what an Int holds were a trap that ended the appliance.
        for value in ["1e19", "1e308", "9223372036854775807", "-1", "nan", "inf", "1e9000"] {
            XCTAssertThrowsError(try ExportRequest(arguments: { ["stream": id, "start": value][$0] }), value) {
                XCTAssertEqual(($0 as? ExportError)?.status, 400, value)
            }
        }
        XCTAssertEqual(refusal(ExportRequest(stream: id, start: 1e9)), ExportError(400, "start 1000000000 s is past the stream's end (12 s)"))
        XCTAssertEqual(StreamExport.label(12.5), "12.5")
        XCTAssertEqual(StreamExport.label(1e9), "1000000000")
        XCTAssertTrue(StreamExport.label(1e20).hasSuffix("e+19"), "past Int64: printed, not converted")
        XCTAssertEqual(refusal(.recording("nope", start: 1e9))?.status, 404)
        XCTAssertThrowsError(try ExportRequest(arguments: { _ in nil })) { XCTAssertEqual(($0 as? ExportError)?.status, 400) }
        // A stream whose clock was never synchronised has no dates to go by.
        let playlist = root + "/streams/\(id)/playlist.m3u8"
        let text = try String(contentsOfFile: playlist, encoding: .utf8)
        try text.split(separator: "\n").filter { !$0.hasPrefix("#EXT-X-PROGRAM-DATE-TIME") }.joined(separator: "\n")
            .write(toFile: playlist, atomically: true, encoding: .utf8)
        XCTAssertEqual(refusal(ExportRequest(stream: id, from: 1_796_229_756_100))?.status, 400)
    }

    /// A stored segment is a file: a tfdt of 2^63 (legal in a version-1 box) trapped the
    /// export's sums; it is a 500 naming the segment (issue 29).
    func testASegmentWhoseTfdtIsPastInt64IsAnErrorNotATrap() throws {
        let (root, id) = try storedStream()
        let path = root + "/streams/\(id)/seg/000002.m4s"
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let at = try XCTUnwrap(bytes.firstRange(of: Array("tfdt".utf8))).lowerBound
        XCTAssertEqual(bytes[at + 4], 1, "a version-1 tfdt")
        bytes.replaceSubrange((at + 8)..<(at + 16), with: [0x80, 0, 0, 0, 0, 0, 0, 0])
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try StreamExport.make(root: root, ExportRequest(stream: id))) {
            XCTAssertEqual(($0 as? ExportError)?.status, 500)
            XCTAssertTrue("\($0)".contains("seg/000002.m4s"), "\($0)")
        }
    }

    func testOverHTTPWithRangesThatReturnTheSameBytes() throws {
        let (root, id) = try storedStream()
        let server = try WebServer(listen: "127.0.0.1:0", root: root, downloads: ["/api/export": WebServer.Download { argument in
            do {
                let made = try StreamExport.make(root: root, try ExportRequest(arguments: argument))
                return .file(made.file, name: made.name, contentType: "video/mp4")
            } catch { return .refused((error as? ExportError)?.status ?? 500, "\(error)") }
        }])
        defer { server.stop() }
        let whole = try HTTPClient.request(port: server.port, "/api/export?stream=\(id)")
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(whole.header("Content-Length"), String(whole.body.count))
        XCTAssertEqual(whole.header("Content-Disposition"), "attachment; filename=\"\(id).mp4\"")
        XCTAssertEqual(whole.header("Accept-Ranges"), "bytes")
        XCTAssertEqual(whole.body, try StreamExport.make(root: root, ExportRequest(stream: id)).file.readAll())
        // Ranges across the header, into the media, and to the end: the same bytes.
        for (first, last) in [(0, 99), (500, 70_000), (whole.body.count - 1000, whole.body.count - 1)] {
            let part = try HTTPClient.request(port: server.port, "/api/export?stream=\(id)", headers: ["Range": "bytes=\(first)-\(last)"])
            XCTAssertEqual(part.status, 206)
            XCTAssertEqual(part.header("Content-Range"), "bytes \(first)-\(last)/\(whole.body.count)")
            XCTAssertEqual(part.body, Array(whole.body[first...last]))
        }
        let resumed = try HTTPClient.request(port: server.port, "/api/export?stream=\(id)",
                                             headers: ["Range": "bytes=1000-", "If-Range": "\"stale\""])
        XCTAssertEqual(resumed.status, 200, "If-Range that does not match: the whole file")
        let missing = try HTTPClient.request(port: server.port, "/api/export?stream=nope")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.text, "{\"error\":\"no stream nope\"}")
        XCTAssertEqual(try HTTPClient.request(port: server.port, "/api/export?stream=\(id)&start=9&end=1").status, 400)
    }
}

extension XCTestCase {
    /// A real 12 s stream (x264 + AAC, 2 s segments) under a fresh data directory, with a
    /// gap of `gapFrames` pictures (the camera away) after frame 150 when asked; with
    /// `ladder`, a second rung of 160x96 at 300 kbit/s and the sound a rendition of its own;
    /// `dropped`: the frames while which the top rung is asked to be left out (the heat);
    /// `soundUntil`: the frame after which the microphone delivers nothing; `beforeFinish`
    /// looks at the stream while it is still live.
    func storedStream(gapFrames: Int64 = 0, recording: Bool = false, ladder: Bool = false, dropped: Range<Int64>? = nil,
                      soundUntil: Int64? = nil, beforeFinish: (String) throws -> Void = { _ in }) throws -> (root: String, id: String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-export-\(UUID().uuidString)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: root) }
        let video = VideoEncoderSettings(width: ExportTests.size.width, height: ExportTests.size.height, fps: ExportTests.fps, bitrate: 1_000_000,
                                         keyframeInterval: 2 * ExportTests.fps)
        let profile = LiveProfile(output: OutputProfile(encoder: .x264, video: video, audio: AudioEncoderSettings(), dataDirectory: root),
                                  segmentMilliseconds: 2000, lowerRungs: ladder ? [Rung(width: 160, height: 96, bitrate: 300_000)] : [])
        let pattern = SyntheticPattern(width: ExportTests.size.width, height: ExportTests.size.height, fps: ExportTests.fps)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin: Int64 = 5_000_000_000
        func frame(_ i: Int64) -> VideoFrame {
            var f = pattern.frame(index: i, captureTime: origin + pattern.offset(of: i + (i > 150 ? gapFrames : 0)))
            f.discontinuity = gapFrames > 0 && i == 151
            return f
        }
        let id = "20261202T164233Z-0e0e"
        let start = StreamStart(id: id, dating: StreamDating(offsetMs: 1_796_229_753_000 - origin / 1_000_000))
        let stream = try LiveStream(start: start, firstFrame: frame(0), profile: profile, video: try VideoEncoder(kind: .x264, settings: video),
                                    lowerRungs: try profile.rungSettings.dropFirst().map { try VideoEncoder(kind: .x264, settings: $0) },
                                    audio: try AACEncoder(settings: AudioEncoderSettings()), log: Log.silent(), observer: { _ in })
        // The local recording of the same frames: its own encoders, an IDR every 2 s.
        let recorder = try recording ? RecordingStream(
            start: start, firstFrame: frame(0), profile: RecordingProfile(output: profile.output, preallocateMegabytes: 0, priority: .normal),
            video: try VideoEncoder(kind: .x264, settings: video), audio: try AACEncoder(settings: AudioEncoderSettings()),
            log: Log.silent()) : nil
        var chunk: Int64 = 0
        let frames = Int64(12 * ExportTests.fps) - gapFrames
        for i in Int64(1)..<frames {
            if let dropped, i == dropped.lowerBound || i == dropped.upperBound { stream.setDroppedRungs(i == dropped.lowerBound ? 1 : 0) }
            try stream.encode(frame(i))
            try recorder?.encode(frame(i))
            while origin + (chunk + 1) * 20_000_000 <= frame(i).captureTime, i < soundUntil ?? .max {
                let sound = AudioChunk(samples: tone.samples(from: chunk * 960, count: 960), channels: 1, sampleRate: 48_000,
                                       captureTime: origin + chunk * 20_000_000)
                try stream.encode(sound)
                try recorder?.encode(sound)
                chunk += 1
            }
        }
        try beforeFinish("\(root)/streams/\(id)")
        try stream.finish()
        try recorder?.finish()
        return (root, id)
    }
}

/// What ffmpeg and ffprobe see in a movie: the synthetic band of every picture, start
/// times and durations, and whether the `moov` comes first.
struct Probe {
    var indices: [UInt32] = []
    var videoStart = 0.0, audioStart = 0.0, videoSeconds = 0.0, audioSeconds = 0.0
    var moovFirst = false
    var errors = ""

    init(_ path: String) throws {
        let (width, height) = (ExportTests.size.width, ExportTests.size.height)
        let frames = try toolOutput("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-map", "0:v:0", "-fps_mode", "passthrough",
                                                        "-f", "rawvideo", "-pix_fmt", "gray", "-"]).stdout
        let size = width * height
        indices = frames.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            return (0..<(frames.count / size)).map {
                SyntheticPattern.decodeIndex(luma: UnsafeBufferPointer(rebasing: bytes[($0 * size)..<(($0 + 1) * size)]),
                                             width: width, height: height) ?? .max
            }
        }
        let streams = String(decoding: try toolOutput("/usr/bin/ffprobe", ["-v", "error", "-show_entries",
            "stream=codec_type,start_time,duration", "-of", "csv=p=0", path]).stdout, as: UTF8.self)
        for line in streams.split(separator: "\n") {
            let fields = line.split(separator: ",").map(String.init)
            guard fields.count == 3 else { continue }
            if fields[0] == "video" { videoStart = Double(fields[1]) ?? -1; videoSeconds = Double(fields[2]) ?? 0 }
            if fields[0] == "audio" { audioStart = Double(fields[1]) ?? -1; audioSeconds = Double(fields[2]) ?? 0 }
        }
        let head = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)).prefix(4096))
        if let moov = head.indices.first(where: { head[$0...].starts(with: Array("moov".utf8)) }) {
            moovFirst = !head[..<moov].starts(with: Array("mdat".utf8)) && moov < 100
        }
        let decode = Process()
        decode.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        decode.arguments = ["-v", "error", "-i", path, "-fps_mode", "passthrough", "-f", "null", "-"]
        let pipe = Pipe()
        decode.standardError = pipe
        try decode.run()
        errors = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        decode.waitUntilExit()
    }
}
