import Codecs
import HLS
import Media
import Recording

/// What one output encodes and where it writes: built once from the settings (Appliance
/// does that), so the engine never sees the whole configuration. Sizes are after rotation.
public struct OutputProfile: Sendable, Equatable {
    /// The encoder asked for (`auto`: the best that opens).
    public var encoder: VideoEncoderKind
    /// The picture and rate it starts at; `fps` is the configured rate (the thermal ladder
    /// lowers it later, stream by stream).
    public var video: VideoEncoderSettings
    public var rotation: Rotation
    /// nil: a stream without sound.
    public var audio: AudioEncoderSettings?
    /// Where `streams/` and `recordings/` are.
    public var dataDirectory: String

    public init(encoder: VideoEncoderKind, video: VideoEncoderSettings, rotation: Rotation = .none,
                audio: AudioEncoderSettings?, dataDirectory: String) {
        self.encoder = encoder
        self.video = video
        self.rotation = rotation
        self.audio = audio
        self.dataDirectory = dataDirectory
    }

    /// The sample rate both tracks' timelines use (the microphone's, or the default).
    var sampleRate: Int { audio?.sampleRate ?? AudioEncoderSettings().sampleRate }
}

/// One rung of the live quality ladder (`video.ladder`): a picture and the bit rate it is
/// encoded at, from the same captured frames as every other rung.
public struct Rung: Sendable, Equatable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var bitrate: Int

    public init(width: Int, height: Int, bitrate: Int) {
        self.width = width
        self.height = height
        self.bitrate = bitrate
    }

    /// `854x480@900k`, as `video.ladder` takes it.
    public var description: String {
        let rate = bitrate % 1_000_000 == 0 ? "\(bitrate / 1_000_000)M"
            : bitrate % 100_000 == 0 && bitrate > 1_000_000 ? "\(bitrate / 1_000_000).\(bitrate % 1_000_000 / 100_000)M"
            : bitrate % 1000 == 0 ? "\(bitrate / 1000)k" : "\(bitrate)"
        return "\(width)x\(height)@\(rate)"
    }
}

/// The live HLS stream: segments of `segmentMilliseconds`, a whole number of frames, and
/// for the built-in server's low-latency playlist parts of about `partMilliseconds` (0:
/// none), also whole frames.
public struct LiveProfile: Sendable, Equatable {
    public var output: OutputProfile
    public var segmentMilliseconds: Int
    public var partMilliseconds: Int
    /// The other frame rates a stream may move to while it runs (the thermal ladder's),
    /// which its PART-TARGET must also suit.
    public var rates: [Int]
    /// The quality ladder's rungs below the top one (`output.video` is the top), pictures
    /// after rotation; empty: one variant, sound and pictures in the same segments.
    public var lowerRungs: [Rung]
    /// The configured ladder's top rungs the cost check left out (`withoutTopRung`): the
    /// live feed numbers rungs as configured, so a destination that asked for one still
    /// gets it.
    public var rungsLeftOut = 0

    public init(output: OutputProfile, segmentMilliseconds: Int, partMilliseconds: Int = 0, rates: [Int] = [], lowerRungs: [Rung] = []) {
        self.output = output
        self.segmentMilliseconds = segmentMilliseconds
        self.partMilliseconds = partMilliseconds
        self.rates = rates
        self.lowerRungs = lowerRungs
        self.output.video.keyframeInterval = keyframeInterval
    }

    /// Every rung's encoder settings, the top first: the top's rate, IDR interval and
    /// preset, each rung's own picture and bit rate (so IDRs fall on the same frames).
    public var rungSettings: [VideoEncoderSettings] {
        [output.video] + lowerRungs.map { rung in
            var video = output.video
            video.width = rung.width
            video.height = rung.height
            video.bitrate = rung.bitrate
            return video
        }
    }

    /// Each rung as `WxH@RATE` (what the console and the logs call it), the top first.
    public var rungNames: [String] { rungSettings.map { Rung(width: $0.width, height: $0.height, bitrate: $0.bitrate).description } }

    /// PART-TARGET and what follows from it, from the rate the stream starts at and the
    /// rates it may move to; nil: no parts.
    public var partTiming: PartTiming? {
        partMilliseconds > 0
            ? PartTiming(partMilliseconds: partMilliseconds, fps: fps, rates: rates, segmentTicks: segmentTicks,
                         targetDuration: targetDuration) : nil
    }

    public var fps: Int { output.video.fps }
    /// Frames per segment; the segment is a whole number of frames.
    public var keyframeInterval: Int { max(1, (segmentMilliseconds * fps + 500) / 1000) }
    /// Segment length in 90 kHz ticks, exactly a whole number of frames.
    public var segmentTicks: Int64 { Int64(keyframeInterval) * Timescale.video / Int64(fps) }
    /// EXT-X-TARGETDURATION: the segment length rounded up to whole seconds.
    public var targetDuration: Int { Int((segmentTicks + Timescale.video - 1) / Timescale.video) }
    /// What the encoders are asked for, the multivariant playlist's first guess.
    public var configuredBitrate: Int { output.video.bitrate + (output.audio?.bitrate ?? 0) }

    /// The ladder without its top rung: the next one is the live picture (the cost
    /// check lowering it).
    public func withoutTopRung() -> LiveProfile {
        guard let next = lowerRungs.first else { return self }
        var output = output
        output.video.width = next.width
        output.video.height = next.height
        output.video.bitrate = next.bitrate
        var lowered = LiveProfile(output: output, segmentMilliseconds: segmentMilliseconds, partMilliseconds: partMilliseconds, rates: rates,
                                  lowerRungs: Array(lowerRungs.dropFirst()))
        lowered.rungsLeftOut = rungsLeftOut + 1
        return lowered
    }

    /// The same stream at another frame rate (the cost check lowering it).
    public func at(fps: Int) -> LiveProfile {
        var output = output
        output.video.fps = fps
        var lowered = LiveProfile(output: output, segmentMilliseconds: segmentMilliseconds, partMilliseconds: partMilliseconds, rates: rates,
                                  lowerRungs: lowerRungs)
        lowered.rungsLeftOut = rungsLeftOut
        return lowered
    }
}

/// The full-quality local recording: its own encoder profile, an IDR every 2 s.
public struct RecordingProfile: Sendable, Equatable {
    public var output: OutputProfile
    /// Space reserved ahead of the writer, MiB (0: none).
    public var preallocateMegabytes: Int
    public var priority: Recordings.Priority

    public init(output: OutputProfile, preallocateMegabytes: Int, priority: Recordings.Priority) {
        self.output = output
        self.preallocateMegabytes = preallocateMegabytes
        self.priority = priority
        self.output.video.keyframeInterval = Int(RecordingStream.keyframeTicks / Timescale.video) * output.video.fps
    }
}

/// What the session needs: its outputs, and how it decides which frames make a stream.
public struct SessionProfile: Sendable, Equatable {
    public var live: LiveProfile
    /// nil: no local recording.
    public var recording: RecordingProfile?
    /// The capture's frame rate: the grid a stream's length is counted on.
    public var fps: Int
    /// Seconds of pre-roll the outputs keep while armed (0: none).
    public var prerollSeconds: Double
    /// Stop after this much media, in milliseconds.
    public var durationMilliseconds: Int?
    /// `--pace fast`: a file source waits for the encoders instead of dropping frames.
    public var waitsForEncoders: Bool
    public var performance: PerformanceSettings
    /// Where x264's measured capacity is kept between runs.
    public var dataDirectory: String
    /// `device.name`, which ends every stream id.
    public var device: String

    public init(live: LiveProfile, recording: RecordingProfile?, fps: Int, prerollSeconds: Double = 0,
                durationMilliseconds: Int? = nil, waitsForEncoders: Bool = false,
                performance: PerformanceSettings = PerformanceSettings(), dataDirectory: String, device: String = "onair") {
        self.live = live
        self.device = device
        self.recording = recording
        self.fps = fps
        self.prerollSeconds = prerollSeconds
        self.durationMilliseconds = durationMilliseconds
        self.waitsForEncoders = waitsForEncoders
        self.performance = performance
        self.dataDirectory = dataDirectory
    }

    var audioEnabled: Bool { live.output.audio != nil }
}
