import Basics
import Media
import RTSP
import XCTest

final class RTSPDescriptionTests: XCTestCase {
    /// RFC 4648 §10's test vectors.
    func testBase64IsRFC4648s() {
        for (text, expected) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")] {
            XCTAssertEqual(Base64.encode(Array(text.utf8)), expected, text)
        }
        XCTAssertEqual(Base64.encode([0xFF, 0xFE, 0xFD]), "//79")
    }

    /// What ffmpeg's own RTSP output describes for the same stream, line for line where it
    /// matters: the profile from the SPS, both parameter sets, AAC-hbr with its config.
    func testTheDescriptionCarriesWhatADecoderNeeds() throws {
        let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1F, 0xAC, 0xD9, 0x40, 0x50], pps: [UInt8] = [0x68, 0xEB, 0xE3, 0xCB]
        let audio = RTSPDescription.Audio(config: try AudioSpecificConfig.aacLC(sampleRate: 48_000, channels: 1))
        let sdp = RTSPDescription.sdp(sps: sps, pps: pps, audio: audio, sessionID: 42, host: "192.168.1.20")
        for line in ["v=0", "o=- 42 1 IN IP4 192.168.1.20", "m=video 0 RTP/AVP 96", "a=rtpmap:96 H264/90000",
                     "a=fmtp:96 packetization-mode=1;profile-level-id=64001f;sprop-parameter-sets=Z2QAH6zZQFA=,aOvjyw==",
                     "a=control:trackID=0", "m=audio 0 RTP/AVP 97", "a=rtpmap:97 mpeg4-generic/48000/1",
                     "a=fmtp:97 streamtype=5;profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3;config=1188",
                     "a=control:trackID=1"] {
            XCTAssertTrue(sdp.contains(line + "\r\n"), "\(line)\n\(sdp)")
        }
        XCTAssertFalse(RTSPDescription.sdp(sps: sps, pps: pps, audio: nil, sessionID: 1, host: "::1").contains("m=audio"))
        XCTAssertTrue(RTSPDescription.sdp(sps: sps, pps: pps, audio: nil, sessionID: 1, host: "::1").contains("c=IN IP6 ::1\r\n"))
    }
}
