/// H.264 bit-stream helpers: Annex B ↔ length-prefixed NAL units, and the SPS fields the
/// packager needs. Specification: ITU-T H.264 §7.3.2.1 (SPS), Annex B (byte stream),
/// ISO/IEC 14496-15 §5.3 (AVC sample format).
public enum H264 {
    public enum NALType: UInt8 {
        case slice = 1, idr = 5, sei = 6, sps = 7, pps = 8, accessUnitDelimiter = 9
    }

    public static func nalType(_ nal: ArraySlice<UInt8>) -> UInt8 {
        nal.first.map { $0 & 0x1F } ?? 0
    }

    /// Splits an Annex B byte stream at its start codes (00 00 01 or 00 00 00 01).
    public static func splitAnnexB(_ stream: [UInt8]) -> [ArraySlice<UInt8>] {
        var units: [ArraySlice<UInt8>] = []
        var i = 0
        var start = -1
        let n = stream.count
        while i + 2 < n {
            if stream[i] == 0, stream[i + 1] == 0, stream[i + 2] == 1 {
                if start >= 0 {
                    var end = i
                    // A 4-byte start code's leading zero belongs to the code, not the NAL.
                    while end > start, stream[end - 1] == 0 { end -= 1 }
                    units.append(stream[start..<end])
                }
                i += 3
                start = i
            } else {
                i += 1
            }
        }
        if start >= 0, start < n { units.append(stream[start..<n]) }
        return units.filter { !$0.isEmpty }
    }

    /// NAL units, each behind a 4-byte big-endian length (avcC lengthSizeMinusOne = 3).
    public static func lengthPrefixed<S: Sequence>(_ units: S) -> [UInt8] where S.Element == ArraySlice<UInt8> {
        var out: [UInt8] = []
        for unit in units {
            let length = UInt32(unit.count)
            out.append(UInt8(length >> 24)); out.append(UInt8((length >> 16) & 0xFF))
            out.append(UInt8((length >> 8) & 0xFF)); out.append(UInt8(length & 0xFF))
            out.append(contentsOf: unit)
        }
        return out
    }

    /// Splits a length-prefixed sample back into NAL units; throws if the lengths do not
    /// add up to exactly the sample (14496-15 §5.3.3).
    public static func splitLengthPrefixed(_ sample: [UInt8], lengthSize: Int = 4) throws -> [ArraySlice<UInt8>] {
        var units: [ArraySlice<UInt8>] = []
        var i = 0
        while i < sample.count {
            guard i + lengthSize <= sample.count else { throw MediaError.truncated("NAL length") }
            var length = 0
            for k in 0..<lengthSize { length = (length << 8) | Int(sample[i + k]) }
            i += lengthSize
            guard length > 0, i + length <= sample.count else {
                throw MediaError.invalid("NAL length \(length) overruns the sample")
            }
            units.append(sample[i..<(i + length)])
            i += length
        }
        return units
    }

    /// Removes emulation-prevention bytes (00 00 03 → 00 00), §7.4.1.
    public static func rbsp(_ nal: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(nal.count)
        var zeros = 0
        for byte in nal {
            if zeros >= 2, byte == 3 { zeros = 0; continue }
            zeros = byte == 0 ? zeros + 1 : 0
            out.append(byte)
        }
        return out
    }
}

/// The sequence parameter set fields the init segment and codec string need.
public struct H264SPS: Equatable, Sendable {
    public var profileIdc: UInt8
    public var constraintFlags: UInt8
    public var levelIdc: UInt8
    public var width: Int
    public var height: Int

    /// Parses a SPS NAL unit (including its one-byte header).
    public init(nal: ArraySlice<UInt8>) throws {
        guard H264.nalType(nal) == H264.NALType.sps.rawValue else {
            throw MediaError.invalid("not an SPS NAL unit")
        }
        var r = BitReader(H264.rbsp(nal.dropFirst()))
        profileIdc = UInt8(try r.bits(8))
        constraintFlags = UInt8(try r.bits(8))
        levelIdc = UInt8(try r.bits(8))
        _ = try r.unsignedGolomb()  // seq_parameter_set_id
        var chromaFormat: UInt32 = 1
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profileIdc) {
            chromaFormat = try r.unsignedGolomb()
            if chromaFormat == 3 { try r.skip(1) }  // separate_colour_plane_flag
            _ = try r.unsignedGolomb()  // bit_depth_luma_minus8
            _ = try r.unsignedGolomb()  // bit_depth_chroma_minus8
            try r.skip(1)  // qpprime_y_zero_transform_bypass_flag
            if try r.bit() == 1 {  // seq_scaling_matrix_present_flag
                for i in 0..<(chromaFormat == 3 ? 12 : 8) where try r.bit() == 1 {
                    try Self.skipScalingList(&r, size: i < 6 ? 16 : 64)
                }
            }
        }
        _ = try r.unsignedGolomb()  // log2_max_frame_num_minus4
        let pocType = try r.unsignedGolomb()
        if pocType == 0 {
            _ = try r.unsignedGolomb()
        } else if pocType == 1 {
            try r.skip(1)
            _ = try r.signedGolomb(); _ = try r.signedGolomb()
            let cycle = try r.unsignedGolomb()
            for _ in 0..<cycle { _ = try r.signedGolomb() }
        }
        _ = try r.unsignedGolomb()  // max_num_ref_frames
        try r.skip(1)  // gaps_in_frame_num_value_allowed_flag
        let widthMbs = Int(try r.unsignedGolomb()) + 1
        let heightMapUnits = Int(try r.unsignedGolomb()) + 1
        let frameMbsOnly = try r.bit()
        if frameMbsOnly == 0 { try r.skip(1) }  // mb_adaptive_frame_field_flag
        try r.skip(1)  // direct_8x8_inference_flag
        var cropLeft = 0, cropRight = 0, cropTop = 0, cropBottom = 0
        if try r.bit() == 1 {
            cropLeft = Int(try r.unsignedGolomb()); cropRight = Int(try r.unsignedGolomb())
            cropTop = Int(try r.unsignedGolomb()); cropBottom = Int(try r.unsignedGolomb())
        }
        // Crop units, §7.4.2.1.1 (frame_crop_*_offset semantics).
        let subWidth = chromaFormat == 1 || chromaFormat == 2 ? 2 : 1
        let subHeight = chromaFormat == 1 ? 2 : 1
        let cropUnitX = chromaFormat == 0 ? 1 : subWidth
        let cropUnitY = (chromaFormat == 0 ? 1 : subHeight) * (2 - Int(frameMbsOnly))
        width = widthMbs * 16 - cropUnitX * (cropLeft + cropRight)
        height = (2 - Int(frameMbsOnly)) * heightMapUnits * 16 - cropUnitY * (cropTop + cropBottom)
    }

    private static func skipScalingList(_ r: inout BitReader, size: Int) throws {
        var last: Int32 = 8, next: Int32 = 8
        for _ in 0..<size where next != 0 {
            next = (last + (try r.signedGolomb()) + 256) % 256
            last = next == 0 ? last : next
        }
    }

    /// RFC 6381 codec string, `avc1.PPCCLL`.
    public var codecString: String {
        "avc1." + hex2(profileIdc) + hex2(constraintFlags) + hex2(levelIdc)
    }
}

func hex2(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
}
