import SDP

/// The SDP answer to a WHEP offer (draft-ietf-wish-whep §4.2, RFC 8829 §5.3): the board
/// sends, the browser receives. Video is the live stream's H.264 in the payload type the
/// offer prefers among those that decode it; sound is answered in Opus when the board has
/// a microphone and the offer takes Opus in the picture's BUNDLE, otherwise its section is
/// rejected (port 0, RFC 3264 §6). ICE-lite with
/// every host candidate at once (no trickle), DTLS as the passive side (RFC 5763 §5).
public struct WHEPAnswer: Sendable {
    public var sdp: SessionDescription
    /// What the video sender needs from the negotiation.
    public var video: Video
    /// What the sound sender needs: nil when the offer takes no Opus in the picture's
    /// BUNDLE, or the board has none to send.
    public var audio: Audio?
    /// The offer's ICE credentials.
    public var remote: ICECredentials
    /// The offer's DTLS fingerprint (`sha-256 AB:CD:…`), checked against the browser's
    /// certificate at the handshake.
    public var remoteFingerprint: String
    /// The stream is sent under a payload type whose profile is below its own (a receiver
    /// that offered only Constrained Baseline or Main).
    public var profileStretched = false

    public struct Video: Sendable, Equatable {
        public var mid: String
        public var payloadType: UInt8
        /// RFC 8285 ids the browser gave, when it offered them.
        public var playoutDelayID: UInt8?
        public var absCaptureTimeID: UInt8?
        public var nack: Bool

        public init(mid: String, payloadType: UInt8, playoutDelayID: UInt8?, absCaptureTimeID: UInt8?, nack: Bool) {
            self.mid = mid
            self.payloadType = payloadType
            self.playoutDelayID = playoutDelayID
            self.absCaptureTimeID = absCaptureTimeID
            self.nack = nack
        }
    }

    public struct Audio: Sendable, Equatable {
        public var mid: String
        public var payloadType: UInt8
        public init(mid: String, payloadType: UInt8) {
            self.mid = mid
            self.payloadType = payloadType
        }
    }

    public struct Local: Sendable {
        public var credentials: ICECredentials
        /// `sha-256 AB:CD:…` of the board's DTLS certificate.
        public var fingerprint: String
        /// Host candidates: the board's addresses with the one WebRTC port.
        public var candidates: [PeerAddress]
        public var videoSSRC: UInt32
        public var cname: String
        public var stream: H264Offer.Profile
        /// The sound's SSRC; nil when the board has no Opus to send (no microphone).
        public var audioSSRC: UInt32?

        public init(credentials: ICECredentials, fingerprint: String, candidates: [PeerAddress], videoSSRC: UInt32, cname: String,
                    stream: H264Offer.Profile, audioSSRC: UInt32? = nil) {
            self.audioSSRC = audioSSRC
            self.credentials = credentials
            self.fingerprint = fingerprint
            self.candidates = candidates
            self.videoSSRC = videoSSRC
            self.cname = cname
            self.stream = stream
        }
    }

    /// Why an offer gets no answer (a 400 or 406 with this line).
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case noVideo
        case notReceiving
        /// What was offered: each format's encoding, and an H.264's profile and mode.
        case noH264(stream: String, offered: [String])
        case noICE
        case noFingerprint
        case noRTCPMux

        public var description: String {
            switch self {
            case .noVideo: return "the offer has no video section"
            case .notReceiving: return "the offer's video does not receive (recvonly or sendrecv)"
            case .noH264(let stream, let offered):
                return "the offer has no H.264 with packetization-mode=1 for the stream's \(stream) (offered: \(offered.prefix(12).joined(separator: ", ")))"
            case .noICE: return "the offer has no valid ice-ufrag and ice-pwd"
            case .noFingerprint: return "the offer has no DTLS fingerprint"
            case .noRTCPMux: return "the offer does not multiplex RTCP (rtcp-mux, RFC 8829 §5.1.1)"
            }
        }
    }

    static let playoutDelay = "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay"
    static let absCaptureTime = "http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time"

    public init(offer: SessionDescription, local: Local) throws {
        guard let videoIndex = offer.media.firstIndex(where: { $0.kind == "video" && $0.port != 0 }) else { throw Refusal.noVideo }
        let offered = offer.media[videoIndex]
        guard ["recvonly", "sendrecv"].contains(offered.direction) else { throw Refusal.notReceiving }
        let (payloadType, pt, stretched) = try Self.videoPayloadType(offered, stream: local.stream)
        profileStretched = stretched
        guard let ufrag = offer.value("ice-ufrag", in: offered), let password = offer.value("ice-pwd", in: offered),
              let remote = ICECredentials(offeredUfrag: ufrag, password: password) else { throw Refusal.noICE }
        guard let fingerprint = offer.value("fingerprint", in: offered) else { throw Refusal.noFingerprint }
        guard offered.has("rtcp-mux") else { throw Refusal.noRTCPMux }
        let mid = offered.value("mid") ?? "0"
        video = Video(mid: mid, payloadType: pt, playoutDelayID: offered.extensionID(Self.playoutDelay).flatMap(UInt8.init(exactly:)),
                      absCaptureTimeID: offered.extensionID(Self.absCaptureTime).flatMap(UInt8.init(exactly:)),
                      nack: offered.values("rtcp-fb").contains("\(payloadType) nack"))
        self.remote = remote
        remoteFingerprint = fingerprint
        // Sound only in the same BUNDLE as the picture: one ICE and DTLS session carries both.
        let bundle = offer.value("group").map { $0.split(separator: " ").map(String.init) } ?? []
        let audioIndex = local.audioSSRC == nil ? nil : offer.media.indices.first { index in
            let media = offer.media[index]
            return media.kind == "audio" && media.port != 0 && ["recvonly", "sendrecv"].contains(media.direction)
                && Self.opus(media) != nil && bundle.contains(media.value("mid") ?? "-") && bundle.contains(mid)
        }
        audio = audioIndex.flatMap { index in
            Self.opus(offer.media[index]).map { Audio(mid: offer.media[index].value("mid") ?? "1", payloadType: $0) }
        }

        var sections: [SessionDescription.Media] = []
        for (index, media) in offer.media.enumerated() {
            if index == videoIndex {
                sections.append(Self.videoSection(offered, video: video, payloadType: payloadType, local: local))
            } else if index == audioIndex, let audio, let ssrc = local.audioSSRC {
                sections.append(Self.audioSection(media, audio: audio, ssrc: ssrc, local: local))
            } else {
                // Not sent: rejected, its formats repeated as RFC 3264 §6 asks.
                var rejected = SessionDescription.Media(kind: media.kind, port: 0, proto: media.proto, formats: media.formats)
                if let mid = media.value("mid") { rejected.attributes.append(.init("mid", mid)) }
                sections.append(rejected)
            }
        }
        var session: [SessionDescription.Attribute] = [.init("ice-lite")]
        if !bundle.isEmpty && bundle[0] == "BUNDLE" {
            session.insert(.init("group", (["BUNDLE", mid] + (audio.map { [$0.mid] } ?? [])).joined(separator: " ")), at: 0)
        }
        var generator = SystemRandomNumberGenerator()
        sdp = SessionDescription(sessionLines: [("v", "0"), ("o", "- \(generator.next() >> 2) 2 IN IP4 0.0.0.0"), ("s", "-"),
                                                ("c", "IN IP4 0.0.0.0"), ("t", "0 0")],
                                 attributes: session, media: sections)
    }

    /// The payload type the picture goes under: one whose profile decodes the stream;
    /// failing that, one of Constrained Baseline or Main (`stretched`). Many receivers
    /// offer only Constrained Baseline (aiortc's 42e01f, GStreamer's webrtcbin with x264
    /// caps, embedded players) while the decoder behind the offer — libavcodec, a hardware
    /// decoder of a phone or TV — plays High. The board has one encoder and makes High; a
    /// Constrained Baseline rung for such a viewer would cost a second encode of every
    /// frame. So the High stream is sent under the payload type offered, and the answer
    /// names that profile (RFC 6184 §8.2.2: an answer's profile-level-id is the offer's).
    /// The trade-off: a receiver whose decoder is truly Baseline-only (rare: some old
    /// hardware) gets pictures it cannot decode, where a refusal would have told it at
    /// once; the log says which sessions were sent a profile above the one offered.
    static func videoPayloadType(_ offered: SessionDescription.Media, stream: H264Offer.Profile) throws
        -> (text: String, value: UInt8, stretched: Bool) {
        let strict = H264Offer.choose(offered, stream: stream)
        guard let payloadType = strict ?? H264Offer.choose(offered, stream: stream, stretching: true), let value = UInt8(payloadType) else {
            throw Refusal.noH264(stream: stream.hex, offered: Self.encodings(offered))
        }
        return (payloadType, value, strict == nil)
    }

    /// The offer's distinct encodings, an H.264 with its profile-level-id and mode (what
    /// decides), for a refusal.
    static func encodings(_ offered: SessionDescription.Media) -> [String] {
        let payloadTypes = offered.payloadTypes
        var seen: [String] = []
        var known: Set<String> = []
        for format in offered.formats {
            guard let map = payloadTypes.rtpmap(format), map.encoding.lowercased() != "rtx" else { continue }
            let fmtp = payloadTypes.fmtp(format)
            let name = map.encoding.uppercased() == "H264"
                ? "H264 \(fmtp["profile-level-id"] ?? "42000a") mode \(fmtp["packetization-mode"] ?? "0")" : map.encoding
            if known.insert(name).inserted { seen.append(name) }
        }
        return seen
    }

    /// The offer's Opus payload type (RFC 7587 §7: `opus/48000/2` whatever is sent).
    static func opus(_ media: SessionDescription.Media) -> UInt8? {
        let payloadTypes = media.payloadTypes
        return media.formats.first { format in
            guard let map = payloadTypes.rtpmap(format) else { return false }
            return map.encoding.lowercased() == "opus" && map.clockRate == 48_000
        }.flatMap { UInt8($0) }
    }

    /// What every section the board sends carries: ICE-lite's credentials, the DTLS
    /// fingerprint as the passive side (RFC 5763 §5), RTCP multiplexed.
    private static func transport(_ offered: SessionDescription.Media, mid: String, local: Local) -> [SessionDescription.Attribute] {
        var attributes: [SessionDescription.Attribute] = [
            .init("mid", mid), .init("sendonly"),
            .init("ice-ufrag", local.credentials.ufrag), .init("ice-pwd", local.credentials.password),
            .init("fingerprint", local.fingerprint), .init("setup", "passive"), .init("rtcp-mux")]
        if offered.has("rtcp-rsize") { attributes.append(.init("rtcp-rsize")) }
        return attributes
    }

    private static func videoSection(_ offered: SessionDescription.Media, video: Video, payloadType: String, local: Local) -> SessionDescription.Media {
        // RFC 6184 §8.2.2: the answer names the profile offered (one whose decoders decode
        // the stream, H264Offer.choose); with level-asymmetry-allowed, the level is the
        // stream's own.
        let chosen = offered.fmtp(payloadType)["profile-level-id"].flatMap(H264Offer.Profile.init(hex:))
            ?? H264Offer.Profile(profileIDC: 66, constraints: 0, levelIDC: 10)
        let answered = H264Offer.Profile(profileIDC: chosen.profileIDC, constraints: chosen.constraints, levelIDC: local.stream.levelIDC)
        var attributes = transport(offered, mid: video.mid, local: local) + [
            .init("rtpmap", "\(payloadType) H264/90000"),
            .init("fmtp", "\(payloadType) level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=\(answered.hex)")]
        if video.nack { attributes += [.init("rtcp-fb", "\(payloadType) nack"), .init("rtcp-fb", "\(payloadType) nack pli")] }
        if let id = video.playoutDelayID { attributes.append(.init("extmap", "\(id) \(Self.playoutDelay)")) }
        if let id = video.absCaptureTimeID { attributes.append(.init("extmap", "\(id) \(Self.absCaptureTime)")) }
        attributes += [.init("msid", "onair video"), .init("ssrc", "\(local.videoSSRC) cname:\(local.cname)")]
        // RFC 8445 §5.1.2.1: type preference 126 (host), local preference by order, component 1.
        for (n, candidate) in local.candidates.prefix(16).enumerated() {
            let priority = (126 << 24) | ((65_535 - n) << 8) | 255
            attributes.append(.init("candidate", "\(n + 1) 1 udp \(priority) \(candidate.host) \(candidate.port) typ host"))
        }
        attributes.append(.init("end-of-candidates"))
        return SessionDescription.Media(kind: "video", port: local.candidates.first.map { Int($0.port) } ?? 9, proto: offered.proto,
                                        formats: [payloadType], attributes: attributes)
    }

    private static func audioSection(_ offered: SessionDescription.Media, audio: Audio, ssrc: UInt32, local: Local) -> SessionDescription.Media {
        let attributes = transport(offered, mid: audio.mid, local: local) + [
            .init("rtpmap", "\(audio.payloadType) opus/48000/2"),
            // RFC 7587 §7: in-band FEC is sent; 20 ms frames.
            .init("fmtp", "\(audio.payloadType) minptime=10;useinbandfec=1"),
            .init("msid", "onair audio"), .init("ssrc", "\(ssrc) cname:\(local.cname)")]
        return SessionDescription.Media(kind: "audio", port: local.candidates.first.map { Int($0.port) } ?? 9, proto: offered.proto,
                                        formats: [String(audio.payloadType)], attributes: attributes)
    }
}
