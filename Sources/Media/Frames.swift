/// One captured picture, planar YUV 4:2:0 (I420: Y, then U, then V, each tightly packed).
public struct VideoFrame: Sendable {
    public var width: Int
    public var height: Int
    /// Y plane (width×height), then U and V planes ((width/2)×(height/2) each).
    public var planes: [UInt8]
    /// Capture time, CLOCK_MONOTONIC nanoseconds.
    public var captureTime: Int64
    /// Frames counted from 0 when the source started.
    public var index: Int64
    /// The first frame after the source was interrupted (a camera unplugged and back):
    /// the time since the frame before is a gap, not missing frames.
    public var discontinuity = false

    public init(width: Int, height: Int, planes: [UInt8], captureTime: Int64, index: Int64) {
        precondition(width % 2 == 0 && height % 2 == 0, "4:2:0 needs even dimensions")
        precondition(planes.count == VideoFrame.byteCount(width: width, height: height))
        self.width = width
        self.height = height
        self.planes = planes
        self.captureTime = captureTime
        self.index = index
    }

    public static func byteCount(width: Int, height: Int) -> Int {
        width * height + 2 * (width / 2) * (height / 2)
    }
    public var lumaCount: Int { width * height }
    public var chromaCount: Int { (width / 2) * (height / 2) }
}

/// Interleaved signed 16-bit PCM with the capture time of its first sample.
public struct AudioChunk: Sendable {
    public var samples: [Int16]
    public var channels: Int
    public var sampleRate: Int
    /// Capture time of the first sample, CLOCK_MONOTONIC nanoseconds.
    public var captureTime: Int64

    public init(samples: [Int16], channels: Int, sampleRate: Int, captureTime: Int64) {
        precondition(channels > 0 && samples.count % channels == 0)
        self.samples = samples
        self.channels = channels
        self.sampleRate = sampleRate
        self.captureTime = captureTime
    }
    public var frameCount: Int { samples.count / channels }
}

/// One coded access unit as the packager stores it.
public struct EncodedSample: Sendable, Equatable {
    /// Video: length-prefixed (4-byte) NAL units; audio: one raw AAC access unit.
    public var data: [UInt8]
    /// Decode and presentation time in the track's timescale.
    public var dts: Int64
    public var pts: Int64
    /// Ticks until the next sample; 0 while unknown.
    public var duration: Int64
    public var isSync: Bool
    /// Which rung of the quality ladder a video sample belongs to (0: the top, and the
    /// only one without a ladder).
    public var rung = 0

    public init(data: [UInt8], dts: Int64, pts: Int64, duration: Int64, isSync: Bool, rung: Int = 0) {
        self.data = data
        self.dts = dts
        self.pts = pts
        self.duration = duration
        self.isSync = isSync
        self.rung = rung
    }
}
