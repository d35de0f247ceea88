import Codecs
import Logging
import Media
import Threading

/// `GET /api/snapshot.jpg`: the newest captured picture as JPEG, as the stream shows it
/// (rotated as `video.rotation` says). The capture thread only keeps a reference to each
/// frame (its planes are shared, not copied); the JPEG is made when asked, by one request
/// at a time, and kept for as long as no newer frame has come — a hundred viewers asking
/// within one frame interval cost one encode.
final class Snapshots: Sendable {
    private let rotation: Rotation
    private let latest = Locked<VideoFrame?>(nil)
    private let encoding = Locked(Encoding())
    private let log: Log

    /// Only the thread holding `encoding`'s lock touches the encoder.
    private struct Encoding {
        var encoder: JPEGEncoder?
        var frame: (index: Int64, captureTime: Int64)?
        var jpeg: [UInt8] = []
        var failed = false
    }

    init(rotation: Rotation, log: Log) {
        self.rotation = rotation
        self.log = log
    }

    /// A captured frame (the capture thread): kept until the next.
    func keep(_ frame: VideoFrame) { latest.withLock { $0 = frame } }

    /// The JPEG of the newest frame; nil before the first frame, or when it cannot be made.
    func jpeg() -> [UInt8]? {
        guard let frame = latest.withLock({ $0 }) else { return nil }
        return encoding.withLock { state -> [UInt8]? in
            if let made = state.frame, made.index == frame.index, made.captureTime == frame.captureTime { return state.jpeg }
            let picture = rotation == .none ? frame : frame.rotated(rotation)
            do {
                if state.encoder?.width != picture.width || state.encoder?.height != picture.height {
                    state.encoder = try JPEGEncoder(width: picture.width, height: picture.height)
                }
                state.jpeg = try state.encoder!.encode(picture)
                state.frame = (frame.index, frame.captureTime)
                state.failed = false
                return state.jpeg
            } catch {
                if !state.failed { log(.snapshotFailed, level: .warn, ("problem", "\(error)")) }
                state.failed = true
                state.encoder = nil
                return nil
            }
        }
    }
}
