/// An encoded picture on its way to the real-time outputs (WebRTC, RTSP): the live
/// stream's access unit as its encoder made it — no copy, no second encoder — with the
/// capture time RTP's timestamps and abs-capture-time come from.
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

    public init(accessUnit: [UInt8], captureTime: Int64, isSync: Bool, sps: [UInt8], pps: [UInt8]) {
        self.accessUnit = accessUnit
        self.captureTime = captureTime
        self.isSync = isSync
        self.sps = sps
        self.pps = pps
    }
}

/// A live stream as a real-time output learns of it when it begins.
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
/// sample was captured: the same sound HLS carries, for an output that sends AAC (RTSP).
public struct RealTimeSound: Sendable {
    public var accessUnit: [UInt8]
    /// CLOCK_MONOTONIC ns.
    public var captureTime: Int64

    public init(accessUnit: [UInt8], captureTime: Int64) {
        self.accessUnit = accessUnit
        self.captureTime = captureTime
    }
}

/// What consumes the live stream as it is encoded, sample by sample, on the live output's
/// thread: each call must return at once (hand the work to a thread of its own). The live
/// stream feeds every output it is given the same access units (no second encoder).
public protocol RealTimeOutput: AnyObject, Sendable {
    /// A live stream began: what follows is `stream`'s.
    func began(_ stream: RealTimeStream)
    func picture(_ picture: RealTimePicture)
    /// The live stream's AAC as encoded (RTSP).
    func encodedSound(_ sound: RealTimeSound)
    /// The microphone's sound as captured, for an output with an encoder of its own (Opus).
    func sound(_ chunk: AudioChunk)
    /// The stream ended (ENDLIST): nothing comes until the next `began`.
    func ended(stream id: String)
}

extension RealTimeOutput {
    /// An output that sends no AAC ignores it.
    public func encodedSound(_ sound: RealTimeSound) {}
    /// An output without an encoder of its own ignores the captured sound.
    public func sound(_ chunk: AudioChunk) {}
}
