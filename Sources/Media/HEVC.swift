/// H.265/HEVC bit-stream facts the recording's `hvcC` needs (ITU-T H.265 §7.3.1.2 NAL
/// header, §7.3.2.2 SPS, §7.3.3 profile_tier_level). Annex B and length-prefix handling
/// are the same as H.264's (`H264.splitAnnexB`, `H264.lengthPrefixed`).
public enum HEVC {
    public enum NALType: UInt8 {
        case vps = 32, sps = 33, pps = 34, accessUnitDelimiter = 35
    }

    /// nal_unit_type: bits 1–6 of the two-byte header.
    public static func nalType(_ nal: ArraySlice<UInt8>) -> UInt8 {
        nal.first.map { ($0 >> 1) & 0x3F } ?? 0
    }

    /// IRAP pictures (BLA, IDR, CRA: types 16–21) are where decoding can start.
    public static func isRandomAccess(_ type: UInt8) -> Bool { (16...21).contains(type) }

    /// What HEVCDecoderConfigurationRecord repeats from the SPS.
    public struct SPS: Sendable, Equatable {
        /// general_profile_space(2) general_tier_flag(1) general_profile_idc(5), then 32
        /// compatibility flags, 48 constraint bits and general_level_idc: 12 bytes, as
        /// they stand in the SPS and in hvcC.
        public var profileTierLevel: [UInt8]
        public var chromaFormat: UInt8
        public var bitDepthLumaMinus8: UInt8
        public var bitDepthChromaMinus8: UInt8
        public var width: Int
        public var height: Int

        /// RFC 6381 / ISO/IEC 14496-15 Annex E: `hvc1.1.6.L93.B0`.
        public var codecString: String {
            let p = profileTierLevel
            let space = ["", "A", "B", "C"][Int(p[0] >> 6)]
            let compatibility = p[1...4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            var reversed: UInt32 = 0
            for bit in 0..<32 where compatibility & (1 << bit) != 0 { reversed |= 1 << (31 - bit) }
            var constraints = Array(p[5...10])
            while constraints.last == 0 { constraints.removeLast() }
            var parts = ["hvc1", "\(space)\(p[0] & 0x1F)", String(reversed, radix: 16, uppercase: true),
                         "\(p[0] & 0x20 != 0 ? "H" : "L")\(p[11])"]
            parts += constraints.map { String($0, radix: 16, uppercase: true) }
            return parts.joined(separator: ".")
        }

        public init(nal: ArraySlice<UInt8>) throws {
            guard nal.count > 3, HEVC.nalType(nal) == NALType.sps.rawValue else { throw MediaError.invalid("not an HEVC SPS") }
            var r = BitReader(H264.rbsp(nal.dropFirst(2)))
            _ = try r.bits(4)                       // sps_video_parameter_set_id
            let maxSubLayersMinus1 = Int(try r.bits(3))
            _ = try r.bit()                         // sps_temporal_id_nesting_flag
            profileTierLevel = try (0..<12).map { _ in UInt8(try r.bits(8)) }
            var profilePresent: [Bool] = [], levelPresent: [Bool] = []
            for _ in 0..<maxSubLayersMinus1 {
                profilePresent.append(try r.bit() == 1)
                levelPresent.append(try r.bit() == 1)
            }
            if maxSubLayersMinus1 > 0 { for _ in maxSubLayersMinus1..<8 { try r.skip(2) } }
            for i in 0..<maxSubLayersMinus1 {
                if profilePresent[i] { try r.skip(88) }
                if levelPresent[i] { try r.skip(8) }
            }
            _ = try r.unsignedGolomb()              // sps_seq_parameter_set_id
            chromaFormat = UInt8(try r.unsignedGolomb())
            if chromaFormat == 3 { _ = try r.bit() } // separate_colour_plane_flag
            width = Int(try r.unsignedGolomb())
            height = Int(try r.unsignedGolomb())
            if try r.bit() == 1 {                   // conformance_window_flag
                for _ in 0..<4 { _ = try r.unsignedGolomb() }
            }
            bitDepthLumaMinus8 = UInt8(try r.unsignedGolomb())
            bitDepthChromaMinus8 = UInt8(try r.unsignedGolomb())
        }
    }
}
