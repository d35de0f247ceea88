import CFFmpeg
import Media

/// Motion-JPEG from a USB camera → I420, through libavcodec's `mjpeg` decoder. Cameras
/// send 4:2:2 (most webcams) or 4:2:0 JPEGs; 4:2:2 chroma is averaged over line pairs.
/// JFIF's samples are full range (ITU-T T.871) and the encoders take video range (BT.601
/// §2.5.3: Y 16-235, Cb/Cr 16-240), so a full-range picture is mapped into it: handed over
/// as it was, its blacks and whites would be clipped and its contrast crushed.
public final class MJPEGDecoder {
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?

    public init() throws {
        quietLibav()
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG) else { throw CodecError.missing("MJPEG decoder") }
        context = avcodec_alloc_context3(codec)
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        guard context != nil, packet != nil, frame != nil else { throw CodecError.outOfMemory("opening the MJPEG decoder") }
        try check(avcodec_open2(context, codec, nil), "opening the MJPEG decoder")
    }

    deinit {
        avcodec_free_context(&context)
        av_packet_free(&packet)
        av_frame_free(&frame)
    }

    /// Decodes one JPEG picture of `width`×`height` into I420 planes.
    public func decode(_ jpeg: UnsafeRawBufferPointer, width: Int, height: Int) throws -> [UInt8] {
        guard let context, let packet, let frame, let base = jpeg.baseAddress else { throw CodecError.closed }
        guard Self.isWhole(jpeg) else { throw CodecError.incompleteJPEG(bytes: jpeg.count) }
        packet.pointee.data = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        packet.pointee.size = Int32(jpeg.count)
        defer { packet.pointee.data = nil; packet.pointee.size = 0 }
        try check(avcodec_send_packet(context, packet), "decoding an MJPEG frame")
        try check(avcodec_receive_frame(context, frame), "decoding an MJPEG frame")
        defer { av_frame_unref(frame) }
        guard Int(frame.pointee.width) == width, Int(frame.pointee.height) == height else {
            throw CodecError.frameSize(width: Int(frame.pointee.width), height: Int(frame.pointee.height), expectedWidth: width, expectedHeight: height)
        }
        let format = AVPixelFormat(frame.pointee.format)
        let fullRange = format == AV_PIX_FMT_YUVJ420P || format == AV_PIX_FMT_YUVJ422P || frame.pointee.color_range == AVCOL_RANGE_JPEG
        let verticalChroma: Int
        switch format {
        case AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUV420P: verticalChroma = 1
        case AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUV422P: verticalChroma = 2
        default: throw CodecError.chromaLayout(String(cString: av_get_pix_fmt_name(format)))
        }
        var planes = [UInt8](repeating: 0, count: VideoFrame.byteCount(width: width, height: height))
        let cw = width / 2, ch = height / 2
        planes.withUnsafeMutableBufferPointer { out in
            let y = out.baseAddress!
            let data = [frame.pointee.data.0!, frame.pointee.data.1!, frame.pointee.data.2!]
            let stride = [Int(frame.pointee.linesize.0), Int(frame.pointee.linesize.1), Int(frame.pointee.linesize.2)]
            for row in 0..<height { (y + row * width).update(from: data[0] + row * stride[0], count: width) }
            for plane in 1...2 {
                let target = y + width * height + (plane - 1) * cw * ch
                for row in 0..<ch {
                    let a = data[plane] + row * verticalChroma * stride[plane]
                    if verticalChroma == 1 { (target + row * cw).update(from: a, count: cw); continue }
                    let b = a + stride[plane]
                    for x in 0..<cw { target[row * cw + x] = UInt8((UInt16(a[x]) + UInt16(b[x]) + 1) / 2) }
                }
            }
            if fullRange {
                Self.lumaToVideo.withUnsafeBufferPointer { map in for i in 0..<(width * height) { y[i] = map[Int(y[i])] } }
                Self.chromaToVideo.withUnsafeBufferPointer { map in for i in (width * height)..<out.count { y[i] = map[Int(y[i])] } }
            }
        }
        return planes
    }

    /// Whether a buffer holds a whole JPEG: SOI first, EOI last (ITU-T T.81 §B.2.1), past
    /// the zeros some webcams pad a buffer with. libavcodec decodes a JPEG cut short (a
    /// frame the camera stopped sending, a payload the driver dropped) into a picture whose
    /// lower part is grey, and says so only in its log; such a picture is not a frame.
    static func isWhole(_ jpeg: UnsafeRawBufferPointer) -> Bool {
        guard jpeg.count >= 4, jpeg[0] == 0xFF, jpeg[1] == 0xD8 else { return false }
        var end = jpeg.count
        while end > 4, jpeg[end - 1] == 0 { end -= 1 }
        return jpeg[end - 2] == 0xFF && jpeg[end - 1] == 0xD9
    }

    /// Full range to video range, rounded: Y' = 16 + Y·219/255, C' = 128 + (C − 128)·224/255.
    static let lumaToVideo: [UInt8] = (0..<256).map { UInt8(16 + ($0 * 219 + 127) / 255) }
    static let chromaToVideo: [UInt8] = (0..<256).map { UInt8(clamping: 128 + Int((Double($0 - 128) * 224 / 255).rounded())) }
}
