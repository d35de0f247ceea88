import Codecs
import HLS
import Media
import MP4
import Threading

/// One output's encoders on one stream's timeline: pictures go on a constant-frame-rate
/// grid and sound where its capture time puts it. Both the live stream and the recording
/// encode through one of these, each with its own encoders and profile. The live stream's
/// quality ladder is more video encoders here: each picture goes to every rung (each
/// scales it to its own size) at the same tick with the same IDR decision, so segment
/// boundaries line up across rungs frame for frame.
final class StreamEncoder {
    let timeline: Timeline
    /// The frame rate of the grid now; `requestRate` changes it at a keyframe boundary.
    private(set) var fps: Int
    /// Where the current rate's grid begins: a tick on the stream timeline (90 kHz) and
    /// the capture time it stands for. The stream start, until the rate changes.
    private var epoch: (ticks: Int64, time: Int64)
    private var pendingRate: Int?
    /// The highest rung encoded now (0: every one): the rungs above it are dropped while
    /// the board is hot. `requestTopRung` changes it at a keyframe boundary, as the rate.
    private(set) var topRung = 0
    private var pendingTopRung: Int?
    let rotation: Rotation
    /// The rungs' encoders, the top (the only one without a ladder) first.
    let videos: [VideoEncoder]
    /// A thread for each rung below the top: the rungs of a picture encode side by side,
    /// so a frame waits for the slowest rung, not for the sum of them.
    private let rungThreads: [SerialWorker]
    var video: VideoEncoder { videos[0] }
    let audio: AACEncoder?
    private var planner: KeyframePlanner
    /// IDRs the real-time viewers ask for, between the grid's; and when the last was made.
    let pictureRequests = PictureRequests()
    private var lastRequestedKeyframe: Int64?
    /// IDRs made for requests, so far.
    private(set) var keyframesRequested = 0
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

    /// `keyframes`: where IDRs go (the first frame at or past each boundary).
    init(timeline: Timeline, fps: Int, rotation: Rotation, keyframes: SegmentGrid, video: VideoEncoder, lowerRungs: [VideoEncoder] = [],
         audio: AACEncoder?) {
        self.timeline = timeline
        self.fps = fps
        epoch = (timeline.startTicks(timescale: Timescale.video), timeline.origin)
        self.rotation = rotation
        videos = [video] + lowerRungs
        rungThreads = lowerRungs.indices.map { SerialWorker(name: "onair-rung\($0 + 2)") }
        self.audio = audio
        planner = KeyframePlanner(grid: keyframes)
    }

    /// The grid slot a capture time falls in (nearest frame time, as `ffmpeg -vsync cfr`).
    static func slot(captureTime: Int64, origin: Int64, fps: Int) -> Int64 {
        rescale(captureTime - origin, from: Timescale.nanoseconds, to: Int64(fps))
    }

    /// Encodes a frame on the constant-frame-rate grid (HLS_RULES S17: one frame rate per
    /// discontinuity domain): a frame takes the slot nearest its capture time; a second
    /// frame for a taken slot is skipped; slots left empty by a dropped frame are filled by
    /// repeating the picture before (all skip blocks for x264), so timing stays exact and
    /// A/V sync stays within half a frame. Returns the video samples that came out.
    func encode(_ frame: VideoFrame) throws -> [EncodedSample] {
        if changeDue(frame), let boundary = nextBoundary {
            if let rate = pendingRate {
                // The new rate's grid starts exactly at the boundary, where an IDR goes.
                epoch = (boundary, timeline.origin + rescale(boundary - timeline.startTicks(timescale: Timescale.video),
                                                             from: Timescale.video, to: Timescale.nanoseconds))
                fps = rate
            }
            topRung = pendingTopRung ?? topRung
            (pendingRate, pendingTopRung) = (nil, nil)
            // Either change starts on the boundary's IDR (a rung taken up again too); slots a
            // dropped frame left empty before the boundary are not filled: they would follow
            // the discontinuity the change brings, at the new rate or with the new rungs.
            lastSlot = nil
            lastInput = nil
        }
        var slot = Self.slot(captureTime: frame.captureTime, origin: epoch.time, fps: fps)
        // The first frame on a new rate's grid can be captured a little before the boundary
        // it was due at (the old rate rounds to its nearest slot): it takes the boundary's
        // slot, where the IDR goes, never one before it.
        if lastSlot == nil { slot = max(slot, 0) }
        if let last = lastSlot, slot <= last {
            framesSkipped += 1
            return []
        }
        let input = rotation == .none ? frame : frame.rotated(rotation)
        var samples: [EncodedSample] = []
        if let last = lastSlot, let previous = lastInput {
            for missing in (last + 1)..<slot {
                samples += try encode(previous, slot: missing)
                framesRepeated += 1
            }
        }
        samples += try encode(input, slot: slot)
        lastInput = input
        return samples
    }

    private func encode(_ input: VideoFrame, slot: Int64) throws -> [EncodedSample] {
        let ticks = epoch.ticks + rescale(slot, from: Int64(fps), to: Timescale.video)
        let onGrid = planner.needsKeyframe(at: ticks)
        let requested = pictureRequests.answers(at: ticks, frameTicks: Timescale.video / Int64(fps), gridKeyframe: onGrid, grid: planner.grid,
                                                lastForced: lastRequestedKeyframe)
        if requested {
            lastRequestedKeyframe = ticks
            keyframesRequested += 1
        }
        let keyframe = onGrid || requested
        let jobs = (topRung + 1..<videos.count).map { rung in
            let job = RungJob(videos[rung])
            rungThreads[rung - 1].async { job.run(input, ticks: ticks, keyframe: keyframe) }
            return (rung, job)
        }
        // The highest rung encoded on this thread meanwhile; every job waited for before
        // any failure is thrown (no encoder is left in use); each rung's samples in order.
        let first = Result { try videos[topRung].encode(input, ticks: ticks, keyframe: keyframe) }
        let rest = jobs.map { rung, job in (rung, Result { try job.wait() }) }
        var samples = try first.get().map { $0.on(rung: topRung) }
        for (rung, result) in rest { samples += try result.get().map { $0.on(rung: rung) } }
        lastSlot = slot
        framesEncoded += 1
        videoEndTicks = epoch.ticks - timeline.startTicks(timescale: Timescale.video) + rescale(slot + 1, from: Int64(fps), to: Timescale.video)
        return samples
    }

    /// Asks for another frame rate (the thermal ladder). It takes effect at the next
    /// keyframe boundary, so a live segment never mixes two rates; before the first frame,
    /// at once.
    func setRate(_ rate: Int) { Self.request(rate, &fps, pending: &pendingRate, now: lastSlot == nil && framesEncoded == 0) }

    /// Asks for the `dropped` top rungs to be left out (the heat), or taken up again, from
    /// the next keyframe boundary on, so every rung's segment k stays whole; the lowest
    /// rung is always encoded (the highest encoded, `topRung`, is rung `dropped`).
    func setDroppedRungs(_ dropped: Int) {
        Self.request(min(max(0, dropped), videos.count - 1), &topRung, pending: &pendingTopRung, now: lastSlot == nil && framesEncoded == 0)
    }

    /// A setting changed at once (`now`: nothing encoded yet), or from the next boundary;
    /// asking for the value in force again takes back a pending change.
    private static func request(_ value: Int, _ current: inout Int, pending: inout Int?, now: Bool) {
        guard value != current || pending != nil else { return }
        if now {
            current = value
            pending = nil
        } else {
            pending = value == current ? nil : value
        }
    }

    /// The first keyframe boundary after what has been encoded (absolute 90 kHz ticks).
    private var nextBoundary: Int64? {
        guard framesEncoded > 0 else { return nil }
        let grid = planner.grid
        let last = timeline.startTicks(timescale: Timescale.video) + videoEndTicks - 1
        return grid.start + (grid.slot(last) + 1) * grid.segmentTicks
    }

    /// Whether `frame` is the first at a new rate or with other rungs: a change is pending
    /// and the frame falls at or past the next boundary.
    func changeDue(_ frame: VideoFrame) -> Bool {
        guard pendingRate != nil || pendingTopRung != nil, let boundary = nextBoundary else { return false }
        let slot = Self.slot(captureTime: frame.captureTime, origin: epoch.time, fps: fps)
        return epoch.ticks + rescale(slot, from: Int64(fps), to: Timescale.video) >= boundary
    }

    /// Encodes a chunk of sound where its capture time puts it: trimmed to start no
    /// earlier than the stream or the sound already encoded, and after a gap (a dropped
    /// chunk, an xrun) silence first, so the audio track never slides against the video.
    /// The encoder's output is one contiguous run of samples, so the position kept here is
    /// where the next sample really goes: a gap under 10 ms is jitter and the chunk follows
    /// on at once, but those gaps add up (a sound card whose clock runs slow against
    /// CLOCK_MONOTONIC, as the emulated board's does), and once they reach 10 ms the
    /// silence is put in: the sound stays within 10 ms of its capture time.
    func encode(_ chunk: AudioChunk) throws -> [EncodedSample] {
        guard let audio else { return [] }
        let rate = Int64(chunk.sampleRate)
        var samples = chunk.samples
        let start = timeline.ticks(captureTime: chunk.captureTime, timescale: rate)
        var position = nextAudioTicks ?? timeline.startTicks(timescale: rate)
        var encoded: [EncodedSample] = []
        if start < position {
            let overlap = Int(position - start)
            guard overlap < chunk.frameCount else { return [] }
            samples.removeFirst(overlap * chunk.channels)
        } else if start - position > rate / 100 {
            let silence = Int(start - position)
            encoded += try audio.encode([Int16](repeating: 0, count: silence * chunk.channels), startTicks: position)
            audioSilenceFilled += silence
            position = start
        }
        encoded += try audio.encode(samples, startTicks: position)
        position += Int64(samples.count / chunk.channels)
        nextAudioTicks = position
        audioEndTicks = rescale(position - timeline.startTicks(timescale: rate), from: rate, to: Timescale.video)
        return encoded
    }

    /// Silence from where the sound stopped up to `videoTicks` (90 kHz, from the stream
    /// start): the end of a stream, or a microphone that stopped delivering. A chunk that
    /// comes later for the same time is trimmed, as any overlap is.
    func fillSilence(upTo videoTicks: Int64) throws -> [EncodedSample] {
        guard let audio else { return [] }
        let rate = Int64(audio.settings.sampleRate)
        let next = nextAudioTicks ?? timeline.startTicks(timescale: rate)
        let end = timeline.startTicks(timescale: rate) + rescale(videoTicks, from: Timescale.video, to: rate)
        guard end > next else { return [] }
        let sound = try audio.encode([Int16](repeating: 0, count: Int(end - next) * audio.settings.channels), startTicks: next)
        audioSilenceFilled += Int(end - next)
        nextAudioTicks = end
        audioEndTicks = videoTicks
        return sound
    }

    /// The source was interrupted: the next frame is an IDR, and the time since the last
    /// one is a gap, not missing frames to repeat.
    func resync() {
        lastInput = nil
        planner.forceKeyframe()
    }

    /// A stream begins from a pre-roll: its counts start with the `frames` it keeps, not
    /// with everything encoded while armed.
    func startCounting(from frames: Int) {
        framesEncoded = frames
        framesSkipped = 0
        framesRepeated = 0
        audioSilenceFilled = 0
    }

    /// Everything still inside the encoders. Sound that stopped short of the last picture
    /// (a stop lands between two 20 ms chunks) is made up with silence first, so both
    /// tracks end together (HLS_RULES S14).
    func flush() throws -> (video: [EncodedSample], audio: [EncodedSample]) {
        let sound = nextAudioTicks == nil ? [] : try fillSilence(upTo: videoEndTicks)
        var pictures: [EncodedSample] = []
        for (rung, encoder) in videos.enumerated() where rung >= topRung { pictures += try encoder.flush().map { $0.on(rung: rung) } }
        return (pictures, sound + (try audio?.flush() ?? []))
    }
}

/// One rung's encode of one picture on its own thread, and what came of it. The encoder is
/// used by one thread at a time: the caller waits for the job before the next picture.
private final class RungJob: @unchecked Sendable {  // `result` written before `done` fires, read after
    private let encoder: VideoEncoder
    private var result: Result<[EncodedSample], Error> = .success([])
    private let done = Completion()

    init(_ encoder: VideoEncoder) { self.encoder = encoder }

    func run(_ input: VideoFrame, ticks: Int64, keyframe: Bool) {
        result = Result { try encoder.encode(input, ticks: ticks, keyframe: keyframe) }
        done.signal()
    }

    func wait() throws -> [EncodedSample] {
        done.wait()
        return try result.get()
    }
}

extension EncodedSample {
    func on(rung: Int) -> EncodedSample {
        var copy = self
        copy.rung = rung
        return copy
    }
}

extension StreamEncoder {
    /// The stream's init segment and codec strings, from this encoder's parameter sets
    /// (MP4 builds it; the live stream and the recording both start with one): the top
    /// rung's pictures and the sound, or (a ladder's renditions) one rung's pictures alone.
    func initSegment(rung: Int = 0, withAudio: Bool = true) throws -> (bytes: [UInt8], codecs: [String]) {
        let video = videos[rung]
        return try InitSegment.make(sps: video.sps, pps: video.pps, vps: video.vps,
                                    hevcSize: (video.settings.width, video.settings.height), audio: withAudio ? audioTrack() : nil)
    }

    /// A ladder's audio rendition: the sound alone, as track 1.
    func audioInitSegment() throws -> (bytes: [UInt8], codecs: [String])? {
        guard let track = audioTrack(trackID: 1) else { return nil }
        return (InitSegment.make(video: nil, audio: track), [try AudioSpecificConfig(bytes: track.config).codecString])
    }

    private func audioTrack(trackID: UInt32 = 2) -> AudioTrack? {
        audio.map {
            AudioTrack(trackID: trackID, sampleRate: $0.settings.sampleRate, channels: $0.settings.channels, config: $0.audioSpecificConfig,
                       averageBitrate: UInt32($0.settings.bitrate))
        }
    }
}
