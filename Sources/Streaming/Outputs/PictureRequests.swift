import HLS
import Media
import Threading

/// Requests for an IDR out of the segment grid's turn: a real-time viewer that joins (a
/// WebRTC session whose keys are ready, an RTSP PLAY) or lost a picture (PLI, FIR) asks,
/// from its own thread; the live encoder, on its thread, decides at each frame. A request
/// is answered at the next frame, unless a grid IDR is due within `soonFrames` (that one
/// answers it) or one was made for a request less than `spacingTicks` ago (it waits, so
/// viewers joining in a crowd cost at most one extra IDR a second). An IDR inside a
/// segment cuts nothing: the segmenter cuts at the first IDR of each grid slot (HLS_RULES
/// S10, S11 and LL7 allow it; a part that begins with it is marked independent).
final class PictureRequests: Sendable {
    private let pending = Locked(false)

    /// A viewer wants a picture soon.
    func ask() { pending.withLock { $0 = true } }

    static let soonFrames: Int64 = 3
    static let spacingTicks: Int64 = Timescale.video

    /// The decision for the frame at `ticks` (90 kHz), `frameTicks` long, given whether the
    /// grid makes it an IDR anyway and when the last requested one was: whether to make it
    /// one for a request. Pure but for the pending flag it clears.
    func answers(at ticks: Int64, frameTicks: Int64, gridKeyframe: Bool, grid: SegmentGrid, lastForced: Int64?) -> Bool {
        pending.withLock { pending -> Bool in
            guard pending else { return false }
            if gridKeyframe {
                pending = false
                return false
            }
            if let lastForced, ticks - lastForced < Self.spacingTicks { return false }
            if grid.nextBoundary(after: ticks) - ticks <= Self.soonFrames * frameTicks { return false }
            pending = false
            return true
        }
    }
}
