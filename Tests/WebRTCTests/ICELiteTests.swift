import STUN
import WebRTC
import XCTest

final class ICELiteTests: XCTestCase {
    let local = ICECredentials(ufrag: "onairABC", password: "0123456789abcdefghijKLMN")
    let remote = ICECredentials(ufrag: "Z7bS", password: "a9Qm2GKlxbN4t6nS0N2bqUaX")
    let browser = PeerAddress(address: [192, 168, 1, 20], port: 50_123)
    let second: Int64 = 1_000_000_000

    /// A Binding request as a browser sends it: USERNAME `<ours>:<theirs>`, PRIORITY,
    /// ICE-CONTROLLING, maybe USE-CANDIDATE, integrity under our password, FINGERPRINT.
    func request(id: UInt8 = 1, username: String? = nil, key: String? = nil, nominate: Bool = false, fingerprint: Bool = true) -> [UInt8] {
        var attributes: [STUNMessage.Attribute] = [
            .init(STUNMessage.AttributeType.username, Array((username ?? "\(local.ufrag):\(remote.ufrag)").utf8)),
            .init(STUNMessage.AttributeType.priority, [0x6E, 0, 0x1E, 0xFF]),
            .init(STUNMessage.AttributeType.iceControlling, [1, 2, 3, 4, 5, 6, 7, 8])]
        if nominate { attributes.append(.init(STUNMessage.AttributeType.useCandidate, [])) }
        return STUNMessage(messageClass: .request, transactionID: Array(repeating: id, count: 12), attributes: attributes)
            .serialized(integrityKey: Array((key ?? local.password).utf8), fingerprint: fingerprint)
    }

    func testAnAuthenticatedCheckIsAnsweredWithTheAddressItCameFrom() throws {
        var session = ICELiteSession(local: local, remote: remote, started: 0)
        guard case .reply(let bytes) = session.answer(request(), from: browser, now: 5 * second) else { return XCTFail() }
        let response = try STUNMessage.parse(bytes)
        XCTAssertEqual(response.message.messageClass, .success)
        XCTAssertEqual(response.message.transactionID, Array(repeating: 1, count: 12))
        XCTAssertEqual(response.message.mappedAddress?.address, browser.address)
        XCTAssertEqual(response.message.mappedAddress?.port, browser.port)
        XCTAssertTrue(response.integrityMatches(key: Array(local.password.utf8)), "signed with our password (RFC 8445 §7.3.1.1)")
        XCTAssertTrue(response.fingerprintMatches())
        XCTAssertNil(session.selected, "not nominated yet")
        XCTAssertEqual(session.lastConsent, 5 * second)
        _ = session.answer(request(id: 2, nominate: true), from: browser, now: 6 * second)
        XCTAssertEqual(session.selected, browser)
        let parsed = try STUNMessage.parse(request(id: 3))
        XCTAssertEqual(ICELiteSession.localUfrag(of: parsed), "onairABC")
        guard case .reply = session.answer(parsed, from: browser, now: 7 * second) else { return XCTFail("the parsed message is answered alike") }
    }

    func testWrongCredentialsAndMissingAttributesAreRefused() throws {
        var session = ICELiteSession(local: local, remote: remote, started: 0)
        for (bytes, code) in [(request(key: "not-the-password-at-all"), 401), (request(username: "onairABC:other"), 401),
                              (request(fingerprint: false), 400)] {
            guard case .error(let response, code) = session.answer(bytes, from: browser, now: second) else { return XCTFail("\(code)") }
            let parsed = try STUNMessage.parse(response)
            XCTAssertEqual(parsed.message.messageClass, .error)
            XCTAssertFalse(parsed.hasIntegrity, "an error to an unproven sender is not signed")
            XCTAssertEqual(parsed.message.attribute(STUNMessage.AttributeType.errorCode)?.prefix(4), [0, 0, UInt8(code / 100), UInt8(code % 100)])
        }
        XCTAssertEqual(session.lastConsent, 0, "no refused check counts as consent")
        XCTAssertNil(session.selected)
        XCTAssertEqual(session.answer([0x16, 0xFE, 0xFD] + Array(repeating: 0, count: 30), from: browser, now: second), .ignore("not STUN"))
        let indication = STUNMessage(messageClass: .indication, transactionID: Array(repeating: 3, count: 12)).serialized(fingerprint: true)
        XCTAssertEqual(session.answer(indication, from: browser, now: second), .ignore("not a request"))
    }

    /// RFC 7675: consent lasts 30 s from the last authenticated check, on the clock given.
    func testConsentLapsesThirtySecondsAfterTheLastCheck() {
        var session = ICELiteSession(local: local, remote: remote, started: 0)
        XCTAssertFalse(session.consentExpired(now: 30 * second))
        XCTAssertTrue(session.consentExpired(now: 30 * second + 1), "no check at all")
        _ = session.answer(request(), from: browser, now: 25 * second)
        XCTAssertFalse(session.consentExpired(now: 55 * second))
        XCTAssertTrue(session.consentExpired(now: 55 * second + 1))
    }

    /// RFC 7675 §5.1: once a pair is selected, only checks from its address keep the media
    /// flowing; a second address that knows the password (the session's owner elsewhere)
    /// is answered but cannot keep media going to a receiver that stopped asking.
    func testConsentComesOnlyFromTheSelectedPair() {
        var session = ICELiteSession(local: local, remote: remote, started: 0)
        _ = session.answer(request(id: 1, nominate: true), from: browser, now: second)
        XCTAssertEqual(session.selected, browser)
        let elsewhere = PeerAddress(address: [127, 0, 0, 88], port: 40_000)
        for n in 1...10 {
            guard case .reply = session.answer(request(id: UInt8(n + 1)), from: elsewhere, now: Int64(n) * 10 * second) else {
                return XCTFail("a check from another address is still answered")
            }
        }
        XCTAssertEqual(session.selected, browser, "an unnominated check moves nothing")
        XCTAssertEqual(session.lastConsent, second, "consent was not refreshed from another address")
        XCTAssertTrue(session.consentExpired(now: 31 * second + 1))
        _ = session.answer(request(id: 20), from: browser, now: 40 * second)
        XCTAssertEqual(session.lastConsent, 40 * second, "the selected pair's own check refreshes it")
    }

    func testCredentialsAreRandomAndOffersAreChecked() {
        let a = ICECredentials.random(), b = ICECredentials.random()
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(a.ufrag.count, 8)
        XCTAssertEqual(a.password.count, 24)
        XCTAssertNotNil(ICECredentials(offeredUfrag: "Z7bS", password: "a9Qm2GKlxbN4t6nS0N2bqUaX"))
        XCTAssertNil(ICECredentials(offeredUfrag: "Z7b", password: "a9Qm2GKlxbN4t6nS0N2bqUaX"), "ufrag of 3")
        XCTAssertNil(ICECredentials(offeredUfrag: "Z7bS", password: "short"))
        XCTAssertNil(ICECredentials(offeredUfrag: "Z7b:", password: "a9Qm2GKlxbN4t6nS0N2bqUaX"), "a colon would split USERNAME")
    }

    func testDatagramsAreToldApartByTheirFirstByte() {
        XCTAssertEqual(DatagramKind(request()), .stun)
        XCTAssertEqual(DatagramKind([22, 0xFE, 0xFD]), .dtls)
        XCTAssertEqual(DatagramKind([0x80, 96]), .rtp)
        XCTAssertEqual(DatagramKind([0x81, 201]), .rtp, "RTCP shares RTP's range (RFC 5761)")
        XCTAssertEqual(DatagramKind([]), .unknown)
        XCTAssertEqual(DatagramKind([64]), .unknown)
        XCTAssertEqual(PeerAddress(address: [192, 168, 1, 20], port: 5).description, "192.168.1.20:5")
        XCTAssertEqual(PeerAddress(address: [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1], port: 5).description, "[2001:db8:0:0:0:0:0:1]:5")
    }
}
