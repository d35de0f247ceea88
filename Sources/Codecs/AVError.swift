import CFFmpeg

/// A libavcodec failure, with what onair was doing and libav's own words.
public struct CodecError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }

    static func av(_ code: Int32, _ what: String) -> CodecError {
        var buffer = [CChar](repeating: 0, count: 128)
        av_strerror(code, &buffer, buffer.count)
        let reason = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return CodecError("\(what): \(reason)")
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
