import Codecs
import HLS
import Media
import MP4
import Publishing

/// One stream from its first video frame to ENDLIST: encoders → segmenter → files. Runs
/// on the media thread only; nothing here is shared.
final class LiveStream {
    let writer: StreamWriter
    let timeline: Timeline
    let settings: Settings
    private let log: Log
    private let video: H264Encoder
    private let audio: AACEncoder?
    private var planner: KeyframePlanner
    private var segmenter: Segmenter
    private var lastVideoTicks: Int64?
    /// Media time covered so far, in 90 kHz ticks from the stream start.
    private(set) var videoEndTicks: Int64 = 0
    private(set) var audioEndTicks: Int64 = 0
    private(set) var framesEncoded = 0
    private(set) var framesSkipped = 0

    var id: String { writer.id }

    init(firstFrame: VideoFrame, wallClockMs: Int64, settings: Settings, video: H264Encoder, audio: AACEncoder?, log: Log,
         observer: @escaping (StreamEvent) -> Void) throws {
        self.settings = settings
        self.log = log
        self.video = video
        self.audio = audio
        timeline = Timeline(firstVideoCaptureTime: firstFrame.captureTime, wallClockMs: wallClockMs)
        let grid = SegmentGrid(start: timeline.startTicks(timescale: Timescale.video), segmentTicks: settings.segmentTicks)
        planner = KeyframePlanner(grid: grid)
        segmenter = Segmenter(grid: grid,
                              tracks: .init(audio: audio == nil ? nil : 2, audioTimescale: Int64(settings.sampleRate)),
                              timeline: timeline, nominalFrameDuration: Timescale.video / Int64(settings.fps))
        let sps = try H264SPS(nal: video.sps[...])
        let size = settings.encodedSize
        var codecs = [sps.codecString]
        var audioTrack: AudioTrack?
        if let audio {
            let config = try AudioSpecificConfig(bytes: audio.audioSpecificConfig)
            codecs.append(config.codecString)
            audioTrack = AudioTrack(sampleRate: settings.sampleRate, channels: settings.channels,
                                    config: audio.audioSpecificConfig, averageBitrate: UInt32(settings.audioBitrate))
        }
        let initSegment = InitSegment.make(
            video: VideoTrack(width: sps.width, height: sps.height, sps: video.sps, pps: video.pps), audio: audioTrack)
        let description = StreamDescription(codecs: codecs, width: size.width, height: size.height, fps: settings.fps,
                                            configuredBitrate: settings.videoBitrate + (audio == nil ? 0 : settings.audioBitrate),
                                            targetDuration: settings.targetDuration)
        writer = try StreamWriter(root: settings.dataDirectory, id: StreamWriter.makeID(wallClockMs: wallClockMs),
                                  description: description, initSegment: initSegment, observer: observer)
        try encode(firstFrame)
    }

    /// Encodes a frame; frames whose timestamp does not advance are skipped so the track
    /// keeps a strictly increasing, constant-rate timeline.
    func encode(_ frame: VideoFrame) throws {
        let ticks = timeline.ticks(captureTime: frame.captureTime, timescale: Timescale.video)
        if let last = lastVideoTicks, ticks <= last {
            framesSkipped += 1
            return
        }
        lastVideoTicks = ticks
        let keyframe = planner.needsKeyframe(at: ticks)
        let input = settings.rotation == .none ? frame : frame.rotated(settings.rotation)
        for sample in try video.encode(input, ticks: ticks, keyframe: keyframe) {
            try store(segmenter.appendVideo(sample))
        }
        framesEncoded += 1
        videoEndTicks = ticks - timeline.startTicks(timescale: Timescale.video) + Timescale.video / Int64(settings.fps)
    }

    /// Encodes a chunk of sound, trimmed to start no earlier than the stream.
    func encode(_ chunk: AudioChunk) throws {
        guard let audio else { return }
        let rate = Int64(chunk.sampleRate)
        var samples = chunk.samples
        var captureTime = chunk.captureTime
        if captureTime < timeline.origin {
            let skip = Int(rescale(timeline.origin - captureTime, from: Timescale.nanoseconds, to: rate))
            guard skip < chunk.frameCount else { return }
            samples.removeFirst(skip * chunk.channels)
            captureTime += rescale(Int64(skip), from: rate, to: Timescale.nanoseconds)
        }
        let start = timeline.ticks(captureTime: captureTime, timescale: rate)
        for sample in try audio.encode(samples, startTicks: start) {
            try store(segmenter.appendAudio(sample))
        }
        let end = start + Int64(samples.count / chunk.channels) - timeline.startTicks(timescale: rate)
        audioEndTicks = max(audioEndTicks, rescale(end, from: rate, to: Timescale.video))
    }

    /// Drains both encoders, writes the last segment and ENDLIST.
    func finish() throws {
        for sample in try video.flush() { try store(segmenter.appendVideo(sample)) }
        if let audio { for sample in try audio.flush() { try store(segmenter.appendAudio(sample)) } }
        try store(segmenter.finish())
        try writer.finish()
        log("stream.ended", ("id", id), ("segments", writer.segmentCount),
            ("duration", decimalSeconds(writer.totalTicks, timescale: Timescale.video)),
            ("frames", framesEncoded), ("skipped", framesSkipped), ("bytes", writer.totalBytes))
    }

    private func store(_ reports: [SegmentReport]) throws {
        for report in reports {
            try writer.append(report)
            log("segment.stored", ("id", id), ("seq", report.sequence), ("duration", report.durationSeconds),
                ("bytes", report.bytes.count), ("frames", report.videoSamples), ("audio_frames", report.audioSamples))
        }
    }
}
