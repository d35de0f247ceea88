import Codecs
import HLS
import Media
import Recording

/// One local recording, beside the live stream of the same id: its own encoders and
/// profile → one-second fragments → `recordings/<id>.mp4.part` → `recordings/<id>.mp4`.
final class RecordingStream {
    let file: RecordingFile
    private let encoder: StreamEncoder
    private var fragmenter: Segmenter
    private let recordings: Recordings
    private let priority: Recordings.Priority
    private let log: Log

    var id: String { file.id }
    var framesEncoded: Int { encoder.framesEncoded }

    /// A fragment every second: what a power cut can cost at most.
    static let fragmentTicks = Timescale.video
    /// An IDR every two seconds, where a player can start or seek.
    static let keyframeTicks = 2 * Timescale.video

    init(start: StreamStart, firstFrame: VideoFrame, profile: RecordProfile, fps: Int, settings: Settings, video: H264Encoder,
         audio: AACEncoder?, log: Log) throws {
        self.log = log
        priority = profile.priority
        recordings = Recordings(root: settings.dataDirectory)
        let timeline = Timeline(firstVideoCaptureTime: firstFrame.captureTime, wallClockMs: start.wallClockMs)
        let begin = timeline.startTicks(timescale: Timescale.video)
        encoder = StreamEncoder(timeline: timeline, fps: fps, rotation: settings.rotation,
                                keyframes: SegmentGrid(start: begin, segmentTicks: Self.keyframeTicks), video: video, audio: audio)
        fragmenter = Segmenter(grid: SegmentGrid(start: begin, segmentTicks: Self.fragmentTicks),
                               tracks: .init(audio: audio == nil ? nil : 2, audioTimescale: Int64(settings.sampleRate)),
                               timeline: timeline, nominalFrameDuration: Timescale.video / Int64(fps), cutsOnlyAtSync: false)
        let tracks = try LiveStream.tracks(video: video, audio: audio, sampleRate: settings.sampleRate, channels: settings.channels,
                                           audioBitrate: settings.audioBitrate)
        file = try RecordingFile(directory: recordings.directory, id: start.id, initSegment: tracks.initSegment,
                                 preallocateBytes: Int64(profile.preallocateMegabytes) << 20)
        log("recording.started", ("id", start.id), ("file", file.partPath), ("codec", video.codecName),
            ("width", video.settings.width), ("height", video.settings.height), ("fps", fps), ("bitrate", profile.bitrate))
        try encode(firstFrame)
    }

    func encode(_ frame: VideoFrame) throws {
        // The file has no discontinuities: the last picture stays up through the gap
        // (one long sample) while the sound goes on.
        if frame.discontinuity { encoder.resync() }
        for sample in try encoder.encode(frame) { try store(fragmenter.appendVideo(sample)) }
    }

    func encode(_ chunk: AudioChunk) throws {
        for sample in try encoder.encode(chunk) { try store(fragmenter.appendAudio(sample)) }
    }

    /// The last fragment, then the progressive MP4.
    func finish() throws {
        let rest = try encoder.flush()
        for sample in rest.video { try store(fragmenter.appendVideo(sample)) }
        for sample in rest.audio { try store(fragmenter.appendAudio(sample)) }
        try store(fragmenter.finish())
        let latencies = file.writeLatencies
        guard let result = try file.finish() else { return }
        try recordings.describe(result, id: id, priority: priority)
        log("recording.ended", ("id", id), ("file", result.path), ("seconds", result.seconds), ("frames", result.videoFrames),
            ("bytes", result.bytes), ("repeated", encoder.framesRepeated), ("skipped", encoder.framesSkipped),
            ("write_ms_p50", percentileMilliseconds(latencies, 0.5)), ("write_ms_p99", percentileMilliseconds(latencies, 0.99)))
    }

    private func store(_ fragments: [SegmentReport]) throws {
        for fragment in fragments { try file.append(fragment.bytes) }
    }
}
