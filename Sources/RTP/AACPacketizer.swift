/// AAC in RTP as RFC 3640 §3.3.6 carries it (mpeg4-generic, mode AAC-hbr): each packet
/// holds an AU-headers-length (16 bits, in bits), one 16-bit AU header per access unit
/// — a 13-bit size and a 3-bit index (delta) of 0 — and the access units. onair sends one
/// access unit per packet (an AAC frame is a few hundred bytes; §3.2.3.1's fragmentation
/// of a larger one is done as well: the same header in each fragment, the marker on the
/// last).
public struct AACPacketizer: Sendable {
    public static let defaultMaximumPayload = 1400
    public let maximumPayload: Int

    public init(maximumPayload: Int = defaultMaximumPayload) {
        self.maximumPayload = max(16, maximumPayload)
    }

    /// The payloads of one access unit: one, or its fragments when it does not fit.
    /// An access unit over 8191 bytes (13 bits) cannot be described and gives none.
    public func payloads(_ accessUnit: [UInt8]) -> [[UInt8]] {
        guard !accessUnit.isEmpty, accessUnit.count < 1 << 13 else { return [] }
        let header: [UInt8] = [0x00, 0x10, UInt8(accessUnit.count >> 5), UInt8(accessUnit.count & 0x1F) << 3]
        let room = maximumPayload - header.count
        return stride(from: 0, to: accessUnit.count, by: room).map { start in
            header + accessUnit[start..<min(accessUnit.count, start + room)]
        }
    }

    /// The access units of one packet's payload (the receiver's side, for tests and the
    /// fuzzer): nil when its AU headers do not describe its data.
    public static func accessUnits(_ payload: [UInt8]) -> [[UInt8]]? {
        guard payload.count >= 2 else { return nil }
        let headerBits = Int(payload[0]) << 8 | Int(payload[1])
        guard headerBits % 16 == 0, 2 + headerBits / 8 <= payload.count else { return nil }
        var offset = 2 + headerBits / 8
        var units: [[UInt8]] = []
        for index in 0..<(headerBits / 16) {
            let size = (Int(payload[2 + 2 * index]) << 8 | Int(payload[3 + 2 * index])) >> 3
            guard offset + size <= payload.count else { return headerBits == 16 ? [Array(payload[offset...])] : nil }
            units.append(Array(payload[offset..<(offset + size)]))
            offset += size
        }
        return units
    }
}
