import Media
import Threading

/// Where a stream's media time meets the calendar, for EXT-X-PROGRAM-DATE-TIME: wall
/// minus monotonic, fixed the first time it is asked for while the wall clock is
/// synchronised, and never moved after (a later step of the clock would make the dates
/// jump, which RFC 8216bis §4.4.4.6 forbids between contiguous segments). Until then
/// there is no date: a segment made before the clock was trusted has no
/// PROGRAM-DATE-TIME, the ones after it do (§4.4.4.6 lets the tag start at any segment).
/// Shared by every output of one stream, so the live stream and the recording agree.
public final class StreamDating: Sendable {
    private let offsetMs: Locked<Int64?>
    private let clock: (any WallClock)?

    public init(clock: any WallClock) {
        self.clock = clock
        offsetMs = Locked(nil)
    }

    /// A stream whose calendar is known from the start (a replay, the bench, tests).
    public init(offsetMs: Int64) {
        self.offsetMs = Locked(offsetMs)
        clock = nil
    }

    /// The wall-clock ms of a capture time (monotonic ns), once the clock is trusted.
    public func wallClockMs(monotonic: Int64) -> Int64? {
        anchor().map { floorDivide(monotonic, 1_000_000) + $0 }
    }

    /// The offset, fixing it now if the clock has become trustworthy.
    public func anchor() -> Int64? {
        offsetMs.withLock { [clock] offsetMs in
            if offsetMs == nil, let reading = clock?.read(), reading.synchronized { offsetMs = reading.offsetMs }
            return offsetMs
        }
    }

    private func floorDivide(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
}

/// The stream timeline of the source talk: the stream starts at the first video frame,
/// which is placed at 10 s; one delta (10 s − first video capture time) is added to every
/// video and audio timestamp, so the captured A/V offset is kept. The 10 s leave room to
/// start the audio track earlier by the AAC priming without a negative tfdt
/// (HLS_RULES S6, S15).
public struct Timeline: Sendable, Equatable {
    public static let initialOffsetSeconds: Int64 = 10

    /// CLOCK_MONOTONIC ns of the first video frame.
    public let origin: Int64
    /// The stream's calendar, for EXT-X-PROGRAM-DATE-TIME.
    public let dating: StreamDating

    public init(firstVideoCaptureTime: Int64, dating: StreamDating) {
        origin = firstVideoCaptureTime
        self.dating = dating
    }

    /// Capture time → ticks of `timescale` on the stream timeline.
    public func ticks(captureTime: Int64, timescale: Int64) -> Int64 {
        Self.initialOffsetSeconds * timescale + rescale(captureTime - origin, from: Timescale.nanoseconds, to: timescale)
    }

    /// The first tick of the stream in `timescale`.
    public func startTicks(timescale: Int64) -> Int64 { Self.initialOffsetSeconds * timescale }

    /// The capture time (monotonic ns) a stream tick stands for.
    public func captureTime(ticks: Int64, timescale: Int64) -> Int64 {
        origin + rescale(ticks - startTicks(timescale: timescale), from: timescale, to: Timescale.nanoseconds)
    }

    /// Wall clock of a stream tick, in ms; nil until the wall clock is trusted.
    public func wallClockMs(ticks: Int64, timescale: Int64) -> Int64? {
        dating.wallClockMs(monotonic: captureTime(ticks: ticks, timescale: timescale))
    }

    /// A stream whose wall clock at its first frame is known and trusted.
    public init(firstVideoCaptureTime: Int64, wallClockMs: Int64) {
        self.init(firstVideoCaptureTime: firstVideoCaptureTime,
                  dating: StreamDating(offsetMs: wallClockMs - firstVideoCaptureTime / 1_000_000))
    }

    public static func == (a: Timeline, b: Timeline) -> Bool { a.origin == b.origin && a.dating === b.dating }
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

    /// The first boundary after the slot `ticks` falls in.
    public func nextBoundary(after ticks: Int64) -> Int64 { start + (slot(ticks) + 1) * segmentTicks }
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
