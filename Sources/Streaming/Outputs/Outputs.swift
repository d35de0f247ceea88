import HLS
import Codecs
import Devices
import Files
import Live
import Logging
import Media
import Spool

/// The encoders of one stream: a video encoder per rung (the top first) and the sound's.
struct OpenedEncoders {
    var videos: [VideoEncoder]
    var audio: AACEncoder?
}

/// Opens an output's encoders for each stream: the first time by `select` (which logs
/// what it chose and why), after that the same kind and device again; every rung of the
/// ladder on the kind the top one chose.
struct EncoderChoice {
    let role: String
    let requested: VideoEncoderKind
    private var kind: VideoEncoderKind?
    private var device: String?
    /// HEVC asked for but no hardware HEVC encoder opened: H.264 from then on.
    private var codecFallback: VideoCodec?
    /// Opened ahead by `prepare`, for the first stream.
    private var ready: OpenedEncoders?

    /// The prepared encoders' work, once `prepare` has run: the top rung under the
    /// output's name, each lower rung under it and its picture.
    var encodings: [EncodingCost.Output] {
        (ready?.videos ?? []).enumerated().map { rung, video in
            EncodingCost.Output(name: rung == 0 ? role : "\(role) rung \(rung + 1)", kind: video.kind,
                                width: video.settings.width, height: video.settings.height, fps: video.settings.fps, rung: rung)
        }
    }

    init(role: String, requested: VideoEncoderKind) {
        self.role = role
        self.requested = requested
    }

    /// Opens the encoders now so the first stream starts without waiting for them.
    mutating func prepare(_ rungs: [VideoEncoderSettings], audio: AudioEncoderSettings?, log: Log) throws {
        ready = try openAll(rungs, audio: audio, log: log)
    }

    /// The prepared encoders, else new ones.
    mutating func take(_ rungs: [VideoEncoderSettings], audio: AudioEncoderSettings?, log: Log) throws -> OpenedEncoders {
        if let ready {
            self.ready = nil
            return ready
        }
        return try openAll(rungs, audio: audio, log: log)
    }

    private mutating func openAll(_ rungs: [VideoEncoderSettings], audio: AudioEncoderSettings?, log: Log) throws -> OpenedEncoders {
        var videos: [VideoEncoder] = []
        for settings in rungs { videos.append(try open(settings, log: log)) }
        return OpenedEncoders(videos: videos, audio: try openAudioEncoder(audio))
    }

    mutating func open(_ requestedSettings: VideoEncoderSettings, log: Log) throws -> VideoEncoder {
        var settings = requestedSettings
        if let codecFallback { settings.codec = codecFallback }
        if let kind { return try VideoEncoder(kind: kind, settings: settings, device: device) }
        let notes: (VideoEncoderKind, String) -> Void = { [role] kind, note in
            if note != "selected" { log(.encoderSkipped, ("output", role), ("encoder", kind.rawValue), ("reason", note)) }
        }
        let video: VideoEncoder
        do {
            video = try VideoEncoder.select(requested, settings: settings, notes: notes)
        } catch where settings.codec == .hevc && requested == .auto {
            // record.codec = hevc means "HEVC when a hardware HEVC encoder opens".
            log(.recordCodec, ("requested", "hevc"), ("using", "h264"), ("reason", "\(error)"))
            settings.codec = .h264
            codecFallback = .h264
            video = try VideoEncoder.select(.auto, settings: settings, notes: notes)
        }
        kind = video.kind
        device = video.device
        log(.encoderSelected, ("output", role), ("encoder", video.kind.rawValue), ("codec", video.codecName),
            ("requested", requested.rawValue), ("width", settings.width), ("height", settings.height),
            ("fps", settings.fps), ("bitrate", settings.bitrate))
        return video
    }
}

func openAudioEncoder(_ settings: AudioEncoderSettings?) throws -> AACEncoder? {
    try settings.map { try AACEncoder(settings: $0) }
}

/// One use of the capture with encoders of its own: opens them ahead (`prepare`), runs
/// them while armed when there is a pre-roll, and starts each stream from the pre-roll or
/// from the frame of the press. `live` and `recording` differ only in their profile, their
/// IDR grid and what they write.
final class EncodingOutput: StreamOutput {
    let name: String
    private let output: OutputProfile
    /// Each rung's video settings, the top (`output.video`) first.
    private let rungs: [VideoEncoderSettings]
    private let prerollSeconds: Double
    private let log: Log
    private var encoders: EncoderChoice
    /// The output's encoders on a timeline that starts at a frame (its wall clock given).
    private let makeEncoder: (VideoFrame, StreamDating, OpenedEncoders) -> StreamEncoder
    private let makeStream: (StreamStart, StreamOrigin) throws -> EncodingStream
    private var stream: EncodingStream?
    private var preroll: Preroll?
    /// The thermal ladder's rate and dropped rungs, for this stream and the ones after it.
    private var rate: Int?
    private var droppedRungs = 0

    private init(name: String, output: OutputProfile, rungs: [VideoEncoderSettings]? = nil, prerollSeconds: Double, log: Log,
                 makeEncoder: @escaping (VideoFrame, StreamDating, OpenedEncoders) -> StreamEncoder,
                 makeStream: @escaping (StreamStart, StreamOrigin) throws -> EncodingStream) {
        self.name = name
        self.output = output
        self.rungs = rungs ?? [output.video]
        self.prerollSeconds = prerollSeconds
        self.log = log
        self.makeEncoder = makeEncoder
        self.makeStream = makeStream
        encoders = EncoderChoice(role: name, requested: output.encoder)
    }

    /// The live HLS stream, written into `streams/<id>/` and told to the publisher.
    static func live(_ profile: LiveProfile, prerollSeconds: Double, log: Log, makeRoom: @escaping SpaceRetry.MakeRoom,
                     edge: LiveEdge?, feed: LiveFeed? = nil, observer: @escaping @Sendable (StreamEvent) -> Void) -> EncodingOutput {
        EncodingOutput(
            name: "live", output: profile.output, rungs: profile.rungSettings, prerollSeconds: prerollSeconds, log: log,
            makeEncoder: { frame, dating, opened in
                LiveStream.encoder(firstFrame: frame, dating: dating, profile: profile, videos: opened.videos, audio: opened.audio)
            },
            makeStream: { start, origin in
                try LiveStream(start: start, origin: origin, profile: profile, log: log, makeRoom: makeRoom, edge: edge, feed: feed,
                               observer: observer)
            })
    }

    /// The full-quality local recording, in its own profile.
    static func recording(_ profile: RecordingProfile, prerollSeconds: Double, log: Log,
                          makeRoom: @escaping SpaceRetry.MakeRoom) -> EncodingOutput {
        EncodingOutput(
            name: "recording", output: profile.output, prerollSeconds: prerollSeconds, log: log,
            makeEncoder: { frame, dating, opened in
                RecordingStream.encoder(firstFrame: frame, dating: dating, profile: profile, video: opened.videos[0], audio: opened.audio)
            },
            makeStream: { start, origin in
                try RecordingStream(start: start, origin: origin, profile: profile, log: log, makeRoom: makeRoom).stream
            })
    }

    func prepare() throws { try encoders.prepare(rungs, audio: output.audio, log: log) }
    var encodings: [EncodingCost.Output] { encoders.encodings }

    func prime(_ frame: VideoFrame) throws {
        guard prerollSeconds > 0 else { return }
        if preroll == nil {
            let opened = try encoders.take(rungs, audio: output.audio, log: log)
            // The stream's calendar is not known yet: `origin(dating:)` gives it at the press.
            preroll = Preroll(encoder: makeEncoder(frame, StreamDating(offsetMs: 0), opened),
                              seconds: prerollSeconds)
        }
        try preroll?.encode(frame)
    }

    func prime(_ chunk: AudioChunk) throws { try preroll?.encode(chunk) }

    func begin(_ start: StreamStart, firstFrame: VideoFrame) throws {
        defer { preroll = nil }
        // A stream given up (its encoders or its writes failed) goes before the next
        // begins: its readers must not take the new one's samples.
        stream = nil
        let origin: StreamOrigin
        if let held = preroll?.origin(dating: start.dating) {
            log(.prerollUsed, ("output", name), ("press_frame", firstFrame.index), ("frames_before", held.video.count))
            origin = held
        } else {
            let opened = try encoders.take(rungs, audio: output.audio, log: log)
            origin = StreamOrigin(encoder: makeEncoder(firstFrame, start.dating, opened))
        }
        if let rate { origin.encoder.setRate(rate) }
        origin.encoder.setDroppedRungs(droppedRungs)
        stream = try makeStream(start, origin)
        try stream?.encode(firstFrame)
    }

    func encode(_ frame: VideoFrame) throws { try stream?.encode(frame) }
    func encode(_ chunk: AudioChunk) throws { try stream?.encode(chunk) }
    func setRate(_ fps: Int) {
        rate = fps
        stream?.setRate(fps)
        preroll?.encoder.setRate(fps)
    }
    func setDroppedRungs(_ dropped: Int) {
        droppedRungs = dropped
        stream?.setDroppedRungs(dropped)
        preroll?.encoder.setDroppedRungs(dropped)
    }
    func finish() throws {
        defer { stream = nil }
        try stream?.finish()
    }
}
