import CFFmpeg

/// Why an encoder or decoder cannot do its work.
public enum CodecError: Error, CustomStringConvertible, Equatable {
    /// libavcodec refused: what onair was doing, and libav's own words (av_strerror).
    case library(String, reason: String)
    /// This libavcodec was built without a codec ("aac encoder", "MJPEG decoder").
    case missing(String)
    /// An allocation failed (while doing what, when it says).
    case outOfMemory(String?)
    /// The chosen encoder does not make that codec (v4l2m2m and HEVC).
    case cannotEncode(encoder: String, codec: String)
    /// No hardware for an encoder asked for by name: which, and what is missing.
    case noHardware(encoder: String, reason: String)
    /// No encoder of the codec could be opened ("H.264", "hardware HEVC").
    case noEncoder(String)
    /// The aac encoder gave no AudioSpecificConfig.
    case noAudioSpecificConfig
    /// The decoder was used after it was closed.
    case closed
    /// A decoded frame has another size than the stream.
    case frameSize(width: Int, height: Int, expectedWidth: Int, expectedHeight: Int)
    /// A decoded frame's chroma layout onair does not convert.
    case chromaLayout(String)
    /// libswscale has no conversion between these sizes.
    case cannotScale(width: Int, height: Int, toWidth: Int, toHeight: Int)
    /// A camera's JPEG that does not begin with SOI or end with EOI: cut short.
    case incompleteJPEG(bytes: Int)

    public var description: String {
        switch self {
        case .library(let what, let reason): return "\(what): \(reason)"
        case .missing(let codec): return "this libavcodec has no \(codec)"
        case .outOfMemory(let doing): return "out of memory" + (doing.map { " " + $0 } ?? "")
        case .cannotEncode(let encoder, let codec): return "\(encoder) does not encode \(codec)"
        case .noHardware(let encoder, let reason): return "video encoder \(encoder): \(reason)"
        case .noEncoder(let codec): return "no \(codec) encoder could be opened"
        case .noAudioSpecificConfig: return "the aac encoder gave no AudioSpecificConfig"
        case .closed: return "MJPEG decoder is closed"
        case .frameSize(let width, let height, let expectedWidth, let expectedHeight):
            return "MJPEG frame is \(width)x\(height), not \(expectedWidth)x\(expectedHeight)"
        case .chromaLayout(let name): return "MJPEG chroma layout \(name) is not supported"
        case .cannotScale(let width, let height, let toWidth, let toHeight):
            return "cannot scale \(width)x\(height) to \(toWidth)x\(toHeight)"
        case .incompleteJPEG(let bytes): return "MJPEG frame of \(bytes) bytes is not a whole JPEG (no start or end marker)"
        }
    }

    static func av(_ code: Int32, _ what: String) -> CodecError {
        var buffer = [CChar](repeating: 0, count: 128)
        av_strerror(code, &buffer, buffer.count)
        return .library(what, reason: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}

/// Turns a negative libav return code into a thrown error.
@discardableResult
func check(_ code: Int32, _ what: @autoclosure () -> String) throws -> Int32 {
    if code < 0 { throw CodecError.av(code, what()) }
    return code
}

/// Receives every packet the encoder has ready; stops at EAGAIN/EOF.
func drainPackets(_ context: UnsafeMutablePointer<AVCodecContext>, _ packet: UnsafeMutablePointer<AVPacket>,
                  _ body: (UnsafeMutablePointer<AVPacket>) -> Void) throws {
    while true {
        let ret = avcodec_receive_packet(context, packet)
        if ret == onair_averror_eagain() || ret == onair_averror_eof() { return }
        try check(ret, "receiving an encoded packet")
        body(packet)
        av_packet_unref(packet)
    }
}

func packetBytes(_ packet: UnsafeMutablePointer<AVPacket>) -> [UInt8] {
    guard let data = packet.pointee.data, packet.pointee.size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: Int(packet.pointee.size)))
}

func extradata(_ context: UnsafeMutablePointer<AVCodecContext>) -> [UInt8] {
    guard let data = context.pointee.extradata, context.pointee.extradata_size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: Int(context.pointee.extradata_size)))
}

/// libav logs to stderr on its own; onair keeps only its errors there so the console
/// shows onair's one-line events.
func quietLibav() {
    av_log_set_level(AV_LOG_ERROR)
}
