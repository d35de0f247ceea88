import Codecs
import Media
import Publishing

/// Opens an output's encoders for each stream: the first time by `select` (which logs
/// what it chose and why), after that the same kind and device again.
struct EncoderChoice {
    let role: String
    let requested: VideoEncoderKind
    private var kind: VideoEncoderKind?
    private var device: String?
    /// Opened ahead by `prepare`, for the first stream.
    private var ready: (video: H264Encoder, audio: AACEncoder?)?

    init(role: String, requested: VideoEncoderKind) {
        self.role = role
        self.requested = requested
    }

    /// Opens the encoders now so the first stream starts without waiting for them.
    mutating func prepare(_ settings: VideoEncoderSettings, audio: Settings, log: Log) throws {
        ready = (try open(settings, log: log), try openAudioEncoder(audio))
    }

    /// The prepared encoders, else new ones.
    mutating func take(_ settings: VideoEncoderSettings, audio: Settings, log: Log) throws -> (video: H264Encoder, audio: AACEncoder?) {
        if let ready {
            self.ready = nil
            return ready
        }
        return (try open(settings, log: log), try openAudioEncoder(audio))
    }

    mutating func open(_ settings: VideoEncoderSettings, log: Log) throws -> H264Encoder {
        if let kind { return try H264Encoder(kind: kind, settings: settings, device: device) }
        let video = try H264Encoder.select(requested, settings: settings) { kind, note in
            if note != "selected" { log("encoder.skipped", ("output", role), ("encoder", kind.rawValue), ("reason", note)) }
        }
        kind = video.kind
        device = video.device
        log("encoder.selected", ("output", role), ("encoder", video.kind.rawValue), ("codec", video.codecName),
            ("requested", requested.rawValue), ("width", settings.width), ("height", settings.height),
            ("fps", settings.fps), ("bitrate", settings.bitrate))
        return video
    }
}

func openAudioEncoder(_ settings: Settings) throws -> AACEncoder? {
    settings.audioEnabled
        ? try AACEncoder(settings: .init(sampleRate: settings.sampleRate, channels: settings.channels, bitrate: settings.audioBitrate))
        : nil
}

/// The live HLS stream, written into `streams/<id>/` and told to the publisher.
final class LiveOutput: StreamOutput {
    let name = "live"
    private let settings: Settings
    private let log: Log
    private let observer: @Sendable (StreamEvent) -> Void
    private var encoders: EncoderChoice
    private var stream: LiveStream?

    init(settings: Settings, log: Log, observer: @escaping @Sendable (StreamEvent) -> Void) {
        self.settings = settings
        self.log = log
        self.observer = observer
        encoders = EncoderChoice(role: "live", requested: settings.encoder)
    }

    private var encoderSettings: VideoEncoderSettings {
        let size = settings.encodedSize
        return VideoEncoderSettings(width: size.width, height: size.height, fps: settings.fps,
                                    bitrate: settings.videoBitrate, keyframeInterval: settings.keyframeInterval)
    }

    func prepare() throws { try encoders.prepare(encoderSettings, audio: settings, log: log) }

    func begin(_ start: StreamStart, firstFrame: VideoFrame) throws {
        let opened = try encoders.take(encoderSettings, audio: settings, log: log)
        stream = try LiveStream(start: start, firstFrame: firstFrame, settings: settings, video: opened.video,
                                audio: opened.audio, log: log, observer: observer)
    }

    func encode(_ frame: VideoFrame) throws { try stream?.encode(frame) }
    func encode(_ chunk: AudioChunk) throws { try stream?.encode(chunk) }
    func finish() throws {
        defer { stream = nil }
        try stream?.finish()
    }
}

/// The full-quality local recording, in its own profile.
final class RecordingOutput: StreamOutput {
    let name = "recording"
    private let settings: Settings
    private let log: Log
    private var encoders: EncoderChoice
    private var stream: RecordingStream?

    init(settings: Settings, log: Log) {
        self.settings = settings
        self.log = log
        encoders = EncoderChoice(role: "recording", requested: settings.record.encoder)
    }

    private var encoderSettings: VideoEncoderSettings {
        let size = settings.recordSize
        let fps = settings.recordFPS
        return VideoEncoderSettings(width: size.width, height: size.height, fps: fps, bitrate: settings.record.bitrate,
                                    keyframeInterval: Int(RecordingStream.keyframeTicks / Timescale.video) * fps)
    }

    func prepare() throws { try encoders.prepare(encoderSettings, audio: settings, log: log) }

    func begin(_ start: StreamStart, firstFrame: VideoFrame) throws {
        let opened = try encoders.take(encoderSettings, audio: settings, log: log)
        stream = try RecordingStream(start: start, firstFrame: firstFrame, profile: settings.record, fps: settings.recordFPS,
                                     settings: settings, video: opened.video, audio: opened.audio, log: log)
    }

    func encode(_ frame: VideoFrame) throws { try stream?.encode(frame) }
    func encode(_ chunk: AudioChunk) throws { try stream?.encode(chunk) }
    func finish() throws {
        defer { stream = nil }
        try stream?.finish()
    }
}
