import SDP
import XCTest

final class SDPTests: XCTestCase {
    /// A WHEP offer as Chromium makes it (recvonly video and audio, BUNDLE, its H.264
    /// family: Constrained Baseline and Baseline in modes 1 and 0, Main, Constrained High).
    static let chromiumOffer = """
        v=0\r
        o=- 4611731400430051336 2 IN IP4 127.0.0.1\r
        s=-\r
        t=0 0\r
        a=group:BUNDLE 0 1\r
        a=extmap-allow-mixed\r
        a=msid-semantic: WMS\r
        m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 104 105 106 107 108 109 127 125 39 40\r
        c=IN IP4 0.0.0.0\r
        a=rtcp:9 IN IP4 0.0.0.0\r
        a=ice-ufrag:Z7bS\r
        a=ice-pwd:a9Qm2GKlxbN4t6nS0N2bqUaX\r
        a=ice-options:trickle\r
        a=fingerprint:sha-256 3C:5B:96:0E:0E:71:C8:71:C8:15:D5:A1:9F:2C:0B:73:A8:5E:65:2B:5E:27:0F:14:C2:8E:DC:B2:52:2D:7D:A1\r
        a=setup:actpass\r
        a=mid:0\r
        a=extmap:1 urn:ietf:params:rtp-hdrext:toffset\r
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r
        a=extmap:6 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay\r
        a=extmap:13 http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time\r
        a=recvonly\r
        a=rtcp-mux\r
        a=rtcp-rsize\r
        a=rtpmap:96 VP8/90000\r
        a=rtcp-fb:96 nack\r
        a=rtpmap:97 rtx/90000\r
        a=fmtp:97 apt=96\r
        a=rtpmap:102 H264/90000\r
        a=rtcp-fb:102 nack\r
        a=rtcp-fb:102 nack pli\r
        a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f\r
        a=rtpmap:103 rtx/90000\r
        a=fmtp:103 apt=102\r
        a=rtpmap:104 H264/90000\r
        a=fmtp:104 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42001f\r
        a=rtpmap:105 rtx/90000\r
        a=fmtp:105 apt=104\r
        a=rtpmap:106 H264/90000\r
        a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r
        a=rtpmap:107 rtx/90000\r
        a=fmtp:107 apt=106\r
        a=rtpmap:108 H264/90000\r
        a=fmtp:108 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f\r
        a=rtpmap:109 rtx/90000\r
        a=fmtp:109 apt=108\r
        a=rtpmap:127 H264/90000\r
        a=fmtp:127 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f\r
        a=rtpmap:125 rtx/90000\r
        a=fmtp:125 apt=127\r
        a=rtpmap:39 H264/90000\r
        a=fmtp:39 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=640c1f\r
        a=rtpmap:40 rtx/90000\r
        a=fmtp:40 apt=39\r
        m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8\r
        c=IN IP4 0.0.0.0\r
        a=ice-ufrag:Z7bS\r
        a=ice-pwd:a9Qm2GKlxbN4t6nS0N2bqUaX\r
        a=mid:1\r
        a=recvonly\r
        a=rtcp-mux\r
        a=rtpmap:111 opus/48000/2\r
        a=fmtp:111 minptime=10;useinbandfec=1\r
        a=rtpmap:0 PCMU/8000\r

        """

    func testAChromiumOfferIsRead() throws {
        let offer = try SessionDescription(parsing: Self.chromiumOffer)
        XCTAssertEqual(offer.value("group"), "BUNDLE 0 1")
        XCTAssertEqual(offer.media.map(\.kind), ["video", "audio"])
        let video = offer.media[0]
        XCTAssertEqual(video.proto, "UDP/TLS/RTP/SAVPF")
        XCTAssertEqual(video.direction, "recvonly")
        XCTAssertEqual(offer.value("ice-ufrag", in: video), "Z7bS")
        XCTAssertEqual(offer.value("fingerprint", in: video)?.hasPrefix("sha-256 3C:5B"), true)
        XCTAssertEqual(video.extensionID("http://www.webrtc.org/experiments/rtp-hdrext/playout-delay"), 6)
        XCTAssertNil(video.extensionID("urn:nothing"))
        XCTAssertEqual(video.rtpmap("102")?.encoding, "H264")
        XCTAssertEqual(video.fmtp("102")["profile-level-id"], "42001f")
        XCTAssertEqual(offer.media[1].rtpmap("111")?.channels, 2)
        XCTAssertTrue(video.has("rtcp-mux"))
    }

    func testTheH264PayloadTypeFollowsTheStreamsProfile() throws {
        let video = try SessionDescription(parsing: Self.chromiumOffer).media[0]
        let constrainedBaseline = try XCTUnwrap(H264Offer.Profile(hex: "42c01f"))
        XCTAssertEqual(H264Offer.choose(video, stream: constrainedBaseline), "102", "the first mode-1 type that decodes it")
        XCTAssertEqual(H264Offer.choose(video, stream: try XCTUnwrap(H264Offer.Profile(hex: "4d0028"))), "127")
        XCTAssertEqual(H264Offer.choose(video, stream: try XCTUnwrap(H264Offer.Profile(hex: "640028"))), "39", "level 4.0 over 3.1: asymmetry allowed")
        XCTAssertNil(H264Offer.choose(video, stream: try XCTUnwrap(H264Offer.Profile(hex: "7a0028"))), "High 4:2:2: nothing decodes it")
        // Without level asymmetry, the offer's level bounds the stream's.
        let strict = try SessionDescription(parsing: "v=0\r\nm=video 9 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1;profile-level-id=42e01f\r\n").media[0]
        XCTAssertEqual(H264Offer.choose(strict, stream: constrainedBaseline), "96")
        XCTAssertNil(H264Offer.choose(strict, stream: try XCTUnwrap(H264Offer.Profile(hex: "42e028"))))
        // No H.264 in mode 1 at all: nothing to send.
        let vp8 = try SessionDescription(parsing: "v=0\r\nm=video 9 RTP/AVP 96 97\r\na=rtpmap:96 VP8/90000\r\na=rtpmap:97 H264/90000\r\na=fmtp:97 packetization-mode=0\r\n").media[0]
        XCTAssertNil(H264Offer.choose(vp8, stream: constrainedBaseline))
        // aiortc's offer: Constrained Baseline only. Strictly nothing decodes a High stream;
        // stretched, the first mode-1 type, for a stream a software decoder plays.
        let aiortc = try SessionDescription(parsing: "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 97 98 99 100 101 102\r\n"
            + "a=rtpmap:97 VP8/90000\r\na=rtpmap:98 rtx/90000\r\na=fmtp:98 apt=97\r\na=rtpmap:99 H264/90000\r\n"
            + "a=fmtp:99 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f\r\na=rtpmap:100 rtx/90000\r\n"
            + "a=rtpmap:101 H264/90000\r\na=fmtp:101 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42001f\r\n"
            + "a=rtpmap:102 H264/90000\r\na=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n").media[0]
        let high = try XCTUnwrap(H264Offer.Profile(hex: "64001f"))
        XCTAssertNil(H264Offer.choose(aiortc, stream: high))
        XCTAssertEqual(H264Offer.choose(aiortc, stream: high, stretching: true), "99")
        XCTAssertNil(H264Offer.choose(aiortc, stream: try XCTUnwrap(H264Offer.Profile(hex: "7a001f")), stretching: true), "4:2:2 is not stretched")
        // Stretching takes the first mode-1 type whatever its profile: the answer asks for a
        // strict one first (WHEPAnswerUnitTests), so Chromium still gets its High type.
        XCTAssertEqual(H264Offer.choose(video, stream: high, stretching: true), "102")
        XCTAssertEqual(constrainedBaseline.hex, "42c01f")
        XCTAssertNil(H264Offer.Profile(hex: "42c01"))
        XCTAssertNil(H264Offer.Profile(hex: "zzzzzz"))
    }

    func testWrittenTextReadsBackTheSame() throws {
        let offer = try SessionDescription(parsing: Self.chromiumOffer)
        XCTAssertTrue(offer.text.hasPrefix("v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\n"))
        XCTAssertEqual(try SessionDescription(parsing: offer.text), offer)
        XCTAssertEqual(try SessionDescription(parsing: Self.chromiumOffer.replacingOccurrences(of: "\r\n", with: "\n")), offer, "LF alone is read too")
    }

    func testHostileTextIsRefusedInOneLine() {
        func refused(_ text: String, _ expected: SessionDescription.ParseError, line: UInt = #line) {
            XCTAssertThrowsError(try SessionDescription(parsing: text), line: line) {
                XCTAssertEqual($0 as? SessionDescription.ParseError, expected, line: line)
                XCTAssertFalse("\($0)".contains("\n"), line: line)
            }
        }
        refused(String(repeating: "a=x\r\n", count: 20_000), .tooLarge(100_000))
        refused(String(repeating: "a=\r\n", count: 2001), .tooManyLines)
        refused("v=0\r\nhello\r\n", .notSDP(line: 2))
        refused("v=0\r\nm=video\r\n", .badMedia(line: 2))
        refused("v=0\r\nm=video 99999 RTP/AVP 96\r\n", .badMedia(line: 2))
        refused("v=0\r\n" + String(repeating: "m=video 9 RTP/AVP 96\r\n", count: 17), .tooManyMedia)
        // RTP has 128 payload types: an m= line of more formats is no honest offer (issue 44's
        // 64 KB offer had 16,300).
        refused("v=0\r\nm=video 9 RTP/AVP " + Array(repeating: "1", count: 129).joined(separator: " ") + "\r\n", .tooManyFormats(line: 2))
        XCTAssertNoThrow(try SessionDescription(parsing: "v=0\r\nm=video 9 RTP/AVP " + (0..<128).map(String.init).joined(separator: " ") + "\r\n"))
        // Odd but harmless values are kept, not trusted: a bad rtpmap is simply no codec.
        let odd = try? SessionDescription(parsing: "v=0\r\nm=video 9 RTP/AVP 96\r\na=rtpmap:96 H264/abc\r\na=fmtp:96 ;;=;x\r\n")
        XCTAssertNil(odd?.media[0].rtpmap("96"))
        XCTAssertEqual(odd?.media[0].fmtp("96"), ["x": ""])
    }

    /// The payload types' index says what asking each format one at a time says: the
    /// first rtpmap and fmtp of each payload type, nothing for a format without one.
    func testThePayloadTypeIndexAnswersAsTheAttributesDo() throws {
        let offer = try SessionDescription(parsing: "v=0\r\nm=video 9 RTP/AVP 96 97 98 99\r\na=rtpmap:96 H264/90000\r\n"
            + "a=fmtp:96 packetization-mode=1;profile-level-id=42e01f\r\na=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n"
            + "a=rtpmap:96 VP8/90000\r\na=fmtp:96 x=1\r\na=rtpmap:98 H264/abc\r\na=rtpmap:999 opus/48000/2\r\n")
        let media = offer.media[0]
        let index = media.payloadTypes
        for format in media.formats + ["999", "1"] {
            XCTAssertEqual(index.rtpmap(format).map { "\($0.encoding)/\($0.clockRate)/\($0.channels ?? 0)" },
                           media.rtpmap(format).map { "\($0.encoding)/\($0.clockRate)/\($0.channels ?? 0)" }, format)
            XCTAssertEqual(index.fmtp(format), media.fmtp(format), format)
        }
        XCTAssertEqual(index.rtpmap("96")?.encoding, "H264", "the first rtpmap of a payload type counts")
        XCTAssertEqual(index.fmtp("96")["packetization-mode"], "1")
        XCTAssertNil(index.rtpmap("98"), "a malformed rtpmap is no codec")
        XCTAssertEqual(index.rtpmap("999")?.channels, 2)
    }
}
