import Media

/// RTCP (RFC 3550 §6) and the feedback WebRTC viewers send (RFC 4585 §6, RFC 5104 §4.3):
/// what a sender reads (receiver reports, NACKs, picture loss, full intra requests) and
/// writes (sender reports with the NTP↔RTP mapping, its CNAME, BYE). A compound packet is
/// read packet by packet, every length checked against the bytes.
public enum RTCPPacket: Sendable, Equatable {
    case senderReport(SenderReport)
    case receiverReport(ssrc: UInt32, reports: [ReportBlock])
    /// SDES CNAMEs by SSRC (other items are skipped).
    case sourceDescription([(ssrc: UInt32, cname: String)])
    case bye(ssrcs: [UInt32])
    /// Generic NACK (RFC 4585 §6.2.1): the sequence numbers the receiver lost.
    case nack(sender: UInt32, media: UInt32, lost: [UInt16])
    /// Picture Loss Indication (RFC 4585 §6.3.1).
    case pictureLoss(sender: UInt32, media: UInt32)
    /// Full Intra Request (RFC 5104 §4.3.1): per SSRC, the request's sequence number.
    case fullIntraRequest(sender: UInt32, requests: [(ssrc: UInt32, sequence: UInt8)])
    /// Anything else, by packet type and count/format field: skipped, not an error.
    case other(packetType: UInt8, format: UInt8)

    public struct SenderReport: Sendable, Equatable {
        public var ssrc: UInt32
        /// NTP time (RFC 5905: seconds since 1900 in the high 32 bits, fraction in the low).
        public var ntpTime: UInt64
        public var rtpTime: UInt32
        public var packetCount: UInt32
        public var octetCount: UInt32
        public var reports: [ReportBlock]
        public init(ssrc: UInt32, ntpTime: UInt64, rtpTime: UInt32, packetCount: UInt32, octetCount: UInt32, reports: [ReportBlock] = []) {
            self.ssrc = ssrc
            self.ntpTime = ntpTime
            self.rtpTime = rtpTime
            self.packetCount = packetCount
            self.octetCount = octetCount
            self.reports = reports
        }
    }

    /// §6.4.1: what a receiver says of one source.
    public struct ReportBlock: Sendable, Equatable {
        public var ssrc: UInt32
        public var fractionLost: UInt8
        /// 24-bit signed on the wire.
        public var cumulativeLost: Int32
        public var highestSequence: UInt32
        public var jitter: UInt32
        /// The middle 32 bits of the NTP time of the last SR received, and the delay since
        /// it in 1/65536 s: with them the sender measures the round trip (§6.4.1).
        public var lastSenderReport: UInt32
        public var delaySinceLastSenderReport: UInt32

        public init(ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, highestSequence: UInt32, jitter: UInt32,
                    lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32) {
            self.ssrc = ssrc
            self.fractionLost = fractionLost
            self.cumulativeLost = cumulativeLost
            self.highestSequence = highestSequence
            self.jitter = jitter
            self.lastSenderReport = lastSenderReport
            self.delaySinceLastSenderReport = delaySinceLastSenderReport
        }

        /// The round trip in 1/65536 s, given the sender's NTP time (middle 32 bits) when
        /// the report arrived; nil before the receiver has seen a sender report.
        public func roundTrip(arrival: UInt32) -> UInt32? {
            guard lastSenderReport != 0 else { return nil }
            return arrival &- lastSenderReport &- delaySinceLastSenderReport
        }
    }

    public enum ParseError: Error, Equatable {
        case truncated
        case version(UInt8)
        /// A packet whose count does not fit its length.
        case badCount(packetType: UInt8)
    }

    public static func == (a: RTCPPacket, b: RTCPPacket) -> Bool {
        switch (a, b) {
        case (.senderReport(let x), .senderReport(let y)): return x == y
        case (.receiverReport(let s1, let r1), .receiverReport(let s2, let r2)): return s1 == s2 && r1 == r2
        case (.sourceDescription(let x), .sourceDescription(let y)): return x.map(\.ssrc) == y.map(\.ssrc) && x.map(\.cname) == y.map(\.cname)
        case (.bye(let x), .bye(let y)): return x == y
        case (.nack(let s1, let m1, let l1), .nack(let s2, let m2, let l2)): return s1 == s2 && m1 == m2 && l1 == l2
        case (.pictureLoss(let s1, let m1), .pictureLoss(let s2, let m2)): return s1 == s2 && m1 == m2
        case (.fullIntraRequest(let s1, let r1), .fullIntraRequest(let s2, let r2)):
            return s1 == s2 && r1.map(\.ssrc) == r2.map(\.ssrc) && r1.map(\.sequence) == r2.map(\.sequence)
        case (.other(let p1, let f1), .other(let p2, let f2)): return p1 == p2 && f1 == f2
        default: return false
        }
    }

    /// The packets of a compound RTCP datagram, in order.
    public static func parse(_ bytes: [UInt8]) throws -> [RTCPPacket] {
        var packets: [RTCPPacket] = []
        var offset = 0
        while offset < bytes.count {
            guard offset + 4 <= bytes.count else { throw ParseError.truncated }
            let version = bytes[offset] >> 6
            guard version == 2 else { throw ParseError.version(version) }
            let count = bytes[offset] & 0x1F
            let type = bytes[offset + 1]
            let length = 4 * (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]) + 1)
            guard offset + length <= bytes.count else { throw ParseError.truncated }
            var body = Array(bytes[(offset + 4)..<(offset + length)])
            if bytes[offset] & 0x20 != 0 {  // padding (§6.4.1), only on the last packet
                guard let padding = body.last, padding > 0, Int(padding) <= body.count else { throw ParseError.badCount(packetType: type) }
                body.removeLast(Int(padding))
            }
            packets.append(try packet(type: type, count: count, body: body))
            offset += length
        }
        return packets
    }

    private static func packet(type: UInt8, count: UInt8, body: [UInt8]) throws -> RTCPPacket {
        func words(_ n: Int) throws { guard body.count >= 4 * n else { throw ParseError.badCount(packetType: type) } }
        func blocks(at start: Int) throws -> [ReportBlock] {
            try words(start / 4 + 6 * Int(count))
            return (0..<Int(count)).map { i in
                let b = start + 24 * i
                let lost = Int32(bitPattern: (UInt32(body[b + 5]) << 24 | UInt32(body[b + 6]) << 16 | UInt32(body[b + 7]) << 8)) >> 8
                return ReportBlock(ssrc: body.bigEndianUInt32(at: b), fractionLost: body[b + 4], cumulativeLost: lost, highestSequence: body.bigEndianUInt32(at: b + 8),
                                   jitter: body.bigEndianUInt32(at: b + 12), lastSenderReport: body.bigEndianUInt32(at: b + 16), delaySinceLastSenderReport: body.bigEndianUInt32(at: b + 20))
            }
        }
        switch type {
        case 200:
            try words(6)
            return .senderReport(SenderReport(ssrc: body.bigEndianUInt32(at: 0), ntpTime: UInt64(body.bigEndianUInt32(at: 4)) << 32 | UInt64(body.bigEndianUInt32(at: 8)),
                                              rtpTime: body.bigEndianUInt32(at: 12), packetCount: body.bigEndianUInt32(at: 16), octetCount: body.bigEndianUInt32(at: 20),
                                              reports: try blocks(at: 24)))
        case 201:
            try words(1)
            return .receiverReport(ssrc: body.bigEndianUInt32(at: 0), reports: try blocks(at: 4))
        case 202:
            return .sourceDescription(try descriptions(count: Int(count), body: body, type: type))
        case 203:
            try words(Int(count))
            return .bye(ssrcs: (0..<Int(count)).map { body.bigEndianUInt32(at: 4 * $0) })
        case 205 where count == 1:
            try words(2)
            var lost: [UInt16] = []
            var i = 8
            // Each FCI: a lost packet id, and a bitmask of the 16 after it (§6.2.1).
            while i + 4 <= body.count, lost.count < 4096 {
                let id = UInt16(body[i]) << 8 | UInt16(body[i + 1])
                let mask = UInt16(body[i + 2]) << 8 | UInt16(body[i + 3])
                lost.append(id)
                for bit in 0..<16 where mask & (1 << bit) != 0 { lost.append(id &+ UInt16(bit + 1)) }
                i += 4
            }
            return .nack(sender: body.bigEndianUInt32(at: 0), media: body.bigEndianUInt32(at: 4), lost: lost)
        case 206 where count == 1:
            try words(2)
            return .pictureLoss(sender: body.bigEndianUInt32(at: 0), media: body.bigEndianUInt32(at: 4))
        case 206 where count == 4:
            try words(2)
            let requests = stride(from: 8, to: body.count - 7, by: 8).map { (ssrc: body.bigEndianUInt32(at: $0), sequence: body[$0 + 4]) }
            return .fullIntraRequest(sender: body.bigEndianUInt32(at: 0), requests: requests)
        default:
            return .other(packetType: type, format: count)
        }
    }

    /// §6.5: chunks of an SSRC and items (type, length, text), ended by a zero and padded.
    private static func descriptions(count: Int, body: [UInt8], type: UInt8) throws -> [(ssrc: UInt32, cname: String)] {
        var found: [(ssrc: UInt32, cname: String)] = []
        var i = 0
        for _ in 0..<count {
            guard i + 4 <= body.count else { throw ParseError.badCount(packetType: type) }
            let ssrc = body.bigEndianUInt32(at: i)
            i += 4
            var cname = ""
            while i < body.count, body[i] != 0 {
                guard i + 2 <= body.count, i + 2 + Int(body[i + 1]) <= body.count else { throw ParseError.badCount(packetType: type) }
                if body[i] == 1 { cname = String(decoding: body[(i + 2)..<(i + 2 + Int(body[i + 1]))], as: UTF8.self) }
                i += 2 + Int(body[i + 1])
            }
            i = (i / 4 + 1) * 4  // the terminating zero, then to the next word
            found.append((ssrc, cname))
        }
        return found
    }

    /// A sender report, with the sender's CNAME in an SDES after it: the compound packet
    /// RFC 3550 §6.1 asks a sender to send about once a second.
    public static func senderReportPacket(_ report: SenderReport, cname: String) -> [UInt8] {
        var out: [UInt8] = []
        out.append(0x80 | UInt8(min(report.reports.count, 31)))
        out.append(200)
        out.appendBigEndian(UInt16(6 + 6 * min(report.reports.count, 31)))
        out.appendBigEndian(report.ssrc)
        out.appendBigEndian(UInt32(report.ntpTime >> 32))
        out.appendBigEndian(UInt32(report.ntpTime & 0xFFFF_FFFF))
        out.appendBigEndian(report.rtpTime)
        out.appendBigEndian(report.packetCount)
        out.appendBigEndian(report.octetCount)
        for block in report.reports.prefix(31) {
            out.appendBigEndian(block.ssrc)
            out.append(block.fractionLost)
            let lost = UInt32(bitPattern: block.cumulativeLost) & 0x00FF_FFFF
            out += [UInt8(lost >> 16), UInt8((lost >> 8) & 0xFF), UInt8(lost & 0xFF)]
            out.appendBigEndian(block.highestSequence)
            out.appendBigEndian(block.jitter)
            out.appendBigEndian(block.lastSenderReport)
            out.appendBigEndian(block.delaySinceLastSenderReport)
        }
        let name = Array(cname.utf8.prefix(255))
        var chunk: [UInt8] = []
        chunk.appendBigEndian(report.ssrc)
        chunk += [1, UInt8(name.count)] + name + [0]
        while chunk.count % 4 != 0 { chunk.append(0) }
        out += [0x81, 202]
        out.appendBigEndian(UInt16(chunk.count / 4))
        return out + chunk
    }

    /// NTP time (RFC 5905 §6: seconds since 1900 and a 32-bit fraction) of a wall-clock
    /// time in ms since 1970.
    public static func ntpTime(unixMilliseconds: Int64) -> UInt64 {
        let ms = max(0, unixMilliseconds)
        let seconds = UInt64(ms / 1000) &+ 2_208_988_800
        let fraction = UInt64(ms % 1000) << 32 / 1000
        return seconds << 32 | fraction
    }

    /// The same of a time in ns since 1970.
    public static func ntpTime(unixNanoseconds: Int64) -> UInt64 {
        let ns = max(0, unixNanoseconds)
        let seconds = UInt64(ns / 1_000_000_000) &+ 2_208_988_800
        let fraction = UInt64(ns % 1_000_000_000) << 32 / 1_000_000_000
        return seconds << 32 | fraction
    }
}
