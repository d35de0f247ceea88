import Media

/// H.264 over RTP, RFC 6184 with packetization-mode=1 (non-interleaved, §6.3): each access
/// unit becomes payloads of at most `maximumPayload` bytes, all with its timestamp, the
/// last one marked (§5.1). A NAL unit that fits goes alone (§5.6); small neighbours go
/// together in a STAP-A (§5.7.1); one too large is cut into FU-As (§5.8). Before an IDR the
/// parameter sets go first, so a viewer that joins at that IDR can decode it. Packetized
/// once per stream; every viewer gets the same payloads.
public struct H264Packetizer: Sendable {
    /// 1200 bytes of payload keep a packet (with RTP, SRTP, UDP and IPv6 headers) under
    /// the 1280-byte IPv6 minimum MTU, as browsers' own senders do.
    public static let defaultMaximumPayload = 1200
    public let maximumPayload: Int

    /// NAL unit types of RFC 6184 §5.2 beyond H.264's own 1–23.
    static let stapA: UInt8 = 24
    static let fuA: UInt8 = 28

    public init(maximumPayload: Int = defaultMaximumPayload) {
        // A FU-A carries at least one byte of its NAL unit after its two header bytes.
        self.maximumPayload = max(3, maximumPayload)
    }

    /// The payloads of one access unit (its NAL units without length prefixes or start
    /// codes), in sending order. `parameterSets` (SPS, PPS) are sent first when the unit
    /// holds an IDR and not already its own. Access unit delimiters and filler data are
    /// left out: they mean nothing over RTP.
    public func payloads(_ accessUnit: [ArraySlice<UInt8>], parameterSets: [[UInt8]] = []) -> [[UInt8]] {
        var units = accessUnit.filter { !$0.isEmpty && ![9, 12].contains(H264.nalType($0)) }
        let types = Set(units.map { H264.nalType($0) })
        if types.contains(H264.NALType.idr.rawValue) && !types.contains(H264.NALType.sps.rawValue) {
            units = parameterSets.filter { !$0.isEmpty }.map { $0[...] } + units
        }
        var payloads: [[UInt8]] = []
        var index = 0
        while index < units.count {
            let unit = units[index]
            if unit.count > maximumPayload {
                payloads += fragments(unit)
                index += 1
                continue
            }
            // As many following units as fit in one STAP-A with this one (1 header byte,
            // then a 16-bit size before each).
            var end = index + 1
            var size = 1 + 2 + unit.count
            while end < units.count, size + 2 + units[end].count <= maximumPayload {
                size += 2 + units[end].count
                end += 1
            }
            payloads.append(end - index >= 2 ? aggregate(units[index..<end]) : Array(unit))
            index = end
        }
        return payloads
    }

    /// §5.7.1: F is the OR of the units' F bits, NRI the largest of their NRIs.
    private func aggregate(_ units: ArraySlice<ArraySlice<UInt8>>) -> [UInt8] {
        let forbidden = units.reduce(UInt8(0)) { $0 | ($1.first! & 0x80) }
        let importance = units.map { $0.first! & 0x60 }.max() ?? 0
        var payload: [UInt8] = [forbidden | importance | Self.stapA]
        for unit in units {
            payload.append(UInt8(unit.count >> 8))
            payload.append(UInt8(unit.count & 0xFF))
            payload += unit
        }
        return payload
    }

    /// §5.8: the FU indicator keeps the unit's F and NRI with type 28; the FU header
    /// carries S on the first fragment, E on the last, and the unit's own type. The unit's
    /// header byte itself is not sent: the receiver rebuilds it from the two.
    private func fragments(_ unit: ArraySlice<UInt8>) -> [[UInt8]] {
        let header = unit.first!
        let indicator = header & 0xE0 | Self.fuA
        let type = header & 0x1F
        let body = unit.dropFirst()
        let chunk = maximumPayload - 2
        var payloads: [[UInt8]] = []
        var start = body.startIndex
        while start < body.endIndex {
            let end = min(start + chunk, body.endIndex)
            let first = start == body.startIndex, last = end == body.endIndex
            payloads.append([indicator, (first ? 0x80 : 0) | (last ? 0x40 : 0) | type] + body[start..<end])
            start = end
        }
        return payloads
    }
}

/// The other side of `H264Packetizer`, for tests and for reading a camera's RTP: packets
/// in sequence order become access units again. A gap in the sequence numbers drops the
/// NAL unit being reassembled and marks its access unit incomplete, as a decoder must know.
public struct H264Depacketizer: Sendable {
    public struct AccessUnit: Sendable, Equatable {
        public var timestamp: UInt32
        public var units: [[UInt8]]
        /// Nothing was lost or malformed in it.
        public var complete: Bool
        public init(timestamp: UInt32, units: [[UInt8]], complete: Bool) {
            self.timestamp = timestamp
            self.units = units
            self.complete = complete
        }
    }

    public enum Problem: Error, Equatable {
        case empty
        /// A STAP-A whose sizes run past the packet.
        case badAggregate
        /// A FU-A of two bytes or fewer, or one that continues nothing.
        case badFragment
        /// STAP-B, MTAP, FU-B: not in packetization-mode=1.
        case unsupported(UInt8)
    }

    private var units: [[UInt8]] = []
    private var timestamp: UInt32?
    private var fragment: [UInt8]?
    private var lastSequence: UInt16?
    private var complete = true

    public init() {}

    /// Takes the next packet; returns the access unit it ends (its marker bit, or a new
    /// timestamp ending the one before without one).
    public mutating func push(_ packet: RTPPacket) -> AccessUnit? {
        var finished: AccessUnit?
        if let timestamp, timestamp != packet.timestamp {
            // A new unit: the one before ends here, incomplete (its marked packet never
            // came); damage to a unit that left nothing does not carry over.
            if !units.isEmpty || fragment != nil { finished = flush(complete: false) } else { complete = true }
        }
        if let lastSequence, packet.sequenceNumber != lastSequence &+ 1 {
            fragment = nil
            complete = false
        }
        lastSequence = packet.sequenceNumber
        timestamp = packet.timestamp
        do { try read(packet.payload) } catch { complete = false }
        if packet.marker { return flush(complete: complete && fragment == nil) ?? finished }
        return finished
    }

    private mutating func flush(complete: Bool) -> AccessUnit? {
        defer {
            units = []
            fragment = nil
            self.complete = true
        }
        guard let timestamp, !units.isEmpty else { return nil }
        return AccessUnit(timestamp: timestamp, units: units, complete: complete)
    }

    private mutating func read(_ payload: [UInt8]) throws {
        guard let first = payload.first else { throw Problem.empty }
        switch first & 0x1F {
        case 1...23:
            units.append(payload)
        case H264Packetizer.stapA:
            var i = 1
            while i < payload.count {
                guard i + 2 <= payload.count else { throw Problem.badAggregate }
                let size = Int(payload[i]) << 8 | Int(payload[i + 1])
                i += 2
                guard size > 0, i + size <= payload.count else { throw Problem.badAggregate }
                units.append(Array(payload[i..<(i + size)]))
                i += size
            }
        case H264Packetizer.fuA:
            guard payload.count > 2 else { throw Problem.badFragment }
            let header = payload[1]
            if header & 0x80 != 0 {
                fragment = [first & 0xE0 | header & 0x1F]
            }
            guard fragment != nil else { throw Problem.badFragment }
            fragment! += payload[2...]
            if header & 0x40 != 0, let done = fragment {
                units.append(done)
                fragment = nil
            }
        case let other:
            throw Problem.unsupported(other)
        }
    }
}
