import Codecs
import Files
import HLS
import Logging
import Media
import Spool
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

    private let origin: StreamOrigin

    /// A recording from `origin`: its encoder, timeline, and any pre-roll already encoded.
    init(start: StreamStart, origin: StreamOrigin, profile: RecordingProfile, log: Log,
         makeRoom: @escaping SpaceRetry.MakeRoom = { false }) throws {
        self.log = log
        self.origin = origin
        priority = profile.priority
        recordings = Recordings(root: profile.output.dataDirectory)
        encoder = origin.encoder
        if !origin.video.isEmpty { encoder.startCounting(from: origin.video.count) }
        let rate = Int64(profile.output.sampleRate)
        fragmenter = Segmenter(grid: origin.grid(Self.fragmentTicks),
                               tracks: .init(audio: encoder.audio == nil ? nil : 2, audioTimescale: rate),
                               timeline: origin.timeline, nominalFrameDuration: Timescale.video / Int64(encoder.fps), cutsOnlyAtSync: false)
        let video = encoder.video
        let tracks = try encoder.initSegment()
        file = try RecordingFile(layout: recordings.layout, id: start.id, initSegment: tracks.bytes,
                                 preallocateBytes: Int64(profile.preallocateMegabytes) << 20, makeRoom: makeRoom)
        log(.recordingStarted, ("id", start.id), ("file", file.partPath), ("codec", video.codecName),
            ("width", video.settings.width), ("height", video.settings.height), ("fps", encoder.fps), ("bitrate", profile.output.video.bitrate),
            ("preroll_frames", origin.video.count))
        for (isVideo, sample) in origin.heldInTimeOrder(audioTimescale: rate) {
            try store(isVideo ? fragmenter.appendVideo(sample) : fragmenter.appendAudio(sample))
        }
    }

    /// A recording that starts at `firstFrame`.
    convenience init(start: StreamStart, firstFrame: VideoFrame, profile: RecordingProfile, video: VideoEncoder,
                     audio: AACEncoder?, log: Log) throws {
        let encoder = Self.encoder(firstFrame: firstFrame, dating: start.dating, profile: profile, video: video, audio: audio)
        try self.init(start: start, origin: StreamOrigin(encoder: encoder), profile: profile, log: log)
        try encode(firstFrame)
    }

    /// The recording's encoders on a timeline that starts at `firstFrame`, an IDR every 2 s.
    static func encoder(firstFrame: VideoFrame, dating: StreamDating, profile: RecordingProfile, video: VideoEncoder,
                        audio: AACEncoder?) -> StreamEncoder {
        let timeline = Timeline(firstVideoCaptureTime: firstFrame.captureTime, dating: dating)
        return StreamEncoder(timeline: timeline, fps: profile.output.video.fps, rotation: profile.output.rotation,
                             keyframes: SegmentGrid(start: timeline.startTicks(timescale: Timescale.video), segmentTicks: keyframeTicks),
                             video: video, audio: audio)
    }

    func encode(_ frame: VideoFrame) throws {
        // The file has no discontinuities: the last picture stays up through the gap
        // (one long sample) while the sound goes on.
        if frame.discontinuity { encoder.resync() }
        if encoder.changeDue(frame) {
            for sample in try encoder.encode(frame) { try store(fragmenter.appendVideo(origin.moved(video: sample))) }
            fragmenter.nominalFrameDuration = Timescale.video / Int64(encoder.fps)
            return
        }
        for sample in try encoder.encode(frame) { try store(fragmenter.appendVideo(origin.moved(video: sample))) }
    }

    func encode(_ chunk: AudioChunk) throws {
        for sample in try encoder.encode(chunk) { try store(fragmenter.appendAudio(origin.moved(audio: sample))) }
    }

    /// The recording changes rate with the live stream (no discontinuity in a file).
    func setRate(_ fps: Int) { encoder.setRate(fps) }

    /// The last fragment, then the progressive MP4.
    func finish() throws {
        let rest = try encoder.flush()
        for sample in rest.video { try store(fragmenter.appendVideo(origin.moved(video: sample))) }
        for sample in rest.audio { try store(fragmenter.appendAudio(origin.moved(audio: sample))) }
        try store(fragmenter.finish())
        let latencies = file.writeLatencies
        guard let result = try file.finish() else { return }
        // Its true start, when the clock was trusted at any time during it (else none).
        let timeline = origin.timeline
        let started = timeline.wallClockMs(ticks: timeline.startTicks(timescale: Timescale.video), timescale: Timescale.video)
        try recordings.describe(result, id: id, priority: priority, startMs: started)
        log(.recordingEnded, ("id", id), ("file", result.path), ("seconds", result.seconds), ("frames", result.videoFrames),
            ("bytes", result.bytes), ("repeated", encoder.framesRepeated), ("skipped", encoder.framesSkipped),
            ("write_ms_p50", percentileMilliseconds(latencies, 0.5)), ("write_ms_p99", percentileMilliseconds(latencies, 0.99)))
    }

    /// A full disk pauses the recording (its fragments are left out) and never the live
    /// stream; each change is said once, on the console too.
    private func store(_ fragments: [SegmentReport]) throws {
        for fragment in fragments {
            let wasPaused = file.paused, wasReserving = !file.reservationOff
            try file.append(fragment.bytes)
            if wasReserving && file.reservationOff {
                log(.recordingReserveOff, level: .warn, ("id", id), ("reason", "no room for record.preallocate_mb"))
            }
            if file.paused != wasPaused {
                log(file.paused ? Event.recordingPaused : Event.recordingResumed, level: file.paused ? .error : .warn, ("id", id),
                    ("reason", "disk full"), ("fragments_dropped", file.fragmentsDropped))
            }
        }
    }
}
