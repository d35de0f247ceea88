import Foundation
import SDP
import WebRTC
import XCTest

/// The WHEP answer through a real browser's eyes: Chromium makes a receive-only offer, as
/// a WHEP player does, and takes onair's answer to it (its own SDP validation, RFC 8829's
/// rules as Chromium applies them): the session becomes stable with video received in
/// H.264, and the sound onair does not send yet rejected.
final class WHEPAnswerTests: XCTestCase {
    func testChromiumTakesTheAnswerToItsOwnOffer() throws {
        let browser = try Chromium()
        let page = try temporaryDirectory("whep") + "/offer.html"
        try """
            <!doctype html><script>
            window.pc = new RTCPeerConnection();
            pc.addTransceiver('video', {direction: 'recvonly'});
            pc.addTransceiver('audio', {direction: 'recvonly'});
            window.step = null;
            pc.createOffer().then(o => pc.setLocalDescription(o)).then(() => { window.step = pc.localDescription.sdp; },
                                                                         e => { window.step = 'error ' + e; });
            </script>
            """.write(toFile: page, atomically: true, encoding: .utf8)
        try browser.open("file://" + page)
        let offerText = try browser.settled("window.step")
        let offer = try SessionDescription(parsing: offerText)
        let local = WHEPAnswer.Local(credentials: .random(),
                                     fingerprint: "sha-256 " + (0..<32).map { String(format: "%02X", $0 * 7 % 256) }.joined(separator: ":"),
                                     candidates: [PeerAddress(address: [127, 0, 0, 1], port: 8189)], videoSSRC: 0x1234_5678, cname: "onair",
                                     stream: H264Offer.Profile(profileIDC: 0x42, constraints: 0xC0, levelIDC: 0x1F))
        let answer = try WHEPAnswer(offer: offer, local: local)
        XCTAssertTrue(answer.video.nack, "Chromium offers NACK for H.264")
        XCTAssertNotNil(answer.video.playoutDelayID, "and the playout-delay extension")
        let text = answer.sdp.text
        let json = String(decoding: try JSONSerialization.data(withJSONObject: [text]), as: UTF8.self)
        let started = try browser.evaluate("""
            try {
              window.step = null;
            pc.setRemoteDescription({type: 'answer', sdp: \(json)[0]}).then(() => {
                const live = pc.getTransceivers();
                const video = live.find(t => t.receiver.track.kind == 'video');
                window.step = [pc.signalingState, video.currentDirection, live.length].join(' | ');
            }).catch(e => { window.step = 'error ' + e.message; });
            'started'
            } catch (e) { 'thrown ' + e }
            """)
        XCTAssertEqual(started as? String, "started")
        let result = try browser.settled("window.step")
        XCTAssertEqual(result, "stable | recvonly | 1", "negotiated; the rejected audio transceiver is stopped and gone\n\(text)")
        // The type chosen is one Chromium offered as H.264 in packetization-mode 1.
        let offered = offer.media[0]
        XCTAssertEqual(offered.rtpmap(String(answer.video.payloadType))?.encoding, "H264")
        XCTAssertEqual(offered.fmtp(String(answer.video.payloadType))["packetization-mode"], "1")
    }

}
