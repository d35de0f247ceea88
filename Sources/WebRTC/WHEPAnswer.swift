import SDP

/// The SDP answer to a WHEP offer (draft-ietf-wish-whep §4.2, RFC 8829 §5.3): the board
/// sends, the browser receives. Video is the live stream's H.264 in the payload type the
/// offer prefers among those that decode it; sound is answered only when the board has
/// Opus to send, otherwise its section is rejected (port 0, RFC 3264 §6). ICE-lite with
/// every host candidate at once (no trickle), DTLS as the passive side (RFC 5763 §5).
public struct WHEPAnswer: Sendable {
    public var sdp: SessionDescription
    /// What the video sender needs from the negotiation.
    public var video: Video
    /// The offer's ICE credentials.
    public var remote: ICECredentials
    /// The offer's DTLS fingerprint (`sha-256 AB:CD:…`), checked against the browser's
    /// certificate at the handshake.
    public var remoteFingerprint: String

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

    public struct Local: Sendable {
        public var credentials: ICECredentials
        /// `sha-256 AB:CD:…` of the board's DTLS certificate.
        public var fingerprint: String
        /// Host candidates: the board's addresses with the one WebRTC port.
        public var candidates: [PeerAddress]
        public var videoSSRC: UInt32
        public var cname: String
        public var stream: H264Offer.Profile

        public init(credentials: ICECredentials, fingerprint: String, candidates: [PeerAddress], videoSSRC: UInt32, cname: String,
                    stream: H264Offer.Profile) {
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
                return "the offer has no H.264 with packetization-mode=1 that decodes the stream's \(stream) (offered: \(offered.prefix(12).joined(separator: ", ")))"
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
        guard let payloadType = H264Offer.choose(offered, stream: local.stream), let pt = UInt8(payloadType) else {
            // Distinct encodings, an H.264 with its profile-level-id and mode (what decides).
            var seen: [String] = []
            for format in offered.formats {
                guard let map = offered.rtpmap(format), map.encoding.lowercased() != "rtx" else { continue }
                let fmtp = offered.fmtp(format)
                let name = map.encoding.uppercased() == "H264"
                    ? "H264 \(fmtp["profile-level-id"] ?? "42000a") mode \(fmtp["packetization-mode"] ?? "0")" : map.encoding
                if !seen.contains(name) { seen.append(name) }
            }
            throw Refusal.noH264(stream: local.stream.hex, offered: seen)
        }
        guard let ufrag = offer.value("ice-ufrag", in: offered), let password = offer.value("ice-pwd", in: offered),
              let remote = ICECredentials(offeredUfrag: ufrag, password: password) else { throw Refusal.noICE }
        guard let fingerprint = offer.value("fingerprint", in: offered) else { throw Refusal.noFingerprint }
        guard offered.has("rtcp-mux") else { throw Refusal.noRTCPMux }
        // RFC 6184 §8.2.2: the answer names the profile offered (one whose decoders decode
        // the stream, H264Offer.choose); with level-asymmetry-allowed, the level is the
        // stream's own.
        let chosen = offered.fmtp(payloadType)["profile-level-id"].flatMap(H264Offer.Profile.init(hex:))
            ?? H264Offer.Profile(profileIDC: 66, constraints: 0, levelIDC: 10)
        let answered = H264Offer.Profile(profileIDC: chosen.profileIDC, constraints: chosen.constraints, levelIDC: local.stream.levelIDC)
        let mid = offered.value("mid") ?? "0"
        let nack = offered.values("rtcp-fb").contains("\(payloadType) nack")
        let playout = offered.extensionID(Self.playoutDelay).flatMap(UInt8.init(exactly:))
        let capture = offered.extensionID(Self.absCaptureTime).flatMap(UInt8.init(exactly:))
        video = Video(mid: mid, payloadType: pt, playoutDelayID: playout, absCaptureTimeID: capture, nack: nack)
        self.remote = remote
        remoteFingerprint = fingerprint

        var sections: [SessionDescription.Media] = []
        for (index, media) in offer.media.enumerated() {
            guard index == videoIndex else {
                // Not sent (yet): rejected, its formats repeated as RFC 3264 §6 asks.
                var rejected = SessionDescription.Media(kind: media.kind, port: 0, proto: media.proto, formats: media.formats)
                if let mid = media.value("mid") { rejected.attributes.append(.init("mid", mid)) }
                sections.append(rejected)
                continue
            }
            var attributes: [SessionDescription.Attribute] = [
                .init("mid", mid), .init("sendonly"),
                .init("ice-ufrag", local.credentials.ufrag), .init("ice-pwd", local.credentials.password),
                .init("fingerprint", local.fingerprint), .init("setup", "passive"), .init("rtcp-mux")]
            if offered.has("rtcp-rsize") { attributes.append(.init("rtcp-rsize")) }
            attributes += [
                .init("rtpmap", "\(payloadType) H264/90000"),
                .init("fmtp", "\(payloadType) level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=\(answered.hex)")]
            if nack { attributes += [.init("rtcp-fb", "\(payloadType) nack"), .init("rtcp-fb", "\(payloadType) nack pli")] }
            if let playout { attributes.append(.init("extmap", "\(playout) \(Self.playoutDelay)")) }
            if let capture { attributes.append(.init("extmap", "\(capture) \(Self.absCaptureTime)")) }
            attributes += [.init("msid", "onair video"), .init("ssrc", "\(local.videoSSRC) cname:\(local.cname)")]
            // RFC 8445 §5.1.2.1: type preference 126 (host), local preference by order, component 1.
            for (n, candidate) in local.candidates.prefix(16).enumerated() {
                let priority = (126 << 24) | ((65_535 - n) << 8) | 255
                attributes.append(.init("candidate", "\(n + 1) 1 udp \(priority) \(candidate.host) \(candidate.port) typ host"))
            }
            attributes.append(.init("end-of-candidates"))
            var answer = SessionDescription.Media(kind: "video", port: local.candidates.first.map { Int($0.port) } ?? 9,
                                                  proto: offered.proto, formats: [payloadType])
            answer.attributes = attributes
            sections.append(answer)
        }
        var session: [SessionDescription.Attribute] = [.init("ice-lite")]
        if offer.value("group")?.hasPrefix("BUNDLE") == true { session.insert(.init("group", "BUNDLE \(mid)"), at: 0) }
        var generator = SystemRandomNumberGenerator()
        sdp = SessionDescription(sessionLines: [("v", "0"), ("o", "- \(generator.next() >> 2) 2 IN IP4 0.0.0.0"), ("s", "-"),
                                                ("c", "IN IP4 0.0.0.0"), ("t", "0 0")],
                                 attributes: session, media: sections)
    }
}
