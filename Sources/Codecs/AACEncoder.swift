import CFFmpeg
import Media

public struct AudioEncoderSettings: Sendable, Equatable {
    public var sampleRate: Int
    public var channels: Int
    public var bitrate: Int
    public init(sampleRate: Int = 48_000, channels: Int = 1, bitrate: Int = 64_000) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitrate = bitrate
    }
}

/// AAC-LC through libavcodec's native `aac` encoder. Timestamps are sample ticks: the
/// caller says where the first sample sits on the stream timeline and the encoder counts
/// samples from there, so the audio track stays continuous. The first packet comes out
/// `priming` samples earlier (libavcodec's initial_padding), which is how the audio
/// track's tfdt ends up starting before the video (Apple, "Preparing Audio for HLS").
public final class AACEncoder {
    public let settings: AudioEncoderSettings
    /// The AudioSpecificConfig (esds DecoderSpecificInfo).
    public let audioSpecificConfig: [UInt8]
    /// Encoder delay in samples (1024 for libavcodec's aac).
    public let priming: Int
    public let frameSize: Int
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// Interleaved samples waiting to fill a frame.
    private var pending: [Int16] = []
    private var nextTicks: Int64?

    public init(settings: AudioEncoderSettings) throws {
        self.settings = settings
        guard let codec = avcodec_find_encoder_by_name("aac") else { throw CodecError.missing("aac encoder") }
        quietLibav()
        guard let context = avcodec_alloc_context3(codec) else { throw CodecError.outOfMemory(nil) }
        self.context = context
        context.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        context.pointee.sample_rate = Int32(settings.sampleRate)
        onair_set_mono_layout(&context.pointee.ch_layout, Int32(settings.channels))
        context.pointee.bit_rate = Int64(settings.bitrate)
        context.pointee.time_base = AVRational(num: 1, den: Int32(settings.sampleRate))
        context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
        context.pointee.profile = FF_PROFILE_AAC_LOW
        try check(avcodec_open2(context, codec, nil), "opening the aac encoder")
        audioSpecificConfig = extradata(context)
        priming = Int(context.pointee.initial_padding)
        frameSize = Int(context.pointee.frame_size)
        guard !audioSpecificConfig.isEmpty else { throw CodecError.noAudioSpecificConfig }
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard frame != nil, packet != nil else { throw CodecError.outOfMemory(nil) }
    }

    deinit {
        avcodec_free_context(&context)
        av_frame_free(&frame)
        av_packet_free(&packet)
    }

    /// Adds interleaved samples; `startTicks` places the very first sample and is ignored
    /// afterwards. Returns the access units that are ready.
    public func encode(_ samples: [Int16], startTicks: Int64) throws -> [EncodedSample] {
        if nextTicks == nil { nextTicks = startTicks }
        pending.append(contentsOf: samples)
        var out: [EncodedSample] = []
        let perFrame = frameSize * settings.channels
        var offset = 0
        while pending.count - offset >= perFrame {
            out += try send(pending[offset..<(offset + perFrame)])
            offset += perFrame
        }
        pending.removeFirst(offset)
        return out
    }

    /// Encodes the partial last frame and drains the encoder.
    public func flush() throws -> [EncodedSample] {
        guard let context else { return [] }
        var out: [EncodedSample] = []
        if !pending.isEmpty, nextTicks != nil {
            out += try send(pending[...])
            pending = []
        }
        let ret = avcodec_send_frame(context, nil)
        if ret != onair_averror_eof() { try check(ret, "flushing the aac encoder") }
        out += try receive()
        return out
    }

    private func send(_ samples: ArraySlice<Int16>) throws -> [EncodedSample] {
        guard let context, let frame, let ticks = nextTicks else { return [] }
        let count = samples.count / settings.channels
        av_frame_unref(frame)
        frame.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        frame.pointee.sample_rate = Int32(settings.sampleRate)
        frame.pointee.nb_samples = Int32(count)
        try check(av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout), "setting the channel layout")
        try check(av_frame_get_buffer(frame, 0), "allocating an audio frame")
        let channels = settings.channels
        samples.withUnsafeBufferPointer { src in
            withUnsafePointer(to: &frame.pointee.data) { tuple in
                tuple.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { data in
                    for channel in 0..<channels {
                        let dst = UnsafeMutableRawPointer(data[channel]!).assumingMemoryBound(to: Float.self)
                        for i in 0..<count { dst[i] = Float(src[i * channels + channel]) / 32768 }
                    }
                }
            }
        }
        frame.pointee.pts = ticks
        nextTicks = ticks + Int64(count)
        try check(avcodec_send_frame(context, frame), "encoding audio")
        return try receive()
    }

    private func receive() throws -> [EncodedSample] {
        guard let context, let packet else { return [] }
        var out: [EncodedSample] = []
        try drainPackets(context, packet) { packet in
            // Every AAC-LC access unit is 1024 samples long, the padded last one too; a
            // shorter trun duration would read as timestamp jitter (HLS_RULES S13).
            out.append(EncodedSample(data: packetBytes(packet), dts: packet.pointee.pts, pts: packet.pointee.pts,
                                     duration: Int64(frameSize), isSync: true))
        }
        return out
    }
}
