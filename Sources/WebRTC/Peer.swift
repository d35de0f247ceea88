import Live
import RTP
import STUN
import System

/// One WHEP viewer as the UDP thread keeps it: ICE-lite consent, the DTLS handshake, the
/// SRTP sessions it gives, and the video sender's state for this viewer — its sequence
/// numbers, where it may begin (the next IDR), the last second of packets for NACKs, and
/// what it has cost. Owned by that one thread; time is given (CLOCK_MONOTONIC ns), so
/// every rule here runs on virtual time in the tests.
final class Peer {
    /// The session's resource id: a capability, known only to the offerer.
    let id: String
    /// A short random name for logs and /api/status, unrelated to `id`.
    let name: String
    /// The HTTP client that opened it (the per-address limit counts these).
    let client: String
    /// The client's address as the per-address limit counts it (IPv6 by its /64).
    let group: [UInt8]
    let created: Int64
    var ice: ICELiteSession
    let video: WHEPAnswer.Video
    let ssrc: UInt32
    /// The sound, when the answer took it: its payload type and SSRC.
    let audio: (answer: WHEPAnswer.Audio, ssrc: UInt32)?
    let cname: String
    /// SHA-256 of the certificate the browser must show (from its offer's a=fingerprint).
    let expectedFingerprint: [UInt8]
    let dtls: DTLSEndpoint
    /// Where media go: the address that nominated the pair (USE-CANDIDATE), as the socket
    /// reported it.
    var media: SocketAddress?
    /// When the first DTLS record came: the handshake must finish 10 s after.
    var handshakeStarted: Int64?
    private(set) var srtp: (send: SRTPSession, receive: SRTPSession)?
    var connected: Bool { srtp != nil }

    // The sender's side.
    private var nextSequence: UInt16
    private var nextAudioSequence: UInt16
    /// Nothing is sent until an IDR: a decoder can begin nowhere else.
    private(set) var waitingForSync = true
    private var history: PacketHistory
    var stats = Stats()
    /// It asked for a picture (PLI, FIR): the UDP thread asks the live encoder.
    var wantsPicture = false

    struct Stats {
        var packets = 0, bytes = 0, nacks = 0, retransmitted = 0, pictureLosses = 0
        var audioPackets = 0, audioBytes = 0
        /// Round trip from the last receiver report (RFC 3550 §6.4.1), milliseconds.
        var roundTripMs: Double?
        /// The first picture sent, CLOCK_MONOTONIC ns.
        var firstPicture: Int64?
    }

    /// The playout-delay maximum with sound, in 10 ms units.
    static let playoutMaximumWithSound: UInt8 = 10

    /// The DTLS handshake must finish this long after its first record.
    static let handshakeNanoseconds: Int64 = 10_000_000_000
    /// A viewer whose browser never checks connectivity is gone after this long.
    static let connectNanoseconds: Int64 = 30_000_000_000

    init(id: String, client: String, now: Int64, ice: ICELiteSession, video: WHEPAnswer.Video, ssrc: UInt32,
         audio: (answer: WHEPAnswer.Audio, ssrc: UInt32)? = nil, cname: String, expectedFingerprint: [UInt8], certificate: DTLSCertificate) throws {
        self.audio = audio
        self.id = id
        name = String(ICECredentials.random().ufrag.filter { $0.isLetter || $0.isNumber }.prefix(6))
        self.client = client
        group = SocketAddress.clientGroup(client)
        created = now
        self.ice = ice
        self.video = video
        self.ssrc = ssrc
        self.cname = cname
        self.expectedFingerprint = expectedFingerprint
        dtls = try DTLSEndpoint(certificate: certificate, server: true)
        var generator = SystemRandomNumberGenerator()
        nextSequence = generator.next()
        nextAudioSequence = generator.next()
        history = PacketHistory(capacity: 512, maximumAge: 1_000_000_000)
    }

    // MARK: Arrivals

    /// A DTLS record from the media address: the flight to answer with. Once the handshake
    /// is done, the browser's certificate must be the one its offer named (RFC 8842 §5),
    /// or the session ends.
    func receiveDTLS(_ datagram: [UInt8], now: Int64) throws -> [[UInt8]] {
        if handshakeStarted == nil { handshakeStarted = now }
        let answer = try dtls.receive(datagram)
        if dtls.isClosed { throw Failure.closed }
        if dtls.isConnected && srtp == nil {
            guard dtls.peerFingerprint == expectedFingerprint else { throw Failure.fingerprint }
            guard let keys = dtls.keys else { throw Failure.noSRTPProfile }
            srtp = try SRTPSession.server(keys)
        }
        return answer
    }

    /// SRTCP from the viewer: NACKs answered from the history (protected again), picture
    /// loss counted, the round trip taken from receiver reports. `ntpMiddle` is the
    /// middle 32 bits of the NTP time now (what LSR and DLSR are measured in).
    func receiveRTCP(_ datagram: [UInt8], now: Int64, ntpMiddle: UInt32) -> [[UInt8]] {
        guard let srtp, let plain = try? srtp.receive.unprotect(rtcp: datagram), let packets = try? RTCPPacket.parse(plain) else { return [] }
        var out: [[UInt8]] = []
        for packet in packets {
            switch packet {
            case .nack(_, let media, let lost) where media == ssrc:
                stats.nacks += 1
                for sequence in lost {
                    guard let kept = history.packet(sequence, now: now), let protected = try? srtp.send.protect(rtp: kept) else { continue }
                    stats.retransmitted += 1
                    out.append(protected)
                }
            case .pictureLoss(_, let media) where media == ssrc:
                // The live encoder is asked for an IDR (at most one a second for all
                // viewers; it cuts no segment): the viewer gets a picture soon.
                stats.pictureLosses += 1
                wantsPicture = true
            case .fullIntraRequest:
                stats.pictureLosses += 1
                wantsPicture = true
            case .receiverReport(_, let reports):
                measureRoundTrip(reports, ntpMiddle: ntpMiddle)
            case .senderReport(let report):
                measureRoundTrip(report.reports, ntpMiddle: ntpMiddle)
            default:
                continue
            }
        }
        return out
    }

    private func measureRoundTrip(_ reports: [RTCPPacket.ReportBlock], ntpMiddle: UInt32) {
        if let block = reports.first(where: { $0.ssrc == ssrc }), let rtt = block.roundTrip(arrival: ntpMiddle) {
            stats.roundTripMs = Double(rtt) * 1000 / 65_536
        }
    }

    // MARK: Sending

    /// One packetized picture for this viewer: its RTP headers (its sequence numbers, its
    /// browser's extension ids) around the payloads made once for everyone, protected.
    /// Nothing until the first IDR.
    func send(_ frame: OutgoingFrame, now: Int64) -> [[UInt8]] {
        guard let srtp else { return [] }
        if waitingForSync {
            guard frame.isSync else { return [] }
            waitingForSync = false
        }
        var extensions: [RTPPacket.Extension] = []
        // playout-delay: a 12-bit minimum and maximum in 10 ms units. Picture only: 0/0,
        // each picture shown as soon as it is decoded. With sound, 0/100 ms: the browser
        // keeps sound and picture together by holding the picture as long as its audio
        // buffer holds the sound (about 65 ms in Chromium), which a maximum of 0 forbids
        // (measured: the picture then leads the sound by that much).
        if let id = video.playoutDelayID { extensions.append(.init(id: id, data: [0, 0, audio == nil ? 0 : Self.playoutMaximumWithSound])) }
        // abs-capture-time: the capture time as a 64-bit NTP timestamp.
        if let id = video.absCaptureTimeID {
            var data: [UInt8] = []
            data.appendBigEndian(UInt32(frame.captureNTP >> 32))
            data.appendBigEndian(UInt32(frame.captureNTP & 0xFFFF_FFFF))
            extensions.append(.init(id: id, data: data))
        }
        var out: [[UInt8]] = []
        out.reserveCapacity(frame.payloads.count)
        for (index, payload) in frame.payloads.enumerated() {
            let packet = RTPPacket(marker: index == frame.payloads.count - 1, payloadType: video.payloadType, sequenceNumber: nextSequence,
                                   timestamp: frame.rtpTimestamp, ssrc: ssrc, extensions: index == 0 ? extensions : [], payload: payload).serialized()
            history.keep(packet, sequence: nextSequence, now: now)
            nextSequence &+= 1
            guard let protected = try? srtp.send.protect(rtp: packet) else { continue }
            stats.packets += 1
            stats.bytes += payload.count
            out.append(protected)
        }
        if stats.firstPicture == nil { stats.firstPicture = now }
        return out
    }

    /// The viewer fell behind (the sender's queue overflowed): it begins again at the
    /// next IDR rather than decoding around holes.
    func resynchronize() { waitingForSync = true }

    /// One 20 ms Opus packet (RFC 7587 §4.2: one frame per packet), once keyed; sound
    /// needs no IDR to begin.
    func send(audio frame: OpusPacket) -> [UInt8]? {
        guard let srtp, let audio else { return nil }
        let packet = RTPPacket(payloadType: audio.answer.payloadType, sequenceNumber: nextAudioSequence, timestamp: frame.rtpTimestamp,
                               ssrc: audio.ssrc, payload: frame.payload).serialized()
        nextAudioSequence &+= 1
        guard let protected = try? srtp.send.protect(rtp: packet) else { return nil }
        stats.audioPackets += 1
        stats.audioBytes += frame.payload.count
        return protected
    }

    /// Sender reports (RFC 3550 §6.4.1) with this viewer's counts, the NTP↔RTP mapping of
    /// now on each clock (the picture's 90 kHz, the sound's 48 kHz: one wall clock, so the
    /// browser lines them up), and the CNAME; none before SRTP is keyed.
    func senderReports(ntpTime: UInt64, videoTime: UInt32, audioTime: UInt32) -> [[UInt8]] {
        guard let srtp else { return [] }
        var reports = [RTCPPacket.SenderReport(ssrc: ssrc, ntpTime: ntpTime, rtpTime: videoTime, packetCount: UInt32(truncatingIfNeeded: stats.packets),
                                               octetCount: UInt32(truncatingIfNeeded: stats.bytes))]
        if let audio {
            reports.append(RTCPPacket.SenderReport(ssrc: audio.ssrc, ntpTime: ntpTime, rtpTime: audioTime,
                                                   packetCount: UInt32(truncatingIfNeeded: stats.audioPackets),
                                                   octetCount: UInt32(truncatingIfNeeded: stats.audioBytes)))
        }
        return reports.compactMap { try? srtp.send.protect(rtcp: RTCPPacket.senderReportPacket($0, cname: cname)) }
    }

    // MARK: Ending

    enum Failure: Error, CustomStringConvertible {
        case fingerprint, noSRTPProfile, closed
        var description: String {
            switch self {
            case .closed: return "the browser closed the session (DTLS close_notify)"
            case .fingerprint: return "the browser's DTLS certificate is not the one its offer named"
            case .noSRTPProfile: return "DTLS finished without an SRTP profile"
            }
        }
    }

    /// Why the session is over at `now`, if it is: no connectivity check 30 s after the
    /// offer, a handshake not done 10 s after it began, or consent lapsed (RFC 7675 §5.1).
    func expired(now: Int64) -> String? {
        if media == nil && now - created > Self.connectNanoseconds { return "no ICE connectivity check in 30 s" }
        if let started = handshakeStarted, !connected, now - started > Self.handshakeNanoseconds { return "DTLS handshake not done in 10 s" }
        if ice.consentExpired(now: now) { return "consent expired (no STUN check in 30 s)" }
        return nil
    }
}

/// A picture packetized once for every viewer (RFC 6184 payloads), with its timestamp
/// and capture time.
struct OutgoingFrame {
    var payloads: [[UInt8]]
    var rtpTimestamp: UInt32
    var isSync: Bool
    /// The capture time as NTP (abs-capture-time).
    var captureNTP: UInt64
}

/// The packets sent to one viewer in the last second, by sequence number, for NACKs
/// (RFC 4585 §6.2.1): a ring, so memory is bounded whatever the rate.
struct PacketHistory {
    private var slots: [(sequence: UInt16, sent: Int64, packet: [UInt8])?]
    let maximumAge: Int64

    init(capacity: Int, maximumAge: Int64) {
        slots = Array(repeating: nil, count: max(1, capacity))
        self.maximumAge = maximumAge
    }

    mutating func keep(_ packet: [UInt8], sequence: UInt16, now: Int64) {
        slots[Int(sequence) % slots.count] = (sequence, now, packet)
    }

    /// The packet sent as `sequence`, if it is still kept and not older than a second.
    func packet(_ sequence: UInt16, now: Int64) -> [UInt8]? {
        guard let slot = slots[Int(sequence) % slots.count], slot.sequence == sequence, now - slot.sent <= maximumAge else { return nil }
        return slot.packet
    }
}
