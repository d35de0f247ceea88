import COpenSSL
import Media

/// A STUN message (RFC 8489 §5): the Binding requests and responses of ICE-lite
/// (RFC 8445 §2.5). Parsing checks every length against the bytes and bounds the number
/// of attributes, so a datagram from anyone on the network costs little and reads nothing
/// past itself. MESSAGE-INTEGRITY (§14.5) and FINGERPRINT (§14.7) are checked against the
/// bytes as they came, written over the bytes as they go.
public struct STUNMessage: Sendable, Equatable {
    public enum Class: UInt16, Sendable {
        case request = 0x0000, indication = 0x0010, success = 0x0100, error = 0x0110
    }

    /// Binding (§18.1), the only method ICE uses.
    public static let binding: UInt16 = 0x001
    /// §5: the fixed value that tells STUN apart from other protocols on the same port.
    public static let magicCookie: UInt32 = 0x2112_A442

    public struct Attribute: Sendable, Equatable {
        public var type: UInt16
        public var value: [UInt8]
        public init(_ type: UInt16, _ value: [UInt8]) {
            self.type = type
            self.value = value
        }
    }

    /// Attribute types onair reads or writes (RFC 8489 §18.3, RFC 8445 §16.1).
    public enum AttributeType {
        public static let username: UInt16 = 0x0006
        public static let messageIntegrity: UInt16 = 0x0008
        public static let errorCode: UInt16 = 0x0009
        public static let xorMappedAddress: UInt16 = 0x0020
        public static let priority: UInt16 = 0x0024
        public static let useCandidate: UInt16 = 0x0025
        public static let software: UInt16 = 0x8022
        public static let fingerprint: UInt16 = 0x8028
        public static let iceControlled: UInt16 = 0x8029
        public static let iceControlling: UInt16 = 0x802A
    }

    public var method: UInt16
    public var messageClass: Class
    public var transactionID: [UInt8]
    /// In order, without MESSAGE-INTEGRITY and FINGERPRINT (those are about the bytes).
    public var attributes: [Attribute]

    public init(method: UInt16 = binding, messageClass: Class, transactionID: [UInt8], attributes: [Attribute] = []) {
        self.method = method
        self.messageClass = messageClass
        self.transactionID = transactionID
        self.attributes = attributes
    }

    public func attribute(_ type: UInt16) -> [UInt8]? { attributes.first { $0.type == type }?.value }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notSTUN
        case truncated
        case tooManyAttributes
        case badLength(UInt16)

        public var description: String {
            switch self {
            case .notSTUN: return "not a STUN message (no magic cookie, or the top bits set)"
            case .truncated: return "a STUN attribute runs past the message"
            case .tooManyAttributes: return "more than \(STUNMessage.attributeLimit) STUN attributes"
            case .badLength(let length): return "STUN length \(length) does not match the datagram"
            }
        }
    }

    /// A Binding request from a browser carries about eight; anything near this is not one.
    public static let attributeLimit = 32

    /// RFC 7983 §7: a datagram on the shared port whose first byte is 0–3 and that carries
    /// the magic cookie is STUN (DTLS starts 20–63, RTP and RTCP 128–191).
    public static func isSTUN(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 20 && bytes[0] < 4 && bytes.bigEndianUInt32(at: 4) == magicCookie
    }

    /// What parsing found about the message's own bytes, for `verify`.
    public struct Received: Sendable {
        public var message: STUNMessage
        /// Where MESSAGE-INTEGRITY's attribute header starts, and its 20-byte value.
        var integrity: (offset: Int, value: [UInt8])?
        /// Where FINGERPRINT's attribute header starts, and its value.
        var fingerprint: (offset: Int, value: UInt32)?
        let bytes: [UInt8]

        public var hasIntegrity: Bool { integrity != nil }
        public var hasFingerprint: Bool { fingerprint != nil }

        /// §14.5: HMAC-SHA1 under `key` of the message up to the attribute, with the
        /// header's length as if the message ended after it. False without the attribute.
        public func integrityMatches(key: [UInt8]) -> Bool {
            guard let integrity else { return false }
            let expected = STUNMessage.hmac(key: key, over: STUNMessage.withLength(Array(bytes[..<integrity.offset]), upTo: integrity.offset + 24))
            return constantTimeEqual(expected, integrity.value)
        }

        /// §14.7: CRC-32 of the message up to the attribute, XOR 0x5354554e. False without it.
        public func fingerprintMatches() -> Bool {
            guard let fingerprint else { return false }
            return STUNMessage.fingerprint(STUNMessage.withLength(Array(bytes[..<fingerprint.offset]), upTo: fingerprint.offset + 8)) == fingerprint.value
        }
    }

    public static func parse(_ bytes: [UInt8]) throws -> Received {
        guard isSTUN(bytes) else { throw ParseError.notSTUN }
        let type = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        let length = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        guard Int(length) == bytes.count - 20, length % 4 == 0 else { throw ParseError.badLength(length) }
        // §5: the class bits are C1 (bit 8) and C0 (bit 4); the method is the other 12.
        let messageClass = Class(rawValue: type & 0x0110)!
        let method = type & 0x000F | (type & 0x00E0) >> 1 | (type & 0x3E00) >> 2
        var message = STUNMessage(method: method, messageClass: messageClass, transactionID: Array(bytes[8..<20]))
        var received = Received(message: message, integrity: nil, fingerprint: nil, bytes: bytes)
        var offset = 20, count = 0
        while offset < bytes.count {
            guard offset + 4 <= bytes.count else { throw ParseError.truncated }
            count += 1
            guard count <= attributeLimit else { throw ParseError.tooManyAttributes }
            let attributeType = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let valueLength = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let start = offset + 4
            guard start + valueLength <= bytes.count else { throw ParseError.truncated }
            let value = Array(bytes[start..<(start + valueLength)])
            switch attributeType {
            case AttributeType.messageIntegrity where valueLength == 20 && received.integrity == nil && received.fingerprint == nil:
                received.integrity = (offset, value)
            case AttributeType.fingerprint where valueLength == 4 && received.fingerprint == nil:
                received.fingerprint = (offset, bytes.bigEndianUInt32(at: start))
            default:
                // §14.5: what follows MESSAGE-INTEGRITY (but FINGERPRINT) is not covered
                // by it and is ignored.
                if received.integrity == nil && received.fingerprint == nil {
                    message.attributes.append(Attribute(attributeType, value))
                }
            }
            offset = start + (valueLength + 3) / 4 * 4
        }
        received.message = message
        return received
    }

    /// The message's bytes; with `integrityKey`, MESSAGE-INTEGRITY over them, and with
    /// `fingerprint`, FINGERPRINT last (§14.5, §14.7).
    public func serialized(integrityKey: [UInt8]? = nil, fingerprint withFingerprint: Bool = false) -> [UInt8] {
        let methodBits = method & 0x000F | (method & 0x0070) << 1 | (method & 0x0F80) << 2
        var out: [UInt8] = []
        out.appendBigEndian(methodBits | messageClass.rawValue)
        out.appendBigEndian(UInt16(0))  // the length, filled in below
        out.appendBigEndian(Self.magicCookie)
        out += transactionID.prefix(12) + [UInt8](repeating: 0, count: max(0, 12 - transactionID.count))
        for attribute in attributes {
            out.appendBigEndian(attribute.type)
            out.appendBigEndian(UInt16(min(attribute.value.count, 0xFFFF)))
            out += attribute.value.prefix(0xFFFF)
            while out.count % 4 != 0 { out.append(0) }
        }
        if let integrityKey {
            let mac = Self.hmac(key: integrityKey, over: Self.withLength(out, upTo: out.count + 24))
            out.appendBigEndian(AttributeType.messageIntegrity)
            out.appendBigEndian(UInt16(20))
            out += mac
        }
        if withFingerprint {
            let crc = Self.fingerprint(Self.withLength(out, upTo: out.count + 8))
            out.appendBigEndian(AttributeType.fingerprint)
            out.appendBigEndian(UInt16(4))
            out.appendBigEndian(crc)
        }
        return Self.withLength(out, upTo: out.count)
    }

    /// The bytes with the header's length set as if the message were `end` bytes long.
    static func withLength(_ bytes: [UInt8], upTo end: Int) -> [UInt8] {
        var copy = bytes
        let length = UInt16(clamping: end - 20)
        copy[2] = UInt8(length >> 8)
        copy[3] = UInt8(length & 0xFF)
        return copy
    }

    static func hmac(key: [UInt8], over data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        let ok = key.withUnsafeBytes { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { onair_hmac_sha1(k.baseAddress, Int32(k.count), d.baseAddress, d.count, $0.baseAddress) }
            }
        }
        return ok == 1 ? out : []
    }

    static func fingerprint(_ data: [UInt8]) -> UInt32 { CRC32.checksum(data) ^ 0x5354_554E }
}

/// The ICE attributes of a Binding request, read (RFC 8445 §7.1.1, §16.1).
extension STUNMessage {
    /// USERNAME as text: `<receiver's ufrag>:<sender's ufrag>` in ICE.
    public var username: String? { attribute(AttributeType.username).map { String(decoding: $0, as: UTF8.self) } }
    public var priority: UInt32? {
        attribute(AttributeType.priority).flatMap { $0.count == 4 ? $0.bigEndianUInt32(at: 0) : nil }
    }
    public var useCandidate: Bool { attribute(AttributeType.useCandidate) != nil }
    public var isControlling: Bool { attribute(AttributeType.iceControlling) != nil }

    /// XOR-MAPPED-ADDRESS (§14.2) of an IPv4 (4 bytes) or IPv6 (16 bytes) address.
    public static func xorMappedAddress(address: [UInt8], port: UInt16, transactionID: [UInt8]) -> Attribute {
        let cookie: [UInt8] = [0x21, 0x12, 0xA4, 0x42]
        let mask = cookie + transactionID.prefix(12)
        var value: [UInt8] = [0, address.count == 16 ? 0x02 : 0x01]
        value.appendBigEndian(port ^ 0x2112)
        value += address.enumerated().map { $1 ^ mask[$0 % mask.count] }
        return Attribute(AttributeType.xorMappedAddress, value)
    }

    /// The address and port an XOR-MAPPED-ADDRESS holds; nil when malformed.
    public var mappedAddress: (address: [UInt8], port: UInt16)? {
        guard let value = attribute(AttributeType.xorMappedAddress), value.count >= 8 else { return nil }
        let size = value[1] == 0x02 ? 16 : 4
        guard value.count == 4 + size else { return nil }
        let mask: [UInt8] = [0x21, 0x12, 0xA4, 0x42] + transactionID
        let port = (UInt16(value[2]) << 8 | UInt16(value[3])) ^ 0x2112
        return (value[4...].enumerated().map { $1 ^ mask[$0 % mask.count] }, port)
    }
}

/// CRC-32 (ISO-HDLC: the polynomial of zlib and Ethernet, reflected), for FINGERPRINT.
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

/// Compares two MACs in time that does not depend on where they differ.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count, !a.isEmpty else { return false }
    return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
}
