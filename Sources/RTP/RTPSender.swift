/// One RTP stream's numbering (RFC 3550 §5.1): its SSRC, a sequence number that goes up
/// by one per packet and wraps, and the media clock of its timestamps. The initial values
/// are random in the field (§5.1: "SHOULD be random") and given in tests.
public struct RTPStream: Sendable {
    public let ssrc: UInt32
    public let payloadType: UInt8
    /// The timestamp clock in Hz (90000 for video, 48000 for Opus).
    public let clockRate: Int64
    public private(set) var nextSequence: UInt16
    public let timestampOffset: UInt32
    /// Packets and payload bytes sent, for RTCP sender reports (§6.4.1).
    public private(set) var packetCount: UInt32 = 0
    public private(set) var octetCount: UInt32 = 0

    public init(ssrc: UInt32, payloadType: UInt8, clockRate: Int64, firstSequence: UInt16, timestampOffset: UInt32) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.clockRate = max(1, clockRate)
        nextSequence = firstSequence
        self.timestampOffset = timestampOffset
    }

    /// A stream with random SSRC, first sequence number and timestamp offset.
    public static func random(payloadType: UInt8, clockRate: Int64) -> RTPStream {
        var generator = SystemRandomNumberGenerator()
        return RTPStream(ssrc: generator.next(), payloadType: payloadType, clockRate: clockRate,
                         firstSequence: generator.next(), timestampOffset: generator.next())
    }

    /// The RTP timestamp of a media time of `ticks` in `timescale`: rescaled to the clock
    /// rate (rounded down), offset, and wrapped modulo 2³² as §5.1 says timestamps do.
    /// Media times are bounded (MediaSeconds), so the product cannot overflow; it saturates
    /// if one ever could.
    public func timestamp(ticks: Int64, timescale: Int64) -> UInt32 {
        let scale = max(1, timescale)
        let (product, overflow) = ticks.multipliedReportingOverflow(by: clockRate)
        let rescaled = overflow ? (ticks / scale) &* clockRate : product / scale
        return UInt32(truncatingIfNeeded: rescaled) &+ timestampOffset
    }

    /// The packets of one access unit's payloads: consecutive sequence numbers, the same
    /// timestamp, the marker on the last (RFC 6184 §5.1). `extensions` go on the first
    /// packet: the ones onair sends (abs-capture-time, playout-delay) are per frame.
    public mutating func packets(_ payloads: [[UInt8]], timestamp: UInt32, extensions: [RTPPacket.Extension] = []) -> [RTPPacket] {
        payloads.enumerated().map { index, payload in
            defer {
                nextSequence &+= 1
                packetCount &+= 1
                octetCount &+= UInt32(truncatingIfNeeded: payload.count)
            }
            return RTPPacket(marker: index == payloads.count - 1, payloadType: payloadType, sequenceNumber: nextSequence,
                             timestamp: timestamp, ssrc: ssrc, extensions: index == 0 ? extensions : [], payload: payload)
        }
    }
}
