import CFFmpeg
import Media

/// Still pictures as baseline JPEG (4:2:0) through libavcodec's `mjpeg` encoder: the
/// snapshot NVRs, hubs and the viewer's poster ask for. The camera's I420 is video range
/// (16–235); JFIF is full range (ITU-T T.871 §7), so libswscale stretches it first —
/// otherwise every viewer would show black as grey.
public final class JPEGEncoder {
    public let width: Int
    public let height: Int
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var scaler: OpaquePointer?
    /// Each picture's pts: an encoder refuses one not after the last.
    private var nextPTS: Int64 = 0

    /// `quality`: libavcodec's qscale, 2 (best) to 31; 4 is a good snapshot at a few
    /// tens of kilobytes for 720p.
    public init(width: Int, height: Int, quality: Int = 4) throws {
        self.width = width
        self.height = height
        quietLibav()
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG) else { throw CodecError.missing("MJPEG encoder") }
        guard let context = avcodec_alloc_context3(codec) else { throw CodecError.outOfMemory("opening the MJPEG encoder") }
        self.context = context
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = AV_PIX_FMT_YUVJ420P
        context.pointee.color_range = AVCOL_RANGE_JPEG
        context.pointee.time_base = AVRational(num: 1, den: 25)
        context.pointee.flags |= Int32(AV_CODEC_FLAG_QSCALE)
        context.pointee.global_quality = Int32(FF_QP2LAMBDA) * Int32(min(31, max(2, quality)))
        try check(avcodec_open2(context, codec, nil), "opening the MJPEG encoder")
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard let frame, packet != nil else { throw CodecError.outOfMemory("opening the MJPEG encoder") }
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        frame.pointee.format = AV_PIX_FMT_YUVJ420P.rawValue
        frame.pointee.color_range = AVCOL_RANGE_JPEG
        try check(av_frame_get_buffer(frame, 0), "allocating a JPEG picture")
        scaler = sws_getContext(Int32(width), Int32(height), AV_PIX_FMT_YUV420P, Int32(width), Int32(height), AV_PIX_FMT_YUVJ420P,
                                SWS_POINT, nil, nil, nil)
        guard let scaler else { throw CodecError.outOfMemory("making the JPEG range converter") }
        // Video range in, full range out, BT.601 both ways (the matrix JFIF uses).
        let bt601 = sws_getCoefficients(SWS_CS_ITU601)
        _ = sws_setColorspaceDetails(scaler, bt601, 0, bt601, 1, 0, 1 << 16, 1 << 16)
    }

    deinit {
        avcodec_free_context(&context)
        av_frame_free(&frame)
        av_packet_free(&packet)
        sws_freeContext(scaler)
    }

    /// The JPEG of one picture of this encoder's size.
    public func encode(_ picture: VideoFrame) throws -> [UInt8] {
        guard let context, let frame, let packet, let scaler else { throw CodecError.closed }
        guard picture.width == width, picture.height == height else {
            throw CodecError.frameSize(width: picture.width, height: picture.height, expectedWidth: width, expectedHeight: height)
        }
        try check(av_frame_make_writable(frame), "preparing a JPEG picture")
        picture.planes.withUnsafeBufferPointer { planes in
            let base = planes.baseAddress!
            var sources: [UnsafePointer<UInt8>?] = [base, base + picture.lumaCount, base + picture.lumaCount + picture.chromaCount, nil]
            var strides: [Int32] = [Int32(width), Int32(width / 2), Int32(width / 2), 0]
            withUnsafeMutablePointer(to: &frame.pointee.data) { data in
                data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { targets in
                    withUnsafeMutablePointer(to: &frame.pointee.linesize) { lines in
                        lines.withMemoryRebound(to: Int32.self, capacity: 8) { targetStrides in
                            _ = sws_scale(scaler, &sources, &strides, 0, Int32(height), targets, targetStrides)
                        }
                    }
                }
            }
        }
        frame.pointee.pts = nextPTS
        nextPTS += 1
        try check(avcodec_send_frame(context, frame), "encoding a JPEG")
        try check(avcodec_receive_packet(context, packet), "encoding a JPEG")
        defer { av_packet_unref(packet) }
        return Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
    }
}
