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
    /// The last slot of the frame-rate grid that was encoded, and its picture.
    private var lastSlot: Int64?
    private var lastInput: VideoFrame?
    /// The next audio sample's tick (sample rate) on the stream timeline.
    private var nextAudioTicks: Int64?
    /// Media time covered so far, in 90 kHz ticks from the stream start.
    private(set) var videoEndTicks: Int64 = 0
    private(set) var audioEndTicks: Int64 = 0
    private(set) var framesEncoded = 0
    private(set) var framesSkipped = 0
    private(set) var framesRepeated = 0
    private(set) var audioSilenceFilled = 0

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

    /// Encodes a frame on the constant-frame-rate grid (HLS_RULES S17: one frame rate per
    /// discontinuity domain), as `ffmpeg -vsync cfr` does: a frame takes the slot nearest
    /// its capture time; a second frame for a taken slot is skipped; slots left empty by a
    /// dropped frame are filled by repeating the picture before (all skip blocks for x264),
    /// so timing stays exact and A/V sync stays within half a frame.
    func encode(_ frame: VideoFrame) throws {
        let fps = Int64(settings.fps)
        let slot = rescale(frame.captureTime - timeline.origin, from: Timescale.nanoseconds, to: fps)
        if let last = lastSlot, slot <= last {
            framesSkipped += 1
            return
        }
        let input = settings.rotation == .none ? frame : frame.rotated(settings.rotation)
        if let last = lastSlot, let previous = lastInput {
            for missing in (last + 1)..<slot {
                try encode(previous, slot: missing)
                framesRepeated += 1
            }
        }
        try encode(input, slot: slot)
        lastInput = input
    }

    private func encode(_ input: VideoFrame, slot: Int64) throws {
        let ticks = timeline.startTicks(timescale: Timescale.video) + rescale(slot, from: Int64(settings.fps), to: Timescale.video)
        let keyframe = planner.needsKeyframe(at: ticks)
        for sample in try video.encode(input, ticks: ticks, keyframe: keyframe) {
            try store(segmenter.appendVideo(sample))
        }
        lastSlot = slot
        framesEncoded += 1
        videoEndTicks = rescale(slot + 1, from: Int64(settings.fps), to: Timescale.video)
    }

    /// Encodes a chunk of sound where its capture time puts it: trimmed to start no
    /// earlier than the stream or the sound already encoded, and after a gap (a dropped
    /// chunk, an xrun) silence first, so the audio track never slides against the video.
    func encode(_ chunk: AudioChunk) throws {
        guard let audio else { return }
        let rate = Int64(chunk.sampleRate)
        var samples = chunk.samples
        var start = timeline.ticks(captureTime: chunk.captureTime, timescale: rate)
        let expected = nextAudioTicks ?? timeline.startTicks(timescale: rate)
        if start < expected {
            let overlap = Int(expected - start)
            guard overlap < chunk.frameCount else { return }
            samples.removeFirst(overlap * chunk.channels)
            start = expected
        } else if start - expected > rate / 100 {
            // More than 10 ms missing: fill with silence (a shorter gap is clock jitter).
            let silence = Int(start - expected)
            for sample in try audio.encode([Int16](repeating: 0, count: silence * chunk.channels), startTicks: expected) {
                try store(segmenter.appendAudio(sample))
            }
            audioSilenceFilled += silence
        }
        for sample in try audio.encode(samples, startTicks: start) {
            try store(segmenter.appendAudio(sample))
        }
        let end = (nextAudioTicks.map { max($0, start) } ?? start) + Int64(samples.count / chunk.channels)
        nextAudioTicks = end
        audioEndTicks = rescale(end - timeline.startTicks(timescale: rate), from: rate, to: Timescale.video)
    }

    /// Drains both encoders, writes the last segment and ENDLIST.
    func finish() throws {
        for sample in try video.flush() { try store(segmenter.appendVideo(sample)) }
        if let audio { for sample in try audio.flush() { try store(segmenter.appendAudio(sample)) } }
        try store(segmenter.finish())
        try writer.finish()
        log("stream.ended", ("id", id), ("segments", writer.segmentCount),
            ("duration", decimalSeconds(writer.totalTicks, timescale: Timescale.video)),
            ("frames", framesEncoded), ("skipped", framesSkipped), ("repeated", framesRepeated),
            ("silence_samples", audioSilenceFilled), ("bytes", writer.totalBytes))
    }

    private func store(_ reports: [SegmentReport]) throws {
        for report in reports {
            try writer.append(report)
            log("segment.stored", ("id", id), ("seq", report.sequence), ("duration", report.durationSeconds),
                ("bytes", report.bytes.count), ("frames", report.videoSamples), ("audio_frames", report.audioSamples))
        }
    }
}
