import Basics
import CFFmpeg

/// What the linked libavcodec can do, asked by name. A static FFmpeg is configured with only
/// onair's codecs (toolchain/deps.sh), so a configure line that dropped one would lose a
/// feature silently on some board; `onair version` reports this and the build checks it.
public enum CodecLibrary {
    /// Every encoder a setting can select (`video.encoder`, `record.encoder`, `record.codec`),
    /// AAC, and MJPEG (snapshots).
    public static let requiredEncoders: [String] =
        [VideoEncoderKind.x264, .vaapi, .v4l2m2m].flatMap { kind in
            VideoCodec.allCases.filter(kind.encodes).map(kind.codecName)
        } + ["aac", "mjpeg"]

    /// The required codecs this libavcodec lacks: encoder names, and "mjpeg decoder".
    public static var missing: [String] {
        requiredEncoders.filter { avcodec_find_encoder_by_name($0) == nil }
            + (avcodec_find_decoder(AV_CODEC_ID_MJPEG) == nil ? ["mjpeg decoder"] : [])
    }

    public static var versions: [LibraryVersion] {
        let ffmpeg = debianSource("ffmpeg", onair_debian_ffmpeg())
        return [
            LibraryVersion("libavcodec", dotted(avcodec_version()), debianSource: ffmpeg),
            LibraryVersion("libavutil", dotted(avutil_version()), debianSource: ffmpeg),
            LibraryVersion("libswscale", dotted(swscale_version()), debianSource: ffmpeg),
            LibraryVersion("x264", "", debianSource: debianSource("x264", onair_debian_x264())),
        ]
    }

    /// The Debian release the static libraries were built for ("" with Debian's shared ones).
    public static var debianSuite: String { String(cString: onair_debian_suite()) }

    /// FFmpeg's AV_VERSION_INT: major << 16 | minor << 8 | micro.
    private static func dotted(_ version: UInt32) -> String {
        "\(version >> 16).\((version >> 8) & 0xFF).\(version & 0xFF)"
    }
}
