import RTP
import System

/// One client's TCP connection as the server's thread keeps it: what it sent that is not
/// yet a whole request, what is waiting to go to it (responses, and interleaved media),
/// and the session it opened. Owned by that one thread; time is given.
final class Connection {
    let socket: StreamConnection
    let peer: SocketAddress
    /// The client's address as text (the per-address limit counts these).
    let client: String
    var parser = RTSPParser()
    /// When something last came from the client (a request, interleaved RTCP).
    var lastHeard: Int64
    /// When it was accepted (the oldest idle connection gives its place first).
    let opened: Int64
    /// Since when part of a request has waited for the rest (a client that trickles a
    /// head byte by byte is not let hold its connection).
    var partialSince: Int64?
    var session: Session?
    /// Close once what is queued has gone (after an answer to a request that cannot be
    /// read past).
    var closeAfterFlush = false
    private var out: [UInt8] = []
    private var sent = 0

    /// What may wait to go to one client: about two seconds of a 4 Mbit/s stream. A
    /// client further behind loses pictures until the next IDR rather than holding
    /// memory or growing its delay.
    static let outputLimit = 1 << 20
    /// While this much waits, the client's requests are not read: a client that pipelines
    /// requests and never reads the answers is held back by TCP, not by onair's memory.
    static let readPause = 64 << 10
    /// Answers beyond the media's limit: one turn's reading (at most 64 KiB of requests)
    /// can make this much; past it the client is closed (it does not read).
    static let answerLimit = outputLimit + (1 << 20)

    /// The client's address as the per-address limits count it (IPv6 by its /64).
    let group: [UInt8]
    /// Whether the connection may read requests now (not too much waits to go).
    var reading: Bool { waiting < Self.readPause }

    init(socket: StreamConnection, peer: SocketAddress, now: Int64) {
        self.socket = socket
        self.peer = peer
        client = peer.host
        group = SocketAddress.clientGroup(client)
        lastHeard = now
        opened = now
    }

    var waiting: Int { out.count - sent }

    /// Queues `bytes`; false (and nothing queued) when the client is too far behind: for
    /// media past `outputLimit`, for answers past `answerLimit`.
    @discardableResult
    func queue(_ bytes: [UInt8], media: Bool = false) -> Bool {
        if waiting + bytes.count > (media ? Self.outputLimit : Self.answerLimit) { return false }
        out += bytes
        return true
    }

    /// Writes what the socket takes now; throws when the client is gone.
    func flush() throws {
        while sent < out.count {
            let count = try out.withUnsafeBytes { try socket.sendSome(UnsafeRawBufferPointer(rebasing: $0[sent...])) }
            if count == 0 { break }
            sent += count
        }
        if sent == out.count {
            out.removeAll(keepingCapacity: out.capacity <= 1 << 16)
            sent = 0
        } else if sent > 1 << 16 && sent * 2 > out.count {
            out.removeFirst(sent)
            sent = 0
        }
    }
}

/// An RTSP session (§3): the tracks a client set up, each with its transport and this
/// client's RTP numbering, and whether it plays.
final class Session {
    let id: String
    /// The live stream it was set up on.
    let stream: String
    let created: Int64
    var tracks: [Int: Track] = [:]
    var playing = false
    /// Nothing is sent until an IDR: a decoder can begin nowhere else.
    var waitingForSync = true
    var stats = Stats()

    struct Stats {
        var packets = 0, bytes = 0, dropped = 0
    }

    struct Track {
        let transport: RTSPTransport
        /// Where UDP packets go: the client's address at its RTP and RTCP ports.
        let destination: (rtp: SocketAddress, rtcp: SocketAddress)?
        let ssrc: UInt32
        /// The RTP clock (90000, or the sound's sample rate).
        let clockRate: Int64
        var nextSequence: UInt16
        var packets: UInt32 = 0
        var octets: UInt32 = 0

        init(transport: RTSPTransport, destination: (rtp: SocketAddress, rtcp: SocketAddress)?, ssrc: UInt32, clockRate: Int64) {
            self.transport = transport
            self.destination = destination
            self.ssrc = ssrc
            self.clockRate = clockRate
            var generator = SystemRandomNumberGenerator()
            // Below 2^15, so no client mistakes the first packets for a wrap (RFC 3550 §A.1).
            nextSequence = UInt16.random(in: 0..<0x8000, using: &generator)
        }
    }

    init(id: String, stream: String, created: Int64) {
        self.id = id
        self.stream = stream
        self.created = created
    }

    var transportName: String {
        tracks.values.contains { if case .interleaved = $0.transport { return true } else { return false } } ? "tcp" : "udp"
    }

    /// The RTP packets of `media` for track `index`, numbered for this client.
    func packets(_ media: OutgoingMedia, track index: Int, payloadType: UInt8) -> [[UInt8]] {
        guard var track = tracks[index] else { return [] }
        defer { tracks[index] = track }
        return media.payloads.enumerated().map { offset, payload in
            defer {
                track.nextSequence &+= 1
                track.packets &+= 1
                track.octets &+= UInt32(truncatingIfNeeded: payload.count)
                stats.packets += 1
                stats.bytes += payload.count
            }
            return RTPPacket(marker: offset == media.payloads.count - 1, payloadType: payloadType, sequenceNumber: track.nextSequence,
                             timestamp: media.timestamp, ssrc: track.ssrc, payload: payload).serialized()
        }
    }

    /// A sender report for each track (RFC 3550 §6.4.1): now on the wall clock and on the
    /// track's RTP clock — both from the capture clock, so a client lines sound and
    /// picture up — with this client's counts, and the CNAME.
    func senderReports(ntpTime: UInt64, monotonic: Int64, cname: String) -> [(track: Int, packet: [UInt8])] {
        tracks.sorted { $0.key < $1.key }.map { index, track in
            let report = RTCPPacket.SenderReport(ssrc: track.ssrc, ntpTime: ntpTime, rtpTime: RTPClock.timestamp(monotonic, rate: track.clockRate),
                                                 packetCount: track.packets, octetCount: track.octets)
            return (index, RTCPPacket.senderReportPacket(report, cname: cname))
        }
    }
}

/// `$`, the channel, the length, the packet (RFC 2326 §10.12).
func interleaved(_ packet: [UInt8], channel: UInt8) -> [UInt8] {
    [UInt8(ascii: "$"), channel, UInt8(truncatingIfNeeded: packet.count >> 8), UInt8(truncatingIfNeeded: packet.count)] + packet
}
