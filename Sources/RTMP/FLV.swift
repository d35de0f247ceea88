import MP4

/// The bodies of FLV's video and audio tags, which RTMP's video and audio messages carry
/// (Adobe's "Video File Format Specification" v10.1, E.4.3.1 and E.4.2.1): H.264 as AVC
/// (codec 7) with its decoder configuration first, AAC (format 10) with its
/// AudioSpecificConfig first.
public enum FLV {
    /// The AVC sequence header: the AVCDecoderConfigurationRecord (ISO/IEC 14496-15
    /// §5.3.3.1) of the stream's parameter sets, which a decoder needs before any picture.
    public static func videoSequenceHeader(sps: [UInt8], pps: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u8(0x17)  // key frame (1), AVC (7)
        w.u8(0)     // AVCPacketType 0: sequence header
        w.u24(0)    // composition time
        InitSegment.avcConfiguration(&w, sps: sps, pps: pps)
        return w.bytes
    }

    /// One picture: its NAL units as they are (4-byte lengths, as the configuration
    /// record says). Pictures are sent in decode order and onair's encoders make no
    /// B-frames, so the composition time is 0.
    public static func videoPicture(_ accessUnit: [UInt8], isSync: Bool) -> [UInt8] {
        [isSync ? 0x17 : 0x27, 1, 0, 0, 0] + accessUnit
    }

    /// The AAC sequence header: the AudioSpecificConfig (ISO/IEC 14496-3 §1.6.2.1). The
    /// first byte is always 0xAF for AAC (E.4.2.1: the rate and channel bits are fixed;
    /// the decoder reads them from the config).
    public static func audioSequenceHeader(_ config: [UInt8]) -> [UInt8] { [0xAF, 0] + config }

    /// One raw AAC access unit.
    public static func audioFrame(_ accessUnit: [UInt8]) -> [UInt8] { [0xAF, 1] + accessUnit }
}
