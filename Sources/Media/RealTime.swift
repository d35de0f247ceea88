/// An encoded picture on its way to a real-time output (WebRTC now, RTSP next): the live
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

/// What consumes the live stream as it is encoded, sample by sample, on the live output's
/// thread: each call must return at once (hand the work to a thread of its own).
public protocol RealTimeOutput: AnyObject, Sendable {
    /// A live stream began: pictures that follow are `id`'s.
    func began(stream id: String)
    func picture(_ picture: RealTimePicture)
    /// The microphone's sound as captured, for an output with an encoder of its own (Opus).
    func sound(_ chunk: AudioChunk)
    /// The stream ended (ENDLIST): nothing comes until the next `began`.
    func ended(stream id: String)
}
