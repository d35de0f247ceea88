/// Which of an offer's H.264 payload types the board can send (RFC 6184 §8.1, RFC 7742
/// §6.2): packetization-mode=1 (the packetizer's), and a profile whose decoders decode
/// the encoder's stream. The level may differ where `level-asymmetry-allowed=1` says a
/// receiver takes a higher one; without it, the offer's level must be at least the stream's.
public enum H264Offer {
    /// The stream's profile-level-id (three bytes: profile_idc, constraint flags,
    /// level_idc), from the encoder's SPS.
    public struct Profile: Sendable, Equatable {
        public var profileIDC: UInt8
        public var constraints: UInt8
        public var levelIDC: UInt8

        public init(profileIDC: UInt8, constraints: UInt8, levelIDC: UInt8) {
            self.profileIDC = profileIDC
            self.constraints = constraints
            self.levelIDC = levelIDC
        }

        /// `42e01f` and the like; nil unless six hex digits.
        public init?(hex: String) {
            guard hex.utf8.count == 6, let value = UInt32(hex, radix: 16) else { return nil }
            profileIDC = UInt8(value >> 16)
            constraints = UInt8((value >> 8) & 0xFF)
            levelIDC = UInt8(value & 0xFF)
        }

        public var hex: String {
            [profileIDC, constraints, levelIDC].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        }

        /// Constrained Baseline (RFC 6184 §8.1 table 5): Baseline with constraint_set1, or
        /// Main or Extended with the flags that make it so.
        var isConstrainedBaseline: Bool {
            switch profileIDC {
            case 66: return constraints & 0x40 != 0
            case 77: return constraints & 0x80 != 0
            case 88: return constraints & 0xC0 == 0xC0
            default: return false
            }
        }

        /// Baseline, Main or High: 8-bit 4:2:0, what every software H.264 decoder
        /// (libavcodec, OpenH264's High-less builds aside) plays whichever is signalled.
        var isEightBitFourTwoZero: Bool { [66, 77, 100].contains(profileIDC) }

        /// A receiver of `offered` decodes a stream of this profile: a Constrained Baseline
        /// stream by any of the profiles that contain it, a Main stream by Main's and the
        /// High profiles', a High stream by High's and those above it (ITU-T H.264 A.2.4–
        /// A.2.7: a High 10, High 4:2:2 or High 4:4:4 Predictive decoder decodes High
        /// bitstreams — Chromium without its High profile offers `f4001f`). The offer's
        /// constraint flags (Chrome's `640c1f`, Constrained High) rule out interlace and
        /// B-frames, which onair's live encodes never use.
        func decodable(by offered: Profile) -> Bool {
            let high: [UInt8] = [100, 110, 122, 244]
            if isConstrainedBaseline && (offered.isConstrainedBaseline || ([66, 77] + high).contains(offered.profileIDC)) { return true }
            switch profileIDC {
            case 77: return ([77] + high).contains(offered.profileIDC)
            case 100: return high.contains(offered.profileIDC)
            default: return profileIDC == offered.profileIDC
            }
        }
    }

    /// The first of the section's payload types (its preference order) that the stream can
    /// be sent as; nil when none. `stretching`: also a payload type whose profile is below
    /// the stream's (Baseline or Main for a High stream), for receivers that offer only
    /// Constrained Baseline though their decoder plays High — see `WHEPAnswer`.
    public static func choose(_ media: SessionDescription.Media, stream: Profile, stretching: Bool = false) -> String? {
        let payloadTypes = media.payloadTypes
        return media.formats.first { payloadType in
            guard let map = payloadTypes.rtpmap(payloadType), map.encoding.uppercased() == "H264", map.clockRate == 90_000 else { return false }
            let parameters = payloadTypes.fmtp(payloadType)
            guard parameters["packetization-mode"] == "1" else { return false }
            // RFC 6184 §8.1: no profile-level-id means 42000A, Baseline level 1.
            let offered = parameters["profile-level-id"].flatMap(Profile.init(hex:)) ?? Profile(profileIDC: 66, constraints: 0, levelIDC: 10)
            guard stream.decodable(by: offered) || stretching && stream.isEightBitFourTwoZero && offered.isEightBitFourTwoZero else { return false }
            return parameters["level-asymmetry-allowed"] == "1" || offered.levelIDC >= stream.levelIDC
        }
    }
}
