import Access
import RTP
import RTSP
import SDP
import STUN
import WebRTC

/// The readers of the real-time outputs' datagrams (issue 31): anyone on the network can
/// send them to the board's UDP port.
extension FuzzTargets {
    /// RTP packets (RFC 3550, RFC 8285 extensions) and their H.264 (RFC 6184) and AAC
    /// (RFC 3640) payloads: a packet that parses writes back to one that parses the same.
    static let rtp: FuzzTarget = {
        var stream = RTPStream(ssrc: 0x1234_5678, payloadType: 96, clockRate: 90_000, firstSequence: 65_534, timestampOffset: 7)
        let idr: [UInt8] = [0x65] + (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let units: [[UInt8]] = [[0x67, 0x42, 0xC0, 0x1F], [0x68, 0xCE, 0x3C, 0x80], idr, [0x41, 1, 2, 3]]
        let payloads = H264Packetizer().payloads(units.map { $0[...] })
        let packets = stream.packets(payloads, timestamp: 3000, extensions: [.init(id: 1, data: [0, 0, 0]), .init(id: 15, data: [1, 2])])
        let sound = stream.packets(AACPacketizer().payloads([0x21, 0x10, 0x05, 0x40]), timestamp: 1024)
        return FuzzTarget(name: "rtp", seeds: (packets + sound).map { $0.serialized() }, textual: false) { bytes in
            guard let packet = try? RTPPacket(parsing: bytes) else { return }
            guard (try? RTPPacket(parsing: packet.serialized())) == packet else { broken("an RTP packet that does not write back as it read") }
            var depacketizer = H264Depacketizer()
            _ = depacketizer.push(packet)
            if let units = AACPacketizer.accessUnits(packet.payload), units.reduce(0, { $0 + $1.count }) > packet.payload.count {
                broken("RFC 3640 access units longer than their payload")
            }
        }
    }()

    /// STUN Binding requests and responses (RFC 8489) as ICE-lite reads them: the
    /// integrity and fingerprint checks, and a message written back reads the same.
    static let stun: FuzzTarget = {
        let id: [UInt8] = Array(1...12)
        let key = Array("fuzz-password-0123456789".utf8)
        let request = STUNMessage(messageClass: .request, transactionID: id, attributes: [
            .init(STUNMessage.AttributeType.username, Array("abcd:efgh".utf8)), .init(STUNMessage.AttributeType.priority, [0x6E, 0, 1, 0xFF]),
            .init(STUNMessage.AttributeType.iceControlling, Array(repeating: 7, count: 8)), .init(STUNMessage.AttributeType.useCandidate, [])])
        let response = STUNMessage(messageClass: .success, transactionID: id,
                                   attributes: [STUNMessage.xorMappedAddress(address: [192, 0, 2, 1], port: 32853, transactionID: id)])
        let seeds = [request.serialized(integrityKey: key, fingerprint: true), response.serialized(integrityKey: key, fingerprint: true),
                     request.serialized()]
        return FuzzTarget(name: "stun", seeds: seeds, textual: false) { bytes in
            guard let received = try? STUNMessage.parse(bytes) else { return }
            _ = received.integrityMatches(key: key)
            _ = received.fingerprintMatches()
            _ = received.message.mappedAddress
            _ = (received.message.username, received.message.priority)
            guard (try? STUNMessage.parse(received.message.serialized()))?.message == received.message else {
                broken("a STUN message that does not write back as it read")
            }
        }
    }()

    /// Session descriptions (RFC 8866) as a WHEP offer brings them: read, written back the
    /// same, asked for an H.264 payload type, and answered (the answer reads back as written).
    static let sdp = FuzzTarget(name: "sdp", seeds: [
        Array("v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 102 39\r\nc=IN IP4 0.0.0.0\r\na=ice-ufrag:Z7bS\r\na=ice-pwd:a9Qm2GKlxbN4t6nS0N2bqUaX\r\na=fingerprint:sha-256 3C:5B:96\r\na=setup:actpass\r\na=mid:0\r\na=extmap:6 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay\r\na=recvonly\r\na=rtcp-mux\r\na=rtpmap:102 H264/90000\r\na=rtcp-fb:102 nack pli\r\na=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\na=rtpmap:39 H264/90000\r\na=fmtp:39 packetization-mode=1;profile-level-id=640c1f\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n".utf8)
    ], textual: true) { bytes in
        guard let offer = try? SessionDescription(parsing: String(decoding: bytes, as: UTF8.self)) else { return }
        guard (try? SessionDescription(parsing: offer.text)) == offer else { broken("an SDP that does not write back as it read") }
        for media in offer.media {
            _ = H264Offer.choose(media, stream: H264Offer.Profile(profileIDC: 66, constraints: 0xC0, levelIDC: 31))
            _ = media.extensionID("http://www.webrtc.org/experiments/rtp-hdrext/playout-delay")
            _ = media.formats.map { (media.rtpmap($0), media.fmtp($0)) }
        }
        if let answer = try? WHEPAnswer(offer: offer, local: whepLocal) {
            guard (try? SessionDescription(parsing: answer.sdp.text)) == answer.sdp else { broken("a WHEP answer that does not read back as written") }
        }
    }

    static let whepLocal = WHEPAnswer.Local(credentials: ICECredentials(ufrag: "fuzzUFRG", password: "0123456789abcdefghijKLMN"),
                                            fingerprint: "sha-256 AB:CD", candidates: [PeerAddress(address: [192, 0, 2, 1], port: 8189)],
                                            videoSSRC: 1, cname: "fuzz", stream: H264Offer.Profile(profileIDC: 100, constraints: 0, levelIDC: 31),
                                            audioSSRC: 2)

    /// RTCP compounds (RFC 3550 §6, RFC 4585 §6) as viewers send them: reports, NACKs,
    /// picture loss. A NACK never names more than the packet can.
    static let rtcp: FuzzTarget = {
        let report = RTCPPacket.SenderReport(ssrc: 1, ntpTime: RTCPPacket.ntpTime(unixMilliseconds: 1_000), rtpTime: 2, packetCount: 3, octetCount: 4,
                                             reports: [.init(ssrc: 5, fractionLost: 1, cumulativeLost: -1, highestSequence: 6, jitter: 7,
                                                             lastSenderReport: 8, delaySinceLastSenderReport: 9)])
        let feedback: [UInt8] = [0x81, 205, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 100, 0, 5, 0x81, 206, 0, 2, 0, 0, 0, 5, 0, 0, 0, 6,
                                 0x84, 206, 0, 4, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 6, 7, 0, 0, 0]
        return FuzzTarget(name: "rtcp", seeds: [RTCPPacket.senderReportPacket(report, cname: "fuzz"), feedback], textual: false) { bytes in
            guard let packets = try? RTCPPacket.parse(bytes) else { return }
            for case .nack(_, _, let lost) in packets where lost.count > 17 * bytes.count / 4 {
                broken("a NACK of \(lost.count) packets from \(bytes.count) bytes")
            }
        }
    }()

    /// A gate whose limit no run reaches, so each input meets the checks. (The seeds'
    /// credentials are wrong in every character: no one mutation makes them right.)
    static let fuzzGate = AccessGate(list: AccessList(realm: "onair-fuzz", devices: [("nvr", "0123456789abcdef")]), limiter: LoginLimiter(burst: 1 << 40), log: .silent())

    /// RTSP requests (RFC 2326) from a connection, split at every byte count the fuzzer
    /// picks: the same messages as the whole; every Transport header taken or refused;
    /// every URL read as an rtsp:// base, a path and a track of two digits at most.
    static let rtsp = FuzzTarget(name: "rtsp", seeds: [
        Array("OPTIONS rtsp://192.168.1.20:8554/live RTSP/1.0\r\nCSeq: 1\r\nUser-Agent: Lavf59.27.100\r\n\r\n".utf8),
        Array("SETUP rtsp://h/live/trackID=0 RTSP/1.0\r\nTransport: RTP/AVP;unicast;client_port=5000-5001,RTP/AVP/TCP;interleaved=0-1\r\nCSeq: 3\r\n\r\n$\u{1}\0\u{3}abc".utf8),
        Array("SET_PARAMETER rtsp://h/live RTSP/1.0\r\nCSeq: 4\r\nContent-Length: 5\r\n\r\nhello".utf8),
        Array("DESCRIBE rtsp://h/live RTSP/1.0\r\nCSeq: 2\r\nAuthorization: Digest username=\"nvr\", realm=\"onair-fuzz\", nonce=\"0000000000000001aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", uri=\"rtsp://h/live\", response=\"0123456789abcdef0123456789abcdef\"\r\n\r\n".utf8),
        Array("DESCRIBE rtsp://h/live RTSP/1.0\r\nCSeq: 2\r\nAuthorization: Basic bnZyOmZlZGNiYTk4NzY1NDMyMTA=\r\n\r\n".utf8),
    ], textual: true) { bytes in
        var whole = RTSPParser()
        guard let all = try? whole.feed(bytes) else { return }
        var pieces = RTSPParser()
        var split: [RTSPMessage] = []
        let step = max(1, bytes.count / 3)
        for start in stride(from: 0, to: bytes.count, by: step) {
            guard let some = try? pieces.feed(Array(bytes[start..<min(bytes.count, start + step)])) else { broken("RTSP split refused what whole was taken") }
            split += some
        }
        guard split == all else { broken("RTSP messages differ when the bytes come in pieces") }
        for case .request(let request) in all {
            _ = request.cseq
            // The Authorization header (RFC 7616's auth-params) as both channels read it:
            // anything but the right answer is refused, never let in.
            for channel in [AccessGate.Channel.rtsp, .http] {
                let decision = fuzzGate.check(request.header("Authorization"), method: request.method, uri: request.uri, client: "192.0.2.1", channel: channel)
                if case .allowed = decision { broken("an Authorization made of fuzz was let in") }
            }
            _ = try? RTSPTransport.choose(request.header("Transport"))
            if let target = RTSPTarget(request.uri) {
                guard target.base.lowercased().hasPrefix("rtsp://"), target.path.hasPrefix("/"), (0...99).contains(target.track ?? 0) else {
                    broken("RTSP URL \(request.uri.prefix(80)) read as \(target.base) \(target.path) \(target.track ?? -1)")
                }
            }
        }
    }
}
