/// MPEG-4 AudioSpecificConfig (ISO/IEC 14496-3 §1.6.2.1), the two-or-more bytes that the
/// esds carries and from which the `mp4a.40.N` codec string is derived.
public struct AudioSpecificConfig: Equatable, Sendable {
    public static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000,
                                     22050, 16000, 12000, 11025, 8000, 7350]
    public var objectType: Int
    public var sampleRate: Int
    public var channelConfiguration: Int
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) throws {
        var r = BitReader(bytes)
        var type = Int(try r.bits(5))
        if type == 31 { type = 32 + Int(try r.bits(6)) }
        let index = Int(try r.bits(4))
        if index == 15 {
            sampleRate = Int(try r.bits(24))
        } else {
            guard index < Self.sampleRates.count else {
                throw MediaError.invalid("AudioSpecificConfig sampling index \(index) is reserved")
            }
            sampleRate = Self.sampleRates[index]
        }
        channelConfiguration = Int(try r.bits(4))
        objectType = type
        self.bytes = bytes
    }

    /// An AAC-LC config for `sampleRate` and `channels` (what libavcodec's aac writes).
    public static func aacLC(sampleRate: Int, channels: Int) throws -> AudioSpecificConfig {
        guard let index = sampleRates.firstIndex(of: sampleRate) else {
            throw MediaError.invalid("no AAC sampling index for \(sampleRate) Hz")
        }
        let value = (2 << 11) | (index << 7) | (channels << 3)
        return try AudioSpecificConfig(bytes: [UInt8(value >> 8), UInt8(value & 0xFF)])
    }

    /// RFC 6381 codec string: `mp4a.40.<audioObjectType>`.
    public var codecString: String { "mp4a.40.\(objectType)" }
}
