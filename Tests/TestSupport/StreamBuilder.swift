import HLS
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
            let uri = MediaPlaylist.segmentURI(report.sequence)
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
