import Basics
import Foundation
import HLS
import Layout
import Media
import MP4
import Recording
import TestSupport
import XCTest
import Logging

/// A recording as the recording output makes it: 30 fps video with an IDR every 2 s and
/// 48 kHz AAC frames starting one priming frame early, cut into 1 s fragments by the same
/// segmenter, each sample's bytes unique so any mix-up shows.
struct FakeRecording {
    var initSegment: [UInt8]
    var fragments: [[UInt8]]
    var video: [EncodedSample] = []
    var audio: [EncodedSample] = []

    init(seconds: Int, audioTrack: Bool = true) {
        let fps: Int64 = 30, frame = Timescale.video / 30
        let start = Timeline.initialOffsetSeconds * Timescale.video
        let timeline = Timeline(firstVideoCaptureTime: 1_000_000_000, wallClockMs: 1_796_000_000_000)
        var keyframes = KeyframePlanner(grid: SegmentGrid(start: start, segmentTicks: 2 * Timescale.video))
        var fragmenter = Segmenter(grid: SegmentGrid(start: start, segmentTicks: Timescale.video),
                                   tracks: .init(audio: audioTrack ? 2 : nil), timeline: timeline,
                                   nominalFrameDuration: frame, cutsOnlyAtSync: false)
        var reports: [SegmentReport] = []
        var nextAudio = Timeline.initialOffsetSeconds * 48_000 - 1024
        for i in 0..<(Int64(seconds) * fps) {
            let ticks = start + i * frame
            let idr = keyframes.needsKeyframe(at: ticks)
            let nal: [UInt8] = [idr ? 0x65 : 0x41] + (0..<(20 + Int(i % 17))).map { UInt8(truncatingIfNeeded: i &* 7 &+ Int64($0)) }
            let sample = EncodedSample(data: H264.lengthPrefixed([nal[...]]), dts: ticks, pts: ticks, duration: 0, isSync: idr)
            video.append(sample)
            reports += fragmenter.appendVideo(sample)
            while audioTrack && nextAudio * Timescale.video < (ticks + frame) * 48_000 {
                let bytes = (0..<(8 + Int(nextAudio / 1024 % 5))).map { UInt8(truncatingIfNeeded: nextAudio / 1024 + Int64($0)) }
                let a = EncodedSample(data: bytes, dts: nextAudio, pts: nextAudio, duration: 1024, isSync: true)
                audio.append(a)
                reports += fragmenter.appendAudio(a)
                nextAudio += 1024
            }
        }
        reports += fragmenter.finish()
        initSegment = InitSegment.make(
            video: VideoTrack(width: 1280, height: 720, sps: Golden.sps, pps: Golden.pps),
            audio: audioTrack ? AudioTrack(sampleRate: 48_000, channels: 1, config: Golden.audioConfig, averageBitrate: 64_000) : nil)
        fragments = reports.map(\.bytes)
        // The segmenter keeps audio only up to the video's end; so does the file.
        let videoEnd = start + Int64(seconds) * fps * frame
        audio.removeAll { $0.dts * Timescale.video >= videoEnd * 48_000 }
    }
}

/// A progressive MP4 read back through its own sample tables (stsz, stsc, co64, stts,
/// stss, elst), independently of the code that wrote it.
struct ProgressiveReader {
    struct Track {
        var handler: String
        var sizes: [Int] = []
        var offsets: [Int] = []
        var durations: [UInt32] = []
        var syncSamples: [Int]?
        var edits: [(duration: Int64, mediaTime: Int64)] = []
    }
    var topLevel: [String]
    var tracks: [Track] = []
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) throws {
        self.bytes = bytes
        let boxes = try BoxTree.parse(bytes)
        topLevel = boxes.map(\.type)
        guard let moov = boxes.first(where: { $0.type == "moov" }) else { throw MP4Error.missing("moov") }
        for trak in moov.all("trak") {
            let hdlr = trak.find(["mdia", "hdlr"])!
            var r = ByteReader(bytes, range: hdlr.payload)
            try r.skip(8)
            var track = Track(handler: try r.fourCC())
            let stbl = trak.find(["mdia", "minf", "stbl"])!
            func table(_ type: String, _ body: (inout ByteReader, Int) throws -> Void) throws {
                guard let box = stbl.child(type) else { return }
                var r = ByteReader(bytes, range: box.payload)
                try r.skip(4)
                if type == "stsz" { try r.skip(4) }
                let count = Int(try r.u32())
                for _ in 0..<count { try body(&r, count) }
            }
            try table("stsz") { r, _ in track.sizes.append(Int(try r.u32())) }
            var chunkOffsets: [Int] = []
            try table("co64") { r, _ in chunkOffsets.append(Int(try r.u64())) }
            var stsc: [(first: Int, count: Int)] = []
            try table("stsc") { r, _ in stsc.append((Int(try r.u32()), Int(try r.u32()))); try r.skip(4) }
            try table("stts") { r, _ in
                let count = Int(try r.u32()), delta = try r.u32()
                track.durations += Array(repeating: delta, count: count)
            }
            if stbl.child("stss") != nil {
                track.syncSamples = []
                try table("stss") { r, _ in track.syncSamples!.append(Int(try r.u32())) }
            }
            if let elst = trak.find(["edts", "elst"]) {
                var e = ByteReader(bytes, range: elst.payload)
                let version = try e.u8(); try e.skip(3)
                for _ in 0..<Int(try e.u32()) {
                    if version == 1 { track.edits.append((Int64(try e.u64()), Int64(bitPattern: try e.u64()))) } else {
                        track.edits.append((Int64(try e.u32()), Int64(Int32(bitPattern: try e.u32()))))
                    }
                    try e.skip(4)
                }
            }
            var sample = 0
            for (index, offset) in chunkOffsets.enumerated() {
                let perChunk = stsc.last { $0.first <= index + 1 }!.count
                var cursor = offset
                for _ in 0..<perChunk {
                    track.offsets.append(cursor)
                    cursor += track.sizes[sample]
                    sample += 1
                }
            }
            tracks.append(track)
        }
    }

    func samples(_ handler: String) -> [[UInt8]] {
        guard let track = tracks.first(where: { $0.handler == handler }) else { return [] }
        return zip(track.offsets, track.sizes).map { Array(bytes[$0..<($0 + $1)]) }
    }
}

final class FinaliserTests: XCTestCase {
    var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onair-rec-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    func write(_ recording: FakeRecording, fragments: Int? = nil, tail: [UInt8] = []) throws -> String {
        let part = StreamLayout(root: directory).recordingPart("rec")
        let file = try RecordingFile(layout: StreamLayout(root: directory), id: "rec", initSegment: recording.initSegment, preallocateBytes: 1 << 20)
        for fragment in recording.fragments.prefix(fragments ?? recording.fragments.count) { try file.append(fragment) }
        if !tail.isEmpty {
            let handle = try XCTUnwrap(FileHandle(forWritingAtPath: part))
            handle.seekToEndOfFile()
            handle.write(Data(tail))
            handle.closeFile()
        }
        XCTAssertEqual(file.writeLatencies.count, fragments ?? recording.fragments.count, "one timed write per fragment")
        return part
    }

    func testEveryFragmentBecomesOneProgressiveFileWithMoovFirst() throws {
        let recording = FakeRecording(seconds: 5)
        XCTAssertEqual(recording.fragments.count, 5, "one fragment per second")
        let part = try write(recording)
        // While it is written, the .part is itself a playable fragmented MP4.
        XCTAssertEqual(try BoxTree.parse(Array(try Data(contentsOf: URL(fileURLWithPath: part)))).map(\.type),
                       ["ftyp", "moov"] + Array(repeating: ["moof", "mdat"], count: 5).flatMap { $0 })
        let result = try XCTUnwrap(try Finaliser.finalise(partPath: part, to: "\(directory)/rec.mp4"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: part), "the .part goes once the .mp4 is durable")
        XCTAssertEqual(result.fragments, 5)
        XCTAssertEqual(result.videoFrames, 150)
        XCTAssertEqual(result.seconds, 5.0, accuracy: 0.0001)
        XCTAssertEqual(result.discardedBytes, 0)

        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/rec.mp4")))
        XCTAssertEqual(Int64(bytes.count), result.bytes)
        let movie = try ProgressiveReader(bytes)
        XCTAssertEqual(movie.topLevel, ["ftyp", "moov", "mdat"], "moov before mdat: playable while downloading")
        XCTAssertEqual(movie.samples("vide"), recording.video.map(\.data), "every video sample, in order, byte for byte")
        XCTAssertEqual(movie.samples("soun"), recording.audio.map(\.data), "every audio frame, in order, byte for byte")
        let video = try XCTUnwrap(movie.tracks.first { $0.handler == "vide" })
        XCTAssertEqual(video.durations, Array(repeating: 3000, count: 150))
        XCTAssertEqual(video.syncSamples, [1, 61, 121], "an IDR every 2 s, listed in stss")
        XCTAssertEqual(video.edits.count, 1)
        XCTAssertEqual(video.edits[0].mediaTime, 0)
        XCTAssertEqual(video.edits[0].duration, 5000, "5 s in movie ticks (ms)")
        let audio = try XCTUnwrap(movie.tracks.first { $0.handler == "soun" })
        XCTAssertNil(audio.syncSamples, "every audio frame is a sync sample: no stss")
        XCTAssertEqual(audio.edits.map(\.mediaTime), [1024], "the AAC priming is skipped by the edit list")
    }

    /// What ffmpeg's own demuxer makes of the file: frame counts and start times.
    func testFFprobeReadsTheFinalisedFile() throws {
        let recording = FakeRecording(seconds: 3)
        let part = try write(recording)
        _ = try Finaliser.finalise(partPath: part, to: "\(directory)/rec.mp4")
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-count_packets", "-show_entries", "stream=codec_type,nb_read_packets,start_time",
                           "-of", "csv=p=0", "\(directory)/rec.mp4"]
        let pipe = Pipe()
        probe.standardOutput = pipe
        probe.standardError = FileHandle.nullDevice  // the fake samples are not decodable pictures
        try probe.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        XCTAssertEqual(probe.terminationStatus, 0)
        let lines = output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines, ["video,0.000000,90", "audio,0.000000,\(recording.audio.count)"], output)
    }

    /// A power cut mid-fragment: the file ends inside a moof/mdat. Recovery keeps every
    /// complete fragment and leaves the torn one out.
    func testATornLastFragmentIsLeftOutAndTheRestIsKept() throws {
        let recording = FakeRecording(seconds: 4)
        let torn = Array(recording.fragments[3].prefix(recording.fragments[3].count / 2))
        let part = try write(recording, fragments: 3, tail: torn)
        let result = try XCTUnwrap(try Finaliser.finalise(partPath: part, to: "\(directory)/rec.mp4"))
        XCTAssertEqual(result.fragments, 3)
        XCTAssertEqual(result.videoFrames, 90)
        XCTAssertEqual(result.discardedBytes, Int64(torn.count))
        let movie = try ProgressiveReader(Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/rec.mp4"))))
        XCTAssertEqual(movie.samples("vide"), Array(recording.video.prefix(90).map(\.data)))
    }

    func testARecordingWithoutACompleteFragmentIsRemoved() throws {
        let part = try write(FakeRecording(seconds: 2), fragments: 0, tail: [0, 0, 0, 99, 0x6D, 0x6F])
        XCTAssertNil(try Finaliser.finalise(partPath: part, to: "\(directory)/rec.mp4"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: part))
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(directory)/rec.mp4"))
    }

    func testVideoOnly() throws {
        let recording = FakeRecording(seconds: 2, audioTrack: false)
        let part = try write(recording)
        _ = try Finaliser.finalise(partPath: part, to: "\(directory)/rec.mp4")
        let movie = try ProgressiveReader(Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/rec.mp4"))))
        XCTAssertEqual(movie.tracks.map(\.handler), ["vide"])
        XCTAssertEqual(movie.samples("vide"), recording.video.map(\.data))
    }

    func testGarbageIsReportedAndKept() throws {
        let part = "\(directory)/bad.mp4.part"
        FileManager.default.createFile(atPath: part, contents: Data("not an mp4 at all".utf8))
        XCTAssertThrowsError(try Finaliser.finalise(partPath: part, to: "\(directory)/bad.mp4")) { error in
            XCTAssertTrue("\(error)".contains("bad.mp4.part"), "\(error)")
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: part), "nothing recorded is thrown away")
    }
}

final class RecordingsTests: XCTestCase {
    func testListRecoverExpireAndKeep() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-recs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let recordings = Recordings(root: root)
        let recording = FakeRecording(seconds: 2)
        // Three old recordings left as .part by "crashes", and one still being written.
        let day: Int64 = 86_400_000
        let now: Int64 = 1_796_000_000_000
        var ids: [String] = []
        for age in [Int64(40), 20, 1] {
            let id = UTCDate.compact(milliseconds: now - age * day) + "-0001"
            ids.append(id)
            let file = try RecordingFile(layout: recordings.layout, id: id, initSegment: recording.initSegment, preallocateBytes: 0)
            for fragment in recording.fragments { try file.append(fragment) }
        }
        let events = EventNames()
        recordings.recoverAll(priority: .normal, log: events.log)
        XCTAssertEqual(events.names, Array(repeating: "recording.recovered", count: 3))
        let listed = recordings.list()
        XCTAssertEqual(listed.map(\.id), ids)
        XCTAssertEqual(listed.map(\.frames), [60, 60, 60])
        XCTAssertEqual(listed.map(\.recording), [false, false, false])

        // The 20-day-old one is marked keep by hand; keep_days = 10 removes only the oldest.
        let keepPath = "\(recordings.directory)/\(ids[1]).json"
        let kept = try String(contentsOfFile: keepPath, encoding: .utf8).replacingOccurrences(of: "\"normal\"", with: "\"keep\"")
        try kept.write(toFile: keepPath, atomically: true, encoding: .utf8)
        let expired = EventNames()
        recordings.expire(keepDays: 10, nowMs: now, log: expired.log)
        XCTAssertEqual(expired.names, ["recording.expired"])
        XCTAssertEqual(recordings.list().map(\.id), [ids[1], ids[2]])
        XCTAssertEqual(recordings.evictable().map(\.id), [ids[2]], "keep is never evicted")

        // GET /api/recordings: the same list as JSON, each entry as its .json beside it says.
        let api = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(recordings.json)) as? [String: [[String: Any]]])
        XCTAssertEqual(api["recordings"]?.map { $0["id"] as? String }, [ids[1], ids[2]])
        XCTAssertEqual(api["recordings"]?.map { $0["priority"] as? String }, ["keep", "normal"])
        XCTAssertEqual(api["recordings"]?.first?["file"] as? String, "\(ids[1]).mp4")
        XCTAssertEqual(api["recordings"]?.first?["frames"] as? Int, 60)
    }
}
