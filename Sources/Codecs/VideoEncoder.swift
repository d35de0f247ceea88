import CFFmpeg
import Files
import Media

public enum VideoEncoderKind: String, Sendable, CaseIterable {
    /// HEVC comes from hardware only (VA-API, V4L2 M2M): software HEVC costs several times
    /// x264's CPU, which no Pi-class board can spare beside a live encode, and libx265 is not
    /// linked (toolchain/deps.sh).
    case auto, vaapi, v4l2m2m, x264

    /// Whether this kind can encode `codec`: x264 is H.264 only.
    func encodes(_ codec: VideoCodec) -> Bool { self != .x264 || codec == .h264 }

    /// The libavcodec encoder behind each kind, for a codec (`.auto` names the software one).
    func codecName(_ codec: VideoCodec) -> String {
        switch (self, codec) {
        case (.vaapi, .h264): return "h264_vaapi"
        case (.vaapi, .hevc): return "hevc_vaapi"
        case (.v4l2m2m, .h264): return "h264_v4l2m2m"
        case (.v4l2m2m, .hevc): return "hevc_v4l2m2m"
        case (.x264, _), (.auto, _): return "libx264"
        }
    }
}

public enum VideoCodec: String, Sendable, CaseIterable {
    case h264, hevc
}

public struct VideoEncoderSettings: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var fps: Int
    public var bitrate: Int
    /// Frames between forced IDRs: the segment length in frames.
    public var keyframeInterval: Int
    public var x264Preset = "veryfast"
    public var x264Tune = "zerolatency"
    public var codec: VideoCodec = .h264

    public init(width: Int, height: Int, fps: Int, bitrate: Int, keyframeInterval: Int) {
        self.width = width
        self.height = height
        self.fps = fps
        self.bitrate = bitrate
        self.keyframeInterval = keyframeInterval
    }
}

/// H.264 (or, for recordings, HEVC) through libavcodec: no B-frames, High (Main) profile
/// where the encoder allows, constant frame rate, an IDR wherever the caller asks (the
/// segment boundaries), parameter sets out of band in the avcC/hvcC (global header).
/// Input timestamps are 90 kHz ticks.
public final class VideoEncoder {
    public let kind: VideoEncoderKind
    public let settings: VideoEncoderSettings
    /// The device node the encoder runs on (VA-API render node), if any.
    public let device: String?
    public private(set) var sps: [UInt8] = []
    public private(set) var pps: [UInt8] = []
    /// HEVC only.
    public private(set) var vps: [UInt8]?
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var hardwareFrames: UnsafeMutablePointer<AVBufferRef>?
    /// VA-API only: the AVFrame a GPU surface is taken into, reused frame after frame.
    private var surface: UnsafeMutablePointer<AVFrame>?
    /// libswscale, when pictures arrive at another size than the encoder's (a 1080p
    /// camera feeding a 720p live stream).
    private var scaler: OpaquePointer?
    private var hardwareDevice: UnsafeMutablePointer<AVBufferRef>?

    public var codecName: String { kind.codecName(settings.codec) }

    /// Opens the encoder of `kind`; `.auto` is resolved by `select`.
    public init(kind: VideoEncoderKind, settings: VideoEncoderSettings, device: String? = nil) throws {
        precondition(kind != .auto, "resolve .auto with VideoEncoder.select")
        self.kind = kind
        self.settings = settings
        self.device = device
        let name = kind.codecName(settings.codec)
        guard kind.encodes(settings.codec) else {
            throw CodecError.cannotEncode(encoder: kind.rawValue, codec: settings.codec.rawValue)
        }
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw CodecError.missing("\(name) encoder")
        }
        quietLibav()
        guard let context = avcodec_alloc_context3(codec) else { throw CodecError.outOfMemory(nil) }
        self.context = context
        context.pointee.width = Int32(settings.width)
        context.pointee.height = Int32(settings.height)
        context.pointee.time_base = AVRational(num: 1, den: Int32(Timescale.video))
        context.pointee.framerate = AVRational(num: Int32(settings.fps), den: 1)
        context.pointee.bit_rate = Int64(settings.bitrate)
        context.pointee.rc_max_rate = Int64(settings.bitrate)
        context.pointee.rc_buffer_size = Int32(settings.bitrate)  // one second of VBV buffer
        context.pointee.gop_size = Int32(settings.keyframeInterval)
        context.pointee.keyint_min = Int32(settings.keyframeInterval)
        context.pointee.max_b_frames = 0
        context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
        context.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        context.pointee.profile = settings.codec == .h264 ? FF_PROFILE_H264_HIGH : FF_PROFILE_HEVC_MAIN
        let options = context.pointee.priv_data
        switch kind {
        case .x264:
            av_opt_set(options, "preset", settings.x264Preset, 0)
            av_opt_set(options, "tune", settings.x264Tune, 0)
            av_opt_set(options, "profile", "high", 0)
            // Forced keyframes become IDRs; no scene-cut keyframes between boundaries.
            av_opt_set(options, "forced-idr", "1", 0)
            av_opt_set(options, "x264-params", "scenecut=0:open-gop=0", 0)
        case .vaapi:
            try attachVAAPI(context, device: device)
        case .v4l2m2m, .auto:
            break
        }
        try check(avcodec_open2(context, codec, nil), "opening \(name)")
        try readParameterSets(extradata(context))
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard let frame, packet != nil else { throw CodecError.outOfMemory(nil) }
        // VA-API uploads NV12 (its surfaces' format); the software encoders take I420.
        frame.pointee.format = (kind == .vaapi ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P).rawValue
        frame.pointee.width = Int32(settings.width)
        frame.pointee.height = Int32(settings.height)
        try check(av_frame_get_buffer(frame, 0), "allocating a video frame")
        if kind == .vaapi {
            surface = av_frame_alloc()
            guard surface != nil else { throw CodecError.outOfMemory(nil) }
        }
    }

    deinit {
        sws_freeContext(scaler)
        avcodec_free_context(&context)
        av_frame_free(&frame)
        av_frame_free(&surface)
        av_packet_free(&packet)
        av_buffer_unref(&hardwareFrames)
        av_buffer_unref(&hardwareDevice)
    }

    /// VA-API takes frames in GPU surfaces: a device on the render node and an NV12
    /// surface pool (libavcodec's hwcontext, as FFmpeg's doc/examples/vaapi_encode.c).
    private func attachVAAPI(_ context: UnsafeMutablePointer<AVCodecContext>, device: String?) throws {
        try check(av_hwdevice_ctx_create(&hardwareDevice, AV_HWDEVICE_TYPE_VAAPI, device, nil, 0),
                  "opening VA-API on \(device ?? "the default device")")
        guard let frames = av_hwframe_ctx_alloc(hardwareDevice) else { throw CodecError.outOfMemory(nil) }
        hardwareFrames = frames
        let framesContext = UnsafeMutableRawPointer(frames.pointee.data!).assumingMemoryBound(to: AVHWFramesContext.self)
        framesContext.pointee.format = AV_PIX_FMT_VAAPI
        framesContext.pointee.sw_format = AV_PIX_FMT_NV12
        framesContext.pointee.width = Int32(settings.width)
        framesContext.pointee.height = Int32(settings.height)
        framesContext.pointee.initial_pool_size = 8
        try check(av_hwframe_ctx_init(frames), "creating VA-API surfaces")
        context.pointee.hw_frames_ctx = av_buffer_ref(frames)
        context.pointee.pix_fmt = AV_PIX_FMT_VAAPI
    }

    /// SPS and PPS from the global header (Annex B, as libx264 and VA-API write it).
    private func readParameterSets(_ header: [UInt8]) throws {
        for nal in H264.splitAnnexB(header) {
            if settings.codec == .hevc {
                switch HEVC.nalType(nal) {
                case HEVC.NALType.vps.rawValue where vps == nil: vps = Array(nal)
                case HEVC.NALType.sps.rawValue where sps.isEmpty: sps = Array(nal)
                case HEVC.NALType.pps.rawValue where pps.isEmpty: pps = Array(nal)
                default: break
                }
                continue
            }
            switch H264.nalType(nal) {
            case H264.NALType.sps.rawValue where sps.isEmpty: sps = Array(nal)
            case H264.NALType.pps.rawValue where pps.isEmpty: pps = Array(nal)
            default: break
            }
        }
    }

    /// Parameter sets and delimiters: they live in the sample entry, not in samples.
    private func isOutOfBand(_ nal: ArraySlice<UInt8>) -> Bool {
        if settings.codec == .hevc {
            return (HEVC.NALType.vps.rawValue...HEVC.NALType.accessUnitDelimiter.rawValue).contains(HEVC.nalType(nal))
        }
        let type = H264.nalType(nal)
        return type == H264.NALType.sps.rawValue || type == H264.NALType.pps.rawValue || type == H264.NALType.accessUnitDelimiter.rawValue
    }

    private func isSync(_ nal: ArraySlice<UInt8>) -> Bool {
        settings.codec == .hevc ? HEVC.isRandomAccess(HEVC.nalType(nal)) : H264.nalType(nal) == H264.NALType.idr.rawValue
    }

    /// Encodes one frame at `ticks` (90 kHz); returns the samples that came out.
    public func encode(_ input: VideoFrame, ticks: Int64, keyframe: Bool) throws -> [EncodedSample] {
        guard let context, let frame else { return [] }
        // One copy per picture: into the reusable frame, as I420 or (VA-API) as NV12,
        // scaled on the way when the sizes differ.
        try check(av_frame_make_writable(frame), "making the frame writable")
        let scaled = input.width != settings.width || input.height != settings.height
        if scaled { try scale(input, into: frame) }
        if kind == .vaapi {
            if !scaled { copyNV12(input, into: frame) }
            try sendHardwareFrame(frame, ticks: ticks, keyframe: keyframe)
        } else {
            if !scaled { copyPlanes(input, into: frame) }
            frame.pointee.pts = ticks
            frame.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
            try check(avcodec_send_frame(context, frame), "encoding a frame")
        }
        return try receive()
    }

    /// Scales an I420 picture into the encoder's frame (its size and pixel format).
    private func scale(_ input: VideoFrame, into frame: UnsafeMutablePointer<AVFrame>) throws {
        scaler = sws_getCachedContext(scaler, Int32(input.width), Int32(input.height), AV_PIX_FMT_YUV420P,
                                      frame.pointee.width, frame.pointee.height, AVPixelFormat(frame.pointee.format),
                                      SWS_BILINEAR, nil, nil, nil)
        guard let scaler else { throw CodecError.cannotScale(width: input.width, height: input.height, toWidth: Int(frame.pointee.width), toHeight: Int(frame.pointee.height)) }
        input.planes.withUnsafeBufferPointer { src in
            let base = src.baseAddress!
            var sources: [UnsafePointer<UInt8>?] = [base, base + input.lumaCount, base + input.lumaCount + input.chromaCount, nil]
            var strides: [Int32] = [Int32(input.width), Int32(input.width / 2), Int32(input.width / 2), 0]
            withUnsafeMutablePointer(to: &frame.pointee.data) { data in
                data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { destinations in
                    withUnsafePointer(to: &frame.pointee.linesize) { sizes in
                        sizes.withMemoryRebound(to: Int32.self, capacity: 8) { destinationStrides in
                            _ = sws_scale(scaler, &sources, &strides, 0, Int32(input.height), destinations, destinationStrides)
                        }
                    }
                }
            }
        }
    }

    /// Everything still inside the encoder.
    public func flush() throws -> [EncodedSample] {
        guard let context else { return [] }
        let ret = avcodec_send_frame(context, nil)
        if ret != onair_averror_eof() { try check(ret, "flushing the video encoder") }
        return try receive()
    }

    /// Uploads an NV12 frame into a VA-API surface and encodes that.
    private func sendHardwareFrame(_ nv12: UnsafeMutablePointer<AVFrame>, ticks: Int64, keyframe: Bool) throws {
        guard let context, let hardwareFrames, let surface else { return }
        av_frame_unref(surface)  // the encoder holds its own reference to the last one
        try check(av_hwframe_get_buffer(hardwareFrames, surface, 0), "getting a VA-API surface")
        try check(av_hwframe_transfer_data(surface, nv12, 0), "uploading to VA-API")
        surface.pointee.pts = ticks
        surface.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        try check(avcodec_send_frame(context, surface), "encoding a frame")
    }

    private func receive() throws -> [EncodedSample] {
        guard let context, let packet else { return [] }
        var samples: [EncodedSample] = []
        try drainPackets(context, packet) { packet in
            var units = H264.splitAnnexB(packetBytes(packet))
            if sps.isEmpty || pps.isEmpty { try? readParameterSets(units.flatMap { [0, 0, 0, 1] + $0 }) }
            // Parameter sets live in the avcC/hvcC (14496-15 §5.3.2, §8.3.2), and access
            // unit delimiters carry nothing the packager needs.
            units.removeAll(where: isOutOfBand)
            let isIDR = units.contains(where: isSync)
            let dts = packet.pointee.dts == Int64.min ? packet.pointee.pts : packet.pointee.dts
            samples.append(EncodedSample(data: H264.lengthPrefixed(units), dts: dts, pts: packet.pointee.pts,
                                         duration: 0, isSync: isIDR))
        }
        return samples
    }

    private func copyPlanes(_ input: VideoFrame, into frame: UnsafeMutablePointer<AVFrame>) {
        input.planes.withUnsafeBufferPointer { src in
            let base = src.baseAddress!
            let cw = input.width / 2, ch = input.height / 2
            let planes: [(UnsafePointer<UInt8>, Int, Int)] = [
                (base, input.width, input.height),
                (base + input.lumaCount, cw, ch),
                (base + input.lumaCount + input.chromaCount, cw, ch)
            ]
            withUnsafeMutablePointer(to: &frame.pointee.data) { dataTuple in
                dataTuple.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { data in
                    withUnsafePointer(to: &frame.pointee.linesize) { sizeTuple in
                        sizeTuple.withMemoryRebound(to: Int32.self, capacity: 8) { linesize in
                            for (index, plane) in planes.enumerated() {
                                let stride = Int(linesize[index])
                                guard let dst = data[index] else { continue }
                                if stride == plane.1 {
                                    dst.update(from: plane.0, count: plane.1 * plane.2)
                                } else {
                                    for row in 0..<plane.2 { (dst + row * stride).update(from: plane.0 + row * plane.1, count: plane.1) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// I420 → NV12 (VA-API's surface format): Y as is, U and V interleaved.
    private func copyNV12(_ input: VideoFrame, into frame: UnsafeMutablePointer<AVFrame>) {
        let y = frame.pointee.data.0!, uv = frame.pointee.data.1!
        let ys = Int(frame.pointee.linesize.0), uvs = Int(frame.pointee.linesize.1)
        input.planes.withUnsafeBufferPointer { src in
            let base = src.baseAddress!
            for row in 0..<input.height { (y + row * ys).update(from: base + row * input.width, count: input.width) }
            let cw = input.width / 2
            let u = base + input.lumaCount, v = u + input.chromaCount
            for row in 0..<(input.height / 2) {
                let line = uv + row * uvs
                for x in 0..<cw { line[2 * x] = u[row * cw + x]; line[2 * x + 1] = v[row * cw + x] }
            }
        }
    }
}

extension VideoEncoder {
    /// Chooses the encoder for `kind`. `auto` tries VA-API (when a DRM render node exists
    /// and the encoder opens), then V4L2 M2M (when a V4L2 node exists and libavcodec finds
    /// an encoder among them), then, for H.264, libx264: HEVC is taken only from hardware
    /// (libx265 is asked for by name). `notes` gets why each one was or was not used.
    public static func select(_ kind: VideoEncoderKind, settings: VideoEncoderSettings,
                              devRoot: String = "/dev", notes: (VideoEncoderKind, String) -> Void) throws -> VideoEncoder {
        let software: [VideoEncoderKind] = settings.codec == .h264 ? [.x264] : []
        let candidates: [VideoEncoderKind] = kind == .auto ? [.vaapi, .v4l2m2m] + software : [kind]
        var lastError: Error?
        for candidate in candidates {
            var device: String?
            switch candidate {
            case .vaapi:
                let nodes = deviceNodes(in: devRoot + "/dri", prefix: "renderD")
                guard let node = nodes.first else {
                    notes(candidate, "no DRM render node")
                    if kind != .auto { lastError = CodecError.noHardware(encoder: "vaapi", reason: "no DRM render node (\(devRoot)/dri/renderD*): this machine has no VA-API GPU") }
                    continue
                }
                device = node
            case .v4l2m2m:
                if deviceNodes(in: devRoot, prefix: "video").isEmpty {
                    notes(candidate, "no V4L2 device node")
                    if kind != .auto { lastError = CodecError.noHardware(encoder: "v4l2m2m", reason: "no V4L2 device node (\(devRoot)/video*)") }
                    continue
                }
            default: break
            }
            do {
                let encoder = try VideoEncoder(kind: candidate, settings: settings, device: device)
                notes(candidate, "selected")
                return encoder
            } catch {
                notes(candidate, "\(error)")
                lastError = error
            }
        }
        throw lastError ?? CodecError.noEncoder(settings.codec == .h264 ? "H.264" : "hardware HEVC")
    }

    static func deviceNodes(in directory: String, prefix: String) -> [String] {
        let names = FileSystem.names(in: directory) ?? []
        return names.filter { $0.hasPrefix(prefix) }.sorted().map { directory + "/" + $0 }
    }
}
