import Codecs
import Logging
import Media
import Threading

/// `GET /api/snapshot.jpg`: the newest captured picture as JPEG, as the stream shows it
/// (rotated as `video.rotation` says). The capture thread only keeps a reference to each
/// frame (its planes are shared, not copied); the JPEG is made when asked, by one request
/// at a time, and answered again until a frame captured a second after it has come: at
/// most one encode per second of capture, however many ask and however often (a client
/// asking once a frame would otherwise keep the encoder at the frame rate).
public final class Snapshots: Sendable {
    private let rotation: Rotation
    private let latest = Locked<VideoFrame?>(nil)
    private let encoding = Locked(Encoding())
    private let log: Log

    /// Only the thread holding `encoding`'s lock touches the encoder; it has no thread of
    /// its own (a libavcodec context may move between threads, one at a time), so the
    /// state may be sent with the lock although the encoder is not Sendable.
    private struct Encoding: @unchecked Sendable {
        var encoder: JPEGEncoder?
        /// The capture time of the frame the JPEG was made from.
        var madeFrom: Int64?
        var jpeg: [UInt8] = []
        var failed = false
        var count = 0
    }

    /// A JPEG is made again only for a frame captured this long after the last one's.
    static let intervalNanoseconds: Int64 = 1_000_000_000

    /// How many JPEGs have been made.
    public var encodes: Int { encoding.withLock { $0.count } }

    public init(rotation: Rotation, log: Log) {
        self.rotation = rotation
        self.log = log
    }

    /// A captured frame (the capture thread): kept until the next.
    func keep(_ frame: VideoFrame) { latest.withLock { $0 = frame } }

    /// The JPEG of the newest frame; nil before the first frame, or when it cannot be made.
    public func jpeg() -> [UInt8]? {
        guard let frame = latest.withLock({ $0 }) else { return nil }
        return encoding.withLock { state -> [UInt8]? in
            if let made = state.madeFrom, frame.captureTime >= made, frame.captureTime - made < Self.intervalNanoseconds {
                return state.jpeg
            }
            let picture = rotation == .none ? frame : frame.rotated(rotation)
            do {
                if state.encoder?.width != picture.width || state.encoder?.height != picture.height {
                    state.encoder = try JPEGEncoder(width: picture.width, height: picture.height)
                }
                state.jpeg = try state.encoder!.encode(picture)
                state.madeFrom = frame.captureTime
                state.failed = false
                state.count += 1
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
