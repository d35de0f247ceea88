import CFFmpeg
import Media

/// I420 pictures → XRGB8888 (little-endian B, G, R, X: DRM's XRGB8888) at another size,
/// through libswscale, for a display that has no plane taking the camera's format.
public final class PictureConverter {
    private var context: OpaquePointer?

    public init() {}
    deinit { sws_freeContext(context) }

    /// Scales `frame` into the `width`×`height` rectangle at `destination` (rows `pitch`
    /// bytes apart).
    public func draw(_ frame: VideoFrame, into destination: UnsafeMutableRawPointer, pitch: Int, width: Int, height: Int) {
        context = sws_getCachedContext(context, Int32(frame.width), Int32(frame.height), AV_PIX_FMT_YUV420P,
                                       Int32(width), Int32(height), AV_PIX_FMT_BGR0, SWS_BILINEAR, nil, nil, nil)
        guard let context else { return }
        frame.planes.withUnsafeBufferPointer { planes in
            let base = planes.baseAddress!
            var sources: [UnsafePointer<UInt8>?] = [base, base + frame.lumaCount, base + frame.lumaCount + frame.chromaCount, nil]
            var strides: [Int32] = [Int32(frame.width), Int32(frame.width / 2), Int32(frame.width / 2), 0]
            var targets: [UnsafeMutablePointer<UInt8>?] = [destination.assumingMemoryBound(to: UInt8.self), nil, nil, nil]
            var targetStrides: [Int32] = [Int32(pitch), 0, 0, 0]
            _ = sws_scale(context, &sources, &strides, 0, Int32(frame.height), &targets, &targetStrides)
        }
    }
}
