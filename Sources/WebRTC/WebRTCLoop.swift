import Live
import Logging
import RTP
import STUN
import System
import Threading

/// The one UDP thread: every datagram on the port, every viewer's timers, and what the
/// live feed published since the last turn, sent to each viewer in turn.
extension WebRTCServer {
    /// What only this thread touches.
    final class Viewers {
        var peers: [String: Peer] = [:]
        var byUfrag: [String: Peer] = [:]
        var byAddress: [PeerAddress: Peer] = [:]
        var nextReports: Int64 = 0
        /// The server's place in the live feed, while it has viewers.
        var reader: LiveReader?
    }

    func run() {
        let viewers = Viewers()
        var buffer = [UInt8](repeating: 0, count: 2048)
        while !threadStopped {
            datagrams.wait(timeoutMs: 100)
            turn(viewers, buffer: &buffer)
        }
        for peer in viewers.peers.values { close(peer, viewers: viewers, reason: "the server stopped") }
        read(for: viewers)
    }

    /// One turn of the thread, at the clock's time: the sessions offered and ended, the
    /// datagrams that came, what the feed published, the timers.
    func turn(_ viewers: Viewers, buffer: inout [UInt8]) {
        let now = clock.now()
        take(into: viewers, now: now)
        // A bounded batch, so a flood of datagrams cannot starve the pictures.
        for _ in 0..<512 {
            guard let (count, from) = datagrams.receive(into: &buffer) else { break }
            receive(Array(buffer[0..<count]), from: from, viewers: viewers, now: now)
        }
        sendFrames(to: viewers, now: now)
        tick(viewers, now: now)
    }

    /// Joins the live feed when the first viewer comes, leaves it with the last: pictures
    /// packetized for RTP, and Opus while a viewer's answer took sound.
    private func read(for viewers: Viewers) {
        var wants: LiveReader.Wants = [.pictures, .rtp]
        if viewers.peers.values.contains(where: { $0.audio != nil }) { wants.insert(.opus) }
        switch (viewers.reader, viewers.peers.isEmpty) {
        case (nil, false):
            viewers.reader = feed.join("webrtc", wants: wants, capacity: Self.queuedItems) { [weak self] in self?.poke() }
        case (let reader?, true):
            feed.leave(reader)
            viewers.reader = nil
        case (let reader?, false) where reader.wants != wants:
            feed.update(reader, wants: wants)
        default:
            break
        }
    }

    /// New sessions, ended ones, and the pictures queued since the last turn. The new ones
    /// leave `arriving` only as the table that lists them is published (in one lock), so
    /// an offer counting the places never misses one.
    private func take(into viewers: Viewers, now: Int64) {
        let (arriving, ending) = shared.withLock { shared -> ([Peer], [String]) in
            defer { shared.ending = [] }
            return (shared.arriving.map(\.peer), shared.ending)
        }
        // Ended first, all before one table is published: a table made between two of them
        // would list the second again, and one made after the new ones are added would
        // list them while `arriving` still counts them.
        for id in ending {
            if let peer = viewers.peers[id] { close(peer, viewers: viewers, reason: "DELETE", publishing: false) }
        }
        for peer in arriving {
            viewers.peers[peer.id] = peer
            viewers.byUfrag[peer.ice.local.ufrag] = peer
        }
        // The feed joined or left before the table says so (/api/status shows both).
        if !arriving.isEmpty || !ending.isEmpty {
            read(for: viewers)
            publish(viewers, now: now, taken: arriving.map(\.id))
        }
    }

    private func receive(_ datagram: [UInt8], from source: SocketAddress, viewers: Viewers, now: Int64) {
        let address = PeerAddress(source)
        switch DatagramKind(datagram) {
        case .stun:
            guard let received = try? STUNMessage.parse(datagram), let ufrag = ICELiteSession.localUfrag(of: received),
                  let peer = viewers.byUfrag[ufrag] else { return }
            let answer = peer.ice.answer(received, from: address, now: now)
            switch answer {
            case .reply(let bytes):
                send(bytes, to: source)
                if peer.ice.selected == address && peer.media == nil {
                    peer.media = source
                    viewers.byAddress[address] = peer
                }
            case .error(let bytes, _):
                send(bytes, to: source)
            case .ignore:
                break
            }
        case .dtls:
            guard let peer = viewers.byAddress[address] else { return }
            do {
                let wasConnected = peer.connected
                for flight in try peer.receiveDTLS(datagram, now: now) { send(flight, to: source) }
                if peer.connected && !wasConnected {
                    askForPicture()
                    log.emit(.webrtcConnected, level: .info, [("session", peer.name), ("media", address.description),
                                                             ("handshake_ms", (now - (peer.handshakeStarted ?? now)) / 1_000_000)])
                    publish(viewers, now: now)
                }
            } catch {
                close(peer, viewers: viewers, reason: "\(error)")
            }
        case .rtp:
            guard let peer = viewers.byAddress[address] else { return }
            for packet in peer.receiveRTCP(datagram, now: now, ntpMiddle: ntpMiddle(now: now)) { send(packet, to: source) }
            if peer.wantsPicture {
                peer.wantsPicture = false
                askForPicture()
            }
        case .unknown:
            return
        }
    }

    /// What the feed published since the last turn, to every viewer that has its keys, in
    /// the order it came. A viewer whose datagrams the socket cannot take now, and every
    /// viewer when the server fell a whole ring behind, waits for the next IDR.
    private func sendFrames(to viewers: Viewers, now: Int64) {
        guard let taken = viewers.reader?.take(), !taken.items.isEmpty || taken.overflowed else { return }
        if taken.overflowed { for peer in viewers.peers.values { peer.resynchronize() } }
        let wallOffset = clock.wallOffset()
        var delays: [Int64] = []
        for item in taken.items {
            switch item {
            case .picture(let picture):
                delays.append(now - picture.captureTime)
                let frame = OutgoingFrame(payloads: picture.payloads, rtpTimestamp: picture.rtpTimestamp, isSync: picture.isSync,
                                          captureNTP: RTCPPacket.ntpTime(unixNanoseconds: picture.captureTime + wallOffset))
                for peer in viewers.peers.values where peer.connected {
                    guard let target = peer.media else { continue }
                    for packet in peer.send(frame, now: now) where !send(packet, to: target) {
                        peer.resynchronize()
                        break
                    }
                }
            case .opus(let packet):
                for peer in viewers.peers.values where peer.connected {
                    if let target = peer.media, let protected = peer.send(audio: packet) { send(protected, to: target) }
                }
            case .sound, .encoded, .began, .ended:
                continue
            }
        }
        guard !delays.isEmpty else { return }
        shared.withLock { shared in
            shared.senderDelays += delays
            if shared.senderDelays.count > 128 { shared.senderDelays.removeFirst(shared.senderDelays.count - 128) }
        }
    }

    /// Every 100 ms: DTLS retransmissions, sessions that have expired; every second, a
    /// sender report to each viewer and the sessions' figures for /api/status.
    private func tick(_ viewers: Viewers, now: Int64) {
        for peer in viewers.peers.values {
            if let reason = peer.expired(now: now) {
                close(peer, viewers: viewers, reason: reason)
                continue
            }
            if !peer.connected, peer.handshakeStarted != nil, let target = peer.media {
                for flight in peer.dtls.retransmit() { send(flight, to: target) }
            }
        }
        guard now >= viewers.nextReports else { return }
        viewers.nextReports = now + 1_000_000_000
        let ntp = RTCPPacket.ntpTime(unixNanoseconds: clock.wall())
        let (video, audio) = (RTPClock.video(now), RTPClock.timestamp(now, rate: 48_000))
        for peer in viewers.peers.values {
            guard let target = peer.media else { continue }
            for report in peer.senderReports(ntpTime: ntp, videoTime: video, audioTime: audio) { send(report, to: target) }
        }
        publish(viewers, now: now)
    }

    private func close(_ peer: Peer, viewers: Viewers, reason: String, publishing: Bool = true) {
        // Told at once (a close_notify), rather than left to notice the silence.
        if let media = peer.media, peer.connected, !peer.dtls.isClosed {
            for datagram in peer.dtls.close() { send(datagram, to: media) }
        }
        viewers.peers[peer.id] = nil
        viewers.byUfrag[peer.ice.local.ufrag] = nil
        if let media = peer.media { viewers.byAddress[PeerAddress(media)] = nil }
        let fields: [(String, Any)] = [("session", peer.name), ("reason", reason), ("packets", peer.stats.packets),
                                       ("nacks", peer.stats.nacks), ("retransmitted", peer.stats.retransmitted)]
        if peer.media == nil { offerLog.emit(.webrtcEnded, to: log, fields, level: .info) } else { log.emit(.webrtcEnded, level: .info, fields) }
        if publishing {
            read(for: viewers)
            publish(viewers, now: clock.now())
        }
    }

    /// The sessions as the web server's thread reads them; `taken`: sessions moved from
    /// `arriving` into the table.
    private func publish(_ viewers: Viewers, now: Int64, taken: [String] = []) {
        var table: [String: SessionStatus] = [:]
        for peer in viewers.peers.values {
            let media = peer.media.map { PeerAddress($0).description }
            table[peer.id] = SessionStatus(id: peer.name, resource: peer.id, since: peer.created, group: peer.group, client: peer.client, media: media, ageMs: (now - peer.created) / 1_000_000,
                                           connected: peer.connected, packets: peer.stats.packets, bytes: peer.stats.bytes,
                                           audioPackets: peer.stats.audioPackets, nacks: peer.stats.nacks, retransmitted: peer.stats.retransmitted,
                                           pictureLosses: peer.stats.pictureLosses, roundTripMs: peer.stats.roundTripMs,
                                           firstPictureMs: peer.stats.firstPicture.map { ($0 - peer.created) / 1_000_000 })
        }
        // A session an offer displaced is not counted again before this thread ends it.
        shared.withLock { shared in
            shared.sessions = table.filter { !shared.ending.contains($0.key) }
            if !taken.isEmpty { shared.arriving.removeAll { taken.contains($0.id) } }
        }
    }

    @discardableResult
    private func send(_ datagram: [UInt8], to address: SocketAddress) -> Bool {
        datagrams.send(datagram, to: address)
    }

    /// The middle 32 bits of the NTP time now (RFC 3550 §6.4.1's unit for LSR and DLSR).
    func ntpMiddle(now: Int64) -> UInt32 {
        UInt32(truncatingIfNeeded: RTCPPacket.ntpTime(unixNanoseconds: now + clock.wallOffset()) >> 16)
    }
}

extension PeerAddress {
    /// A datagram's sender as the socket reported it (an IPv4-mapped address as IPv4).
    init(_ socket: SocketAddress) { self.init(address: socket.bytes, port: socket.port) }
}
