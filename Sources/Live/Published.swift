import Media

/// An encoded picture as the live output publishes it: the live stream's access unit as its
/// encoder made it — no copy, no second encoder — with the capture time RTP's timestamps
/// and abs-capture-time come from.
public struct RealTimePicture: Sendable {
    /// Length-prefixed (4-byte) NAL units.
    public var accessUnit: [UInt8]
    /// When the picture's slot on the stream's grid was captured: CLOCK_MONOTONIC ns.
    public var captureTime: Int64
    /// An IDR: where a viewer may begin.
    public var isSync: Bool
    /// The stream's SPS and PPS, for a sender to put before each IDR (RFC 6184 §8.4: a
    /// receiver that joined late has no other way to learn them).
    public var sps: [UInt8]
    public var pps: [UInt8]
    /// Its rung of the quality ladder as configured (0: the top, `output.video`; a stream
    /// without a ladder has only that one).
    public var rung: Int
    /// The highest rung encoded when it was made: the rungs above it are left out (by the
    /// thermal ladder, or by the cost check at the start), and a reader that asked for one
    /// of them gets this one's pictures instead.
    public var topRung: Int

    public init(accessUnit: [UInt8], captureTime: Int64, isSync: Bool, sps: [UInt8], pps: [UInt8], rung: Int = 0, topRung: Int = 0) {
        self.accessUnit = accessUnit
        self.captureTime = captureTime
        self.isSync = isSync
        self.sps = sps
        self.pps = pps
        self.rung = rung
        self.topRung = topRung
    }

    /// Whether a reader that asked for `rung` takes this picture: its own rung's, or the
    /// highest encoded one's while its own is left out.
    public func isFor(rung asked: Int) -> Bool { rung == max(asked, topRung) }
}

/// A live stream as a reader learns of it when it begins.
public struct RealTimeStream: Sendable, Equatable {
    public var id: String
    /// The live AAC's AudioSpecificConfig (ISO/IEC 14496-3 §1.6.2.1), rate and channels;
    /// nil for a stream without sound.
    public var audio: Audio?
    /// Asks the live encoder for an IDR soon (a viewer joined, or lost a picture): any
    /// thread may call it, and it returns at once. The encoder makes one at its next frame
    /// unless one is due within a few frames or one was made so in the last second.
    public var askForPicture: @Sendable () -> Void = {}

    public static func == (a: RealTimeStream, b: RealTimeStream) -> Bool { a.id == b.id && a.audio == b.audio }

    public struct Audio: Sendable, Equatable {
        public var config: [UInt8]
        public var sampleRate: Int
        public var channels: Int
        public init(config: [UInt8], sampleRate: Int, channels: Int) {
            self.config = config
            self.sampleRate = sampleRate
            self.channels = channels
        }
    }

    public init(id: String, audio: Audio? = nil, askForPicture: @escaping @Sendable () -> Void = {}) {
        self.id = id
        self.audio = audio
        self.askForPicture = askForPicture
    }
}

/// One AAC access unit of the live stream (raw, no ADTS header) and when its first
/// sample was captured: the same sound HLS carries.
public struct RealTimeSound: Sendable {
    public var accessUnit: [UInt8]
    /// CLOCK_MONOTONIC ns.
    public var captureTime: Int64

    public init(accessUnit: [UInt8], captureTime: Int64) {
        self.accessUnit = accessUnit
        self.captureTime = captureTime
    }
}

/// What a reader of the live feed takes, in the order it was published. The arrays are
/// shared between readers (copy-on-write): no reader has a copy of the stream.
public enum LiveItem: Sendable {
    case picture(LivePicture)
    case sound(LiveSound)
    case opus(OpusPacket)
    /// For complete readers (the HLS packager) only.
    case encoded(EncodedItem)
    /// A stream began (`LiveReader.Wants.streams`): what follows is its.
    case began(RealTimeStream)
    /// The stream of this id ended or was given up (`LiveReader.Wants.streams`).
    case ended(String)
}

/// What a complete reader (the HLS packager) takes: every encoded sample of every rung, on
/// the stream's timeline, where the stream changes, and its end, in the order encoded.
public enum EncodedItem: Sendable {
    /// A picture of rung `sample.rung` (the top rung is 0).
    case video(EncodedSample)
    case audio(EncodedSample)
    /// What follows begins a new discontinuity domain.
    case change(StreamChange)
    /// Every sample is published: the reader finishes its work and says so
    /// (`LiveFeed.finished`); the stream's end waits for it.
    case end(StreamTotals)
}

/// Why a discontinuity, and what the stream is from there on.
public struct StreamChange: Sendable, Equatable {
    public var fps: Int
    /// The highest rung encoded (the ones above it are left out).
    public var topRung: Int
    /// The frame rate or the rungs changed (else the source was interrupted).
    public var format: Bool
    /// The frame it happened at.
    public var frame: Int64

    public init(fps: Int, topRung: Int, format: Bool, frame: Int64) {
        self.fps = fps
        self.topRung = topRung
        self.format = format
        self.frame = frame
    }
}

/// What a stream's encoders did, for the readers' last word.
public struct StreamTotals: Sendable, Equatable {
    public var framesEncoded: Int
    public var framesSkipped: Int
    public var framesRepeated: Int
    public var audioSilenceFilled: Int
    /// IDRs made for real-time viewers between the grid's.
    public var keyframesRequested: Int

    public init(framesEncoded: Int, framesSkipped: Int, framesRepeated: Int, audioSilenceFilled: Int, keyframesRequested: Int = 0) {
        self.framesEncoded = framesEncoded
        self.framesSkipped = framesSkipped
        self.framesRepeated = framesRepeated
        self.audioSilenceFilled = audioSilenceFilled
        self.keyframesRequested = keyframesRequested
    }
}

/// A picture for every reader: the access unit, and — while a reader wants RTP — its
/// RFC 6184 payloads, made once for all of them (the parameter sets before each IDR).
public struct LivePicture: Sendable {
    public var picture: RealTimePicture
    /// At most `LiveFeed.maximumPayload` bytes each; empty while no reader wants RTP.
    public var payloads: [[UInt8]]
    /// The 90 kHz RTP timestamp of the capture time (RFC 6184 §5.1).
    public var rtpTimestamp: UInt32
    public var isSync: Bool { picture.isSync }
    public var captureTime: Int64 { picture.captureTime }
}

/// An AAC frame for every reader, with its RFC 3640 payloads while a reader wants RTP.
public struct LiveSound: Sendable {
    public var sound: RealTimeSound
    public var payloads: [[UInt8]]
    /// On the sound's own clock (its sample rate, RFC 3640 §3.2.1).
    public var rtpTimestamp: UInt32
}

/// A 20 ms Opus packet (RFC 7587 §4.2: one frame per packet) with its 48 kHz timestamp.
public struct OpusPacket: Sendable, Equatable {
    public var payload: [UInt8]
    public var rtpTimestamp: UInt32

    public init(payload: [UInt8], rtpTimestamp: UInt32) {
        self.payload = payload
        self.rtpTimestamp = rtpTimestamp
    }
}
