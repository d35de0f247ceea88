import SDP
import WebRTC
import XCTest

final class WHEPAnswerUnitTests: XCTestCase {
    let local = WHEPAnswer.Local(credentials: ICECredentials(ufrag: "onairABC", password: "0123456789abcdefghijKLMN"),
                                 fingerprint: "sha-256 AB:CD", candidates: [PeerAddress(address: [192, 168, 1, 2], port: 8189),
                                                                            PeerAddress(address: [0xfd, 0] + Array(repeating: 0, count: 13) + [2], port: 8189)],
                                 videoSSRC: 42, cname: "onair", stream: H264Offer.Profile(profileIDC: 0x42, constraints: 0xC0, levelIDC: 0x1F))

    func offer(video: String = "a=recvonly\r\na=rtcp-mux\r\na=rtpmap:102 H264/90000\r\na=rtcp-fb:102 nack\r\na=fmtp:102 packetization-mode=1;profile-level-id=42e01f\r\n",
               session: String = "a=group:BUNDLE 0 1\r\na=ice-ufrag:Z7bS\r\na=ice-pwd:a9Qm2GKlxbN4t6nS0N2bqUaX\r\na=fingerprint:sha-256 3C:5B\r\n") -> SessionDescription {
        try! SessionDescription(parsing: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" + session
            + "m=video 9 UDP/TLS/RTP/SAVPF 96 102\r\na=mid:0\r\na=rtpmap:96 VP8/90000\r\n" + video
            + "a=extmap:6 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay\r\n"
            + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:1\r\na=rtpmap:111 opus/48000/2\r\n")
    }

    func testTheAnswerSendsH264FromAnICELitePassiveEndpoint() throws {
        let answer = try WHEPAnswer(offer: offer(), local: local)
        XCTAssertEqual(answer.video, .init(mid: "0", payloadType: 102, playoutDelayID: 6, absCaptureTimeID: nil, nack: true))
        XCTAssertEqual(answer.remote.ufrag, "Z7bS")
        XCTAssertEqual(answer.remoteFingerprint, "sha-256 3C:5B")
        let text = answer.sdp.text
        for line in ["a=group:BUNDLE 0", "a=ice-lite", "m=video 8189 UDP/TLS/RTP/SAVPF 102", "a=sendonly", "a=setup:passive",
                     "a=ice-ufrag:onairABC", "a=fingerprint:sha-256 AB:CD", "a=rtcp-fb:102 nack pli",
                     "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
                     "a=extmap:6 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay",
                     "a=candidate:1 1 udp 2130706431 192.168.1.2 8189 typ host", "a=candidate:2 1 udp 2130706175 fd00:0:0:0:0:0:0:2 8189 typ host",
                     "a=end-of-candidates", "m=audio 0 UDP/TLS/RTP/SAVPF 111"] {
            XCTAssertTrue(text.contains(line + "\r\n"), "\(line)\n\(text)")
        }
        XCTAssertEqual(try SessionDescription(parsing: text), answer.sdp)
    }

    /// A High-profile stream goes to a browser that offers no High but High 4:4:4
    /// Predictive (Debian's Chromium: `f4001f`), whose decoders decode High; the answer
    /// names the offered profile at the stream's level. Main alone would not do.
    func testAHighStreamIsAnsweredWithAProfileWhoseDecodersDecodeIt() throws {
        var high = local
        high.stream = H264Offer.Profile(profileIDC: 100, constraints: 0, levelIDC: 0x28)
        let video = "a=recvonly\r\na=rtcp-mux\r\na=rtpmap:102 H264/90000\r\na=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f\r\n"
            + "a=rtpmap:104 H264/90000\r\na=fmtp:104 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=f4001f\r\n"
        var offered = offer(video: video)
        offered.media[0].formats = ["96", "102", "104"]
        let answer = try WHEPAnswer(offer: offered, local: high)
        XCTAssertEqual(answer.video.payloadType, 104)
        XCTAssertTrue(answer.sdp.text.contains("a=fmtp:104 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=f40028\r\n"), answer.sdp.text)
        XCTAssertFalse(answer.profileStretched)
        // Only Main offered: the High stream goes under Main's payload type, answered as
        // Main (RFC 6184 §8.2.2), and the answer says it stretched the profile.
        offered.media[0].formats = ["96", "102"]
        let stretched = try WHEPAnswer(offer: offered, local: high)
        XCTAssertEqual(stretched.video.payloadType, 102)
        XCTAssertTrue(stretched.profileStretched)
        XCTAssertTrue(stretched.sdp.text.contains("a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d0028\r\n"), stretched.sdp.text)
        // A stream no software decoder is sure to play (High 4:2:2) is not stretched.
        var fourTwoTwo = local
        fourTwoTwo.stream = H264Offer.Profile(profileIDC: 122, constraints: 0, levelIDC: 0x28)
        XCTAssertThrowsError(try WHEPAnswer(offer: offered, local: fourTwoTwo))
    }

    /// Sound goes as Opus in the picture's BUNDLE when the board has a microphone; without
    /// one, or outside the BUNDLE, its section is rejected.
    func testSoundIsAnsweredInOpusWithinTheBundle() throws {
        var board = local
        board.audioSSRC = 77
        var offered = offer()
        offered.media[1].attributes += [.init("recvonly"), .init("rtcp-mux")]
        let answer = try WHEPAnswer(offer: offered, local: board)
        XCTAssertEqual(answer.audio, .init(mid: "1", payloadType: 111))
        let text = answer.sdp.text
        for line in ["a=group:BUNDLE 0 1", "m=audio 8189 UDP/TLS/RTP/SAVPF 111", "a=rtpmap:111 opus/48000/2",
                     "a=fmtp:111 minptime=10;useinbandfec=1", "a=ssrc:77 cname:onair", "a=msid:onair audio"] {
            XCTAssertTrue(text.contains(line + "\r\n"), "\(line)\n\(text)")
        }
        XCTAssertNil(try WHEPAnswer(offer: offered, local: local).audio, "no microphone")
        offered.attributes = offered.attributes.filter { $0.name != "group" } + [.init("group", "BUNDLE 0")]
        XCTAssertNil(try WHEPAnswer(offer: offered, local: board).audio, "not in the BUNDLE")
    }

    func testOffersWithoutWhatWebRTCNeedsAreRefusedInOneLine() {
        func refused(_ offer: SessionDescription, _ expected: WHEPAnswer.Refusal, line: UInt = #line) {
            XCTAssertThrowsError(try WHEPAnswer(offer: offer, local: local), line: line) {
                XCTAssertEqual($0 as? WHEPAnswer.Refusal, expected, line: line)
                XCTAssertFalse("\($0)".contains("\n"), line: line)
            }
        }
        refused(try! SessionDescription(parsing: "v=0\r\nm=audio 9 RTP/AVP 0\r\n"), .noVideo)
        refused(offer(video: "a=sendonly\r\na=rtcp-mux\r\na=rtpmap:102 H264/90000\r\na=fmtp:102 packetization-mode=1;profile-level-id=42e01f\r\n"), .notReceiving)
        refused(offer(video: "a=recvonly\r\na=rtcp-mux\r\na=rtpmap:102 H264/90000\r\na=fmtp:102 packetization-mode=0\r\n"), .noH264(stream: "42c01f", offered: ["VP8", "H264 42000a mode 0"]))
        refused(offer(session: "a=ice-ufrag:Z7bS\r\na=ice-pwd:short\r\na=fingerprint:sha-256 3C:5B\r\n"), .noICE)
        refused(offer(session: "a=ice-ufrag:Z7bS\r\na=ice-pwd:a9Qm2GKlxbN4t6nS0N2bqUaX\r\n"), .noFingerprint)
        refused(offer(video: "a=recvonly\r\na=rtpmap:102 H264/90000\r\na=fmtp:102 packetization-mode=1;profile-level-id=42e01f\r\n"), .noRTCPMux)
    }
}
