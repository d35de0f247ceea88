import HLS
import Layout
import Media
import MP4

/// Builds a complete, correct stream in memory from fake samples (30 fps, 48 kHz, 2 s
/// segments) through the real segmenter and playlist writers; tests then break one thing.
public enum StreamBuilder {
    public static func make(seconds: Int = 6, fps: Int = 30, audio: Bool = true) -> MemoryFiles {
        let files = MemoryFiles()
        let timeline = Timeline(firstVideoCaptureTime: 5_000_000_000, wallClockMs: 1_796_000_000_000)
        let frame = Timescale.video / Int64(fps)
        let grid = SegmentGrid(start: 900_000, segmentTicks: 2 * Timescale.video)
        var planner = KeyframePlanner(grid: grid)
        var segmenter = Segmenter(grid: grid, tracks: .init(audio: audio ? 2 : nil), timeline: timeline, nominalFrameDuration: frame)
        var reports: [SegmentReport] = []
        var nextAudio: Int64 = 480_000 - 1024
        for i in 0..<(seconds * fps) {
            let ticks = 900_000 + Int64(i) * frame
            reports += segmenter.appendVideo(FakeSamples.video(dts: ticks, idr: planner.needsKeyframe(at: ticks)))
            while audio && nextAudio * Timescale.video < (ticks + frame) * 48_000 {
                reports += segmenter.appendAudio(FakeSamples.audio(dts: nextAudio))
                nextAudio += 1024
            }
        }
        reports += segmenter.finish()
        files.files["init.mp4"] = InitSegment.make(
            video: VideoTrack(width: 1280, height: 720, sps: Golden.sps, pps: Golden.pps),
            audio: audio ? AudioTrack(sampleRate: 48_000, channels: 1, config: Golden.audioConfig, averageBitrate: 64_000) : nil)
        var playlist = MediaPlaylist(targetDuration: 2)
        var iFrames = MediaPlaylist(targetDuration: 2, iFramesOnly: true)
        var meter = BitrateMeter(timescale: Timescale.video, targetDuration: 2)
        var iFrameMeter = meter
        for report in reports {
            let uri = StreamLayout.segment(report.sequence)
            files.files[uri] = report.bytes
            meter.add(bytes: report.bytes.count, ticks: report.videoDuration)
            playlist.entries.append(.init(uri: uri, duration: report.durationSeconds, programDateTimeMs: report.programDateTimeMs))
            iFrameMeter.add(bytes: report.iFrameLength!, ticks: report.videoDuration)
            iFrames.entries.append(.init(uri: uri, duration: report.durationSeconds, programDateTimeMs: report.programDateTimeMs,
                                         byteRange: (report.iFrameLength!, 0)))
        }
        playlist.isEnded = true
        iFrames.isEnded = true
        files["playlist.m3u8"] = playlist.render()
        files["iframes.m3u8"] = iFrames.render()
        let codecs = audio ? ["avc1.64001f", "mp4a.40.2"] : ["avc1.64001f"]
        files["index.m3u8"] = MultivariantPlaylist(
            variants: [.init(uri: "playlist.m3u8", bandwidth: meter.peak, averageBandwidth: meter.average, codecs: codecs,
                             width: 1280, height: 720, frameRateMilli: fps * 1000)],
            iFrameStreams: [.init(uri: "iframes.m3u8", bandwidth: iFrameMeter.peak, averageBandwidth: iFrameMeter.average,
                                  codecs: ["avc1.64001f"], width: 1280, height: 720)]).render()
        return files
    }
}

import Publishing
import Spool

extension StreamBuilder {
    /// A ladder stream written by the real StreamWriter into `root/streams/<id>`: two
    /// rungs of fake pictures cut by their own segmenters on one grid, and the sound cut
    /// by an AudioSegmenter at the top rung's cuts. `stopAfter` segments of the top rung
    /// leaves it live (no finish), as a power cut would. Returns the writer.
    @discardableResult
    public static func ladder(root: String, id: String = "ladder", seconds: Int = 6, stopAfter: Int? = nil) throws -> StreamWriter {
        let timeline = Timeline(firstVideoCaptureTime: 5_000_000_000, wallClockMs: 1_796_000_000_000)
        let frame = Timescale.video / 30
        let grid = SegmentGrid(start: 900_000, segmentTicks: 2 * Timescale.video)
        var planner = KeyframePlanner(grid: grid)
        var rungs = (0..<2).map { _ in Segmenter(grid: grid, tracks: .init(audio: nil), timeline: timeline, nominalFrameDuration: frame) }
        var sound = AudioSegmenter(timeline: timeline, timescale: 48_000)
        // Both rungs 1280x720 (the golden SPS's picture), at different bit rates.
        let sizes = [(1280, 720), (1280, 720)]
        var renditions = sizes.enumerated().map { rung, size in
            RenditionDescription(folder: "v\(rung)", kind: .video, codecs: ["avc1.64001f"], width: size.0, height: size.1,
                                 configuredBitrate: rung == 0 ? 1_500_000 : 900_000,
                                 initSegment: InitSegment.make(video: VideoTrack(width: size.0, height: size.1, sps: Golden.sps, pps: Golden.pps),
                                                               audio: nil))
        }
        renditions.append(RenditionDescription(
            folder: "audio", kind: .audio(channels: 1), codecs: ["mp4a.40.2"], configuredBitrate: 64_000,
            initSegment: InitSegment.make(video: nil, audio: AudioTrack(trackID: 1, sampleRate: 48_000, channels: 1, config: Golden.audioConfig,
                                                                         averageBitrate: 64_000))))
        let writer = try StreamWriter(root: root, id: id, renditions: renditions, fps: 30, targetDuration: 2)
        var nextAudio: Int64 = 480_000 - 1024
        func store(_ reports: [SegmentReport], _ rendition: Int) throws -> Bool {
            for report in reports {
                if rendition == 0, let stop = stopAfter, report.sequence > stop { return false }
                try writer.append(report, rendition: rendition)
                if rendition == 0, try !store(sound.cut(after: report), 2) { return false }
            }
            return true
        }
        for i in 0..<(seconds * 30) {
            let ticks = 900_000 + Int64(i) * frame
            let idr = planner.needsKeyframe(at: ticks)
            for rung in 0..<2 {
                guard try store(rungs[rung].appendVideo(FakeSamples.video(dts: ticks, idr: idr, size: rung == 0 ? 400 : 200)), rung) else { return writer }
            }
            while nextAudio * Timescale.video < (ticks + frame) * 48_000 {
                guard try store(sound.append(FakeSamples.audio(dts: nextAudio)), 2) else { return writer }
                nextAudio += 1024
            }
        }
        if stopAfter != nil { return writer }  // the power went before the end
        for rung in 0..<2 { _ = try store(rungs[rung].finish(), rung) }
        _ = try store(sound.finish(), 2)
        try writer.finish()
        return writer
    }
}
