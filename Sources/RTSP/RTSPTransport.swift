import Basics
/// A SETUP's Transport header (RFC 2326 §12.39) as onair serves it: RTP over UDP unicast
/// to the client's pair of ports, or interleaved in the RTSP connection on a pair of
/// channels. The client may list several; the first onair can serve is taken.
public enum RTSPTransport: Sendable, Equatable {
    /// RTP to `rtp`, RTCP to `rtp + 1` (or the pair given).
    case udp(rtp: UInt16, rtcp: UInt16)
    /// RTP on `rtp`, RTCP on `rtcp` (§10.12).
    case interleaved(rtp: UInt8, rtcp: UInt8)

    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case missing
        /// None of the transports listed is one onair serves (461 Unsupported Transport).
        case unsupported(String)
        public var description: String {
            switch self {
            case .missing: return "SETUP without a Transport header"
            case .unsupported(let text): return "no transport onair serves in: \(text.prefix(120))"
            }
        }
    }

    /// The first transport in `header` onair serves: RTP/AVP (or RTP/AVP/UDP) unicast with
    /// client_port, or RTP/AVP/TCP with interleaved (channels assigned from
    /// `nextChannel` when the client names none). Multicast is not served.
    public static func choose(_ header: String?, nextChannel: UInt8 = 0) throws -> RTSPTransport {
        guard let header, !header.isEmpty else { throw Refusal.missing }
        for spec in header.split(separator: ",").prefix(8) {
            let parts = spec.split(separator: ";").map { String($0).trimmingWhitespace() }
            guard let protocolPart = parts.first?.uppercased() else { continue }
            let parameters = Dictionary(parts.dropFirst().compactMap { part -> (String, String)? in
                let pair = part.split(separator: "=", maxSplits: 1)
                return (pair[0].lowercased(), pair.count == 2 ? String(pair[1]) : "")
            }, uniquingKeysWith: { first, _ in first })
            if parameters["multicast"] != nil { continue }
            switch protocolPart {
            case "RTP/AVP", "RTP/AVP/UDP":
                guard let ports = parameters["client_port"].flatMap(Self.range(_:)), let rtp = UInt16(exactly: ports.0), rtp > 0,
                      let rtcp = UInt16(exactly: ports.1 ?? ports.0 + 1), rtcp > 0 else { continue }
                return .udp(rtp: rtp, rtcp: rtcp)
            case "RTP/AVP/TCP":
                if let channels = parameters["interleaved"].flatMap(Self.range(_:)) {
                    guard let rtp = UInt8(exactly: channels.0), let rtcp = UInt8(exactly: channels.1 ?? channels.0 + 1) else { continue }
                    return .interleaved(rtp: rtp, rtcp: rtcp)
                }
                guard nextChannel < 255 else { continue }
                return .interleaved(rtp: nextChannel, rtcp: nextChannel + 1)
            default:
                continue
            }
        }
        throw Refusal.unsupported(header)
    }

    /// `5000-5001` or `5000`: each a number that fits an Int of a few digits.
    static func range(_ text: String) -> (Int, Int?)? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.count <= 5 && $0.allSatisfy(\.isASCIIDigit) }),
              let first = Int(parts[0]) else { return nil }
        return (first, parts.count == 2 ? Int(parts[1]) : nil)
    }

    /// The Transport header of the answer (§12.39), with the server's ports and the SSRC.
    public func header(serverPorts: (UInt16, UInt16)? = nil, ssrc: UInt32) -> String {
        let hex = String(ssrc, radix: 16, uppercase: true)
        let ssrcText = String(repeating: "0", count: max(0, 8 - hex.count)) + hex
        switch self {
        case .udp(let rtp, let rtcp):
            let server = serverPorts.map { ";server_port=\($0.0)-\($0.1)" } ?? ""
            return "RTP/AVP;unicast;client_port=\(rtp)-\(rtcp)\(server);ssrc=\(ssrcText)"
        case .interleaved(let rtp, let rtcp):
            return "RTP/AVP/TCP;unicast;interleaved=\(rtp)-\(rtcp);ssrc=\(ssrcText)"
        }
    }
}
