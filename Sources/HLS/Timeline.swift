import Media

/// The stream timeline of the source talk: the stream starts at the first video frame,
/// which is placed at 10 s; one delta (10 s − first video capture time) is added to every
/// video and audio timestamp, so the captured A/V offset is kept. The 10 s leave room to
/// start the audio track earlier by the AAC priming without a negative tfdt
/// (HLS_RULES S6, S15).
public struct Timeline: Sendable, Equatable {
    public static let initialOffsetSeconds: Int64 = 10

    /// CLOCK_MONOTONIC ns of the first video frame.
    public let origin: Int64
    /// Wall-clock ms (Unix epoch) at `origin`, for EXT-X-PROGRAM-DATE-TIME.
    public let originWallClockMs: Int64

    public init(firstVideoCaptureTime: Int64, wallClockMs: Int64) {
        origin = firstVideoCaptureTime
        originWallClockMs = wallClockMs
    }

    /// Capture time → ticks of `timescale` on the stream timeline.
    public func ticks(captureTime: Int64, timescale: Int64) -> Int64 {
        Self.initialOffsetSeconds * timescale + rescale(captureTime - origin, from: Timescale.nanoseconds, to: timescale)
    }

    /// The first tick of the stream in `timescale`.
    public func startTicks(timescale: Int64) -> Int64 { Self.initialOffsetSeconds * timescale }

    /// Wall clock of a stream tick, in ms.
    public func wallClockMs(ticks: Int64, timescale: Int64) -> Int64 {
        originWallClockMs + rescale(ticks - startTicks(timescale: timescale), from: timescale, to: 1000)
    }
}

/// Where segment boundaries fall: every `segmentTicks` from the stream start. The encoder
/// forces an IDR on the first frame at or after each boundary and the segmenter cuts at
/// exactly those frames, so both sides agree by construction (and the boundaries do not
/// drift when a frame comes late).
public struct SegmentGrid: Sendable, Equatable {
    public let start: Int64
    public let segmentTicks: Int64

    public init(start: Int64, segmentTicks: Int64) {
        precondition(segmentTicks > 0)
        self.start = start
        self.segmentTicks = segmentTicks
    }

    /// Index of the boundary interval a tick falls in (0 for the first segment).
    public func slot(_ ticks: Int64) -> Int64 {
        ticks <= start ? 0 : (ticks - start) / segmentTicks
    }
}

/// Decides which video frames must be IDR frames: the first frame, and the first frame at
/// or past each boundary of the grid.
public struct KeyframePlanner: Sendable {
    public let grid: SegmentGrid
    private var lastSlot: Int64 = -1

    public init(grid: SegmentGrid) { self.grid = grid }

    private var forced = false

    public mutating func needsKeyframe(at ticks: Int64) -> Bool {
        let slot = grid.slot(ticks)
        defer { lastSlot = max(lastSlot, slot); forced = false }
        return slot > lastSlot || forced
    }

    /// The next frame is an IDR whatever the grid says (after a discontinuity).
    public mutating func forceKeyframe() { forced = true }
}
