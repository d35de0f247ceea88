import Basics
import Media

/// What DESCRIBE answers (RFC 2326 §10.2, an SDP per RFC 8866): the live stream's H.264
/// with its parameter sets and profile (RFC 6184 §8.1), and its AAC as mpeg4-generic in
/// AAC-hbr mode with its AudioSpecificConfig (RFC 3640 §3.3.6), each with a control URL
/// a SETUP names (§C.1.1). A client decodes from the first IDR it gets: the SPS and PPS
/// are here as well as before each IDR in the stream.
public enum RTSPDescription {
    public struct Audio: Sendable, Equatable {
        public var config: AudioSpecificConfig
        public var payloadType: UInt8
        public init(config: AudioSpecificConfig, payloadType: UInt8 = 97) {
            self.config = config
            self.payloadType = payloadType
        }
    }

    /// The control of each track, relative to the content base (the request's URL).
    public static let videoControl = "trackID=0"
    public static let audioControl = "trackID=1"

    public static func sdp(sps: [UInt8], pps: [UInt8], videoPayloadType: UInt8 = 96, audio: Audio?, sessionID: UInt64, host: String) -> String {
        let profile = sps.count >= 4 ? sps[1...3].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() : "42e01f"
        let family = host.contains(":") ? "IP6" : "IP4"
        var lines = ["v=0", "o=- \(sessionID) 1 IN \(family) \(host)", "s=onair", "c=IN \(family) \(host)", "t=0 0",
                     "a=control:*", "a=range:npt=now-",
                     "m=video 0 RTP/AVP \(videoPayloadType)", "a=rtpmap:\(videoPayloadType) H264/90000",
                     "a=fmtp:\(videoPayloadType) packetization-mode=1;profile-level-id=\(profile);sprop-parameter-sets=\(Base64.encode(sps)),\(Base64.encode(pps))",
                     "a=control:\(videoControl)"]
        if let audio {
            let config = audio.config.bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            let channels = max(1, audio.config.channelConfiguration)
            lines += ["m=audio 0 RTP/AVP \(audio.payloadType)", "a=rtpmap:\(audio.payloadType) mpeg4-generic/\(audio.config.sampleRate)/\(channels)",
                      // RFC 3640 §3.3.6: AAC-hbr, 13-bit sizes and 3-bit indices in the AU headers.
                      "a=fmtp:\(audio.payloadType) streamtype=5;profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3;config=\(config)",
                      "a=control:\(audioControl)"]
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
