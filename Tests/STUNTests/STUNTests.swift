import STUN
import XCTest

final class STUNTests: XCTestCase {
    /// RFC 5769 §2.1: a Binding request with the short-term credential of its password,
    /// PRIORITY, ICE-CONTROLLED, USERNAME padded with spaces (padding may be anything).
    static let sampleRequest: [UInt8] = hex("""
        000100582112a442b7e7a701bc34d686fa87dfae802200105354554e20746573742063
        6c69656e74002400046e0001ff80290008932ff9b151263b36000600096576746a3a68
        367659202020000800149aeaa70cbfd8cb56781ef2b5b2d3f249c1b571a280280004e5
        7a3bcf
        """)
    static let samplePassword = Array("VOkJxbRl1RmTxUk/WvJxBt".utf8)

    /// RFC 5769 §2.2: the IPv4 response, XOR-MAPPED-ADDRESS 192.0.2.1:32853.
    static let sampleResponse: [UInt8] = hex("""
        0101003c2112a442b7e7a701bc34d686fa87dfae8022000b7465737420766563746f72
        20002000080001a147e112a643000800142b91f599fd9e90c38c7489f92af9ba53f06b
        e7d780280004c07d4c96
        """)

    func testRFC5769SampleRequestVerifies() throws {
        XCTAssertTrue(STUNMessage.isSTUN(Self.sampleRequest))
        let received = try STUNMessage.parse(Self.sampleRequest)
        let message = received.message
        XCTAssertEqual(message.method, STUNMessage.binding)
        XCTAssertEqual(message.messageClass, .request)
        XCTAssertEqual(message.transactionID, Array(Self.sampleRequest[8..<20]))
        XCTAssertEqual(message.username, "evtj:h6vY")
        XCTAssertEqual(message.priority, 0x6E00_01FF)
        XCTAssertFalse(message.isControlling)
        XCTAssertFalse(message.useCandidate)
        XCTAssertTrue(received.integrityMatches(key: Self.samplePassword))
        XCTAssertFalse(received.integrityMatches(key: Array("wrong".utf8)))
        XCTAssertTrue(received.fingerprintMatches())
    }

    func testRFC5769SampleResponseVerifiesAndItsAddressIsRead() throws {
        let received = try STUNMessage.parse(Self.sampleResponse)
        XCTAssertEqual(received.message.messageClass, .success)
        XCTAssertTrue(received.integrityMatches(key: Self.samplePassword))
        XCTAssertTrue(received.fingerprintMatches())
        let mapped = try XCTUnwrap(received.message.mappedAddress)
        XCTAssertEqual(mapped.address, [192, 0, 2, 1])
        XCTAssertEqual(mapped.port, 32853)
    }

    /// What onair writes, its own reader and RFC 5769's arithmetic agree on: the same
    /// response as the RFC's, byte for byte.
    func testASuccessResponseIsWrittenAsRFC5769Writes() {
        let id = Array(Self.sampleResponse[8..<20])
        let response = STUNMessage(messageClass: .success, transactionID: id, attributes: [
            .init(STUNMessage.AttributeType.software, Array("test vector".utf8)),
            STUNMessage.xorMappedAddress(address: [192, 0, 2, 1], port: 32853, transactionID: id)])
        var bytes = response.serialized(integrityKey: Self.samplePassword, fingerprint: true)
        // The RFC pads SOFTWARE with a space; onair pads with zero (RFC 8489 §14): the MAC
        // and CRC then differ, so compare with the space put back and both recomputed.
        XCTAssertEqual(bytes.count, Self.sampleResponse.count)
        bytes[35] = 0x20
        let rewritten = try? STUNMessage.parse(bytes)
        XCTAssertEqual(rewritten?.message, try? STUNMessage.parse(Self.sampleResponse).message)
        XCTAssertEqual(Array(bytes[..<44]), Array(Self.sampleResponse[..<44]))
        let ours = try? STUNMessage.parse(response.serialized(integrityKey: Self.samplePassword, fingerprint: true))
        XCTAssertEqual(ours?.integrityMatches(key: Self.samplePassword), true)
        XCTAssertEqual(ours?.fingerprintMatches(), true)
    }

    /// 0x0FF spreads over all three groups of method bits around the class bits (§5).
    func testIPv6AddressesAndMethodBitsRoundTrip() throws {
        let id: [UInt8] = Array(0..<12)
        let address: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0x12, 0x34, 0x56, 0x78, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77]
        let message = STUNMessage(method: 0x0FF, messageClass: .error, transactionID: id,
                                  attributes: [STUNMessage.xorMappedAddress(address: address, port: 443, transactionID: id)])
        let parsed = try STUNMessage.parse(message.serialized()).message
        XCTAssertEqual(parsed, message)
        XCTAssertEqual(parsed.mappedAddress?.address, address)
        XCTAssertEqual(parsed.mappedAddress?.port, 443)
    }

    func testATamperedMessageFailsItsChecks() throws {
        var tampered = Self.sampleRequest
        tampered[45] ^= 1  // in PRIORITY
        let received = try STUNMessage.parse(tampered)
        XCTAssertFalse(received.integrityMatches(key: Self.samplePassword))
        XCTAssertFalse(received.fingerprintMatches())
        // Without the attributes there is nothing to match.
        let bare = try STUNMessage.parse(STUNMessage(messageClass: .request, transactionID: Array(0..<12)).serialized())
        XCTAssertFalse(bare.integrityMatches(key: Self.samplePassword))
        XCTAssertFalse(bare.fingerprintMatches())
    }

    func testMalformedDatagramsAreRefusedCheaply() {
        let good = Self.sampleRequest
        func refused(_ bytes: [UInt8], _ expected: STUNMessage.ParseError, line: UInt = #line) {
            XCTAssertThrowsError(try STUNMessage.parse(bytes), line: line) { XCTAssertEqual($0 as? STUNMessage.ParseError, expected, line: line) }
        }
        refused(Array(good.prefix(19)), .notSTUN)
        refused([0x80] + good.dropFirst(), .notSTUN)  // RTP's first byte
        refused(Array(good.prefix(4)) + [0, 0, 0, 0] + good.dropFirst(8), .notSTUN)  // no cookie
        refused(Array(good.dropLast(4)), .badLength(0x58))
        var overrun = good
        overrun[22] = 0x7F  // SOFTWARE claims 32 KiB
        refused(overrun, .truncated)
        // 33 empty attributes: within the length, past the limit.
        var many = STUNMessage(messageClass: .request, transactionID: Array(0..<12),
                               attributes: (0..<33).map { _ in .init(0x8022, []) }).serialized()
        refused(many, .tooManyAttributes)
        many[3] = 0x83  // a length that is not a multiple of 4
        refused(many, .badLength(0x83))
    }
}

/// Bytes from hexadecimal text (whitespace ignored).
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { $0.isHexDigit })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}
