import Media

/// One RTP packet (RFC 3550 §5.1) with RFC 8285 header extensions: what the real-time
/// outputs (WebRTC, RTSP) send and what their tests read back. Parsing checks every length
/// against the bytes it has, so a packet from the network cannot make it read past them.
public struct RTPPacket: Sendable, Equatable {
    public var marker: Bool
    /// 7 bits.
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var csrcs: [UInt32]
    /// RFC 8285 elements, by local identifier (1–14 in the one-byte form, 1–255 in the
    /// two-byte form), in the order written.
    public var extensions: [Extension]
    public var payload: [UInt8]

    public struct Extension: Sendable, Equatable {
        public var id: UInt8
        public var data: [UInt8]
        public init(id: UInt8, data: [UInt8]) {
            self.id = id
            self.data = data
        }
    }

    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
                csrcs: [UInt32] = [], extensions: [Extension] = [], payload: [UInt8]) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.extensions = extensions
        self.payload = payload
    }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        /// Fewer bytes than the fixed header and what it announces.
        case truncated(need: Int, have: Int)
        /// Not version 2.
        case version(UInt8)
        /// Padding longer than the payload, or a padding count of 0 (§5.1).
        case padding(Int)
        /// An extension element that runs past its block, or a reserved id.
        case badExtension(String)

        public var description: String {
            switch self {
            case .truncated(let need, let have): return "RTP packet of \(have) bytes, needs \(need)"
            case .version(let version): return "RTP version \(version), not 2"
            case .padding(let count): return "RTP padding of \(count) bytes does not fit"
            case .badExtension(let why): return "RTP header extension: \(why)"
            }
        }
    }

    /// The profile of RFC 8285 §4.2 (one-byte elements) and §4.3 (two-byte).
    static let oneByteProfile: UInt16 = 0xBEDE
    static let twoByteProfile: UInt16 = 0x1000

    /// The packet's bytes: the one-byte extension form when every element fits it (ids
    /// 1–14, 1–16 bytes of data), the two-byte form otherwise.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(12 + 4 * csrcs.count + payload.count + 16)
        let hasExtension = !extensions.isEmpty
        out.append(0x80 | (hasExtension ? 0x10 : 0) | UInt8(csrcs.count & 0x0F))
        out.append((marker ? 0x80 : 0) | (payloadType & 0x7F))
        out.appendBigEndian(sequenceNumber)
        out.appendBigEndian(timestamp)
        out.appendBigEndian(ssrc)
        for csrc in csrcs.prefix(15) { out.appendBigEndian(csrc) }
        if hasExtension {
            let oneByte = extensions.allSatisfy { (1...14).contains($0.id) && (1...16).contains($0.data.count) }
            var block: [UInt8] = []
            for element in extensions {
                if oneByte {
                    block.append(element.id << 4 | UInt8(element.data.count - 1))
                } else {
                    block.append(element.id)
                    block.append(UInt8(min(element.data.count, 255)))
                }
                block += element.data.prefix(255)
            }
            while block.count % 4 != 0 { block.append(0) }
            out.appendBigEndian(oneByte ? Self.oneByteProfile : Self.twoByteProfile)
            out.appendBigEndian(UInt16(block.count / 4))
            out += block
        }
        out += payload
        return out
    }

    /// Reads a packet; every count and length in it is checked against `bytes`.
    public init(parsing bytes: [UInt8]) throws {
        guard bytes.count >= 12 else { throw ParseError.truncated(need: 12, have: bytes.count) }
        let version = bytes[0] >> 6
        guard version == 2 else { throw ParseError.version(version) }
        let hasPadding = bytes[0] & 0x20 != 0
        let hasExtension = bytes[0] & 0x10 != 0
        let csrcCount = Int(bytes[0] & 0x0F)
        marker = bytes[1] & 0x80 != 0
        payloadType = bytes[1] & 0x7F
        sequenceNumber = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        timestamp = bytes.bigEndianUInt32(at: 4)
        ssrc = bytes.bigEndianUInt32(at: 8)
        var offset = 12
        guard bytes.count >= offset + 4 * csrcCount else { throw ParseError.truncated(need: offset + 4 * csrcCount, have: bytes.count) }
        csrcs = (0..<csrcCount).map { bytes.bigEndianUInt32(at: 12 + 4 * $0) }
        offset += 4 * csrcCount
        extensions = []
        if hasExtension {
            guard bytes.count >= offset + 4 else { throw ParseError.truncated(need: offset + 4, have: bytes.count) }
            let profile = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let length = 4 * (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
            offset += 4
            guard bytes.count >= offset + length else { throw ParseError.truncated(need: offset + length, have: bytes.count) }
            extensions = try Self.elements(bytes[offset..<(offset + length)], profile: profile)
            offset += length
        }
        var end = bytes.count
        if hasPadding {
            let count = Int(bytes[end - 1])
            guard count > 0, end - count >= offset else { throw ParseError.padding(count) }
            end -= count
        }
        payload = Array(bytes[offset..<end])
    }

    /// The elements of an extension block; a profile other than RFC 8285's is kept as
    /// nothing (its contents are the sender's own).
    private static func elements(_ block: ArraySlice<UInt8>, profile: UInt16) throws -> [Extension] {
        let oneByte = profile == oneByteProfile
        guard oneByte || profile & 0xFFF0 == twoByteProfile else { return [] }
        var found: [Extension] = []
        var i = block.startIndex
        while i < block.endIndex {
            let first = block[i]
            if first == 0 { i += 1; continue }  // padding between elements (§4.2, §4.3)
            let id: UInt8, length: Int
            if oneByte {
                id = first >> 4
                // id 15 ends the block (§4.2): the rest is not read.
                if id == 15 { break }
                length = Int(first & 0x0F) + 1
                i += 1
            } else {
                guard i + 1 < block.endIndex else { throw ParseError.badExtension("an element header past the block") }
                id = first
                length = Int(block[i + 1])
                i += 2
            }
            guard i + length <= block.endIndex else { throw ParseError.badExtension("element \(id) of \(length) bytes past the block") }
            found.append(Extension(id: id, data: Array(block[i..<(i + length)])))
            i += length
        }
        return found
    }
}
