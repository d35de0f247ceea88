import Live
import Logging
import RTP
import System
import Threading

/// The server's one thread, in turns: one wait over the RTSP port, every connection and
/// the RTP and RTCP ports (one poll(2) on the kernel's); the requests that came, what the
/// live feed published sent to each playing client in turn, and every second the sender
/// reports and the sessions' timeouts. A test runs the turns itself, on in-memory ports
/// and a manual clock.
extension RTSPServer {
    /// What only this thread touches.
    final class Clients {
        var connections: [Connection] = []
        var sessions: [String: Session] = [:]
        var nextReports: Int64 = 0
        /// After an accept that failed for want of descriptors, the listener rests until
        /// then (a level-triggered poll would spin on it).
        var listenerRestsUntil: Int64 = 0
        /// The server's place in the live feed, while a client plays.
        var reader: LiveReader?
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
    }

    /// A head must be whole this long after its first byte came.
    static let requestNanoseconds: Int64 = 10_000_000_000

    func run() {
        let clients = Clients()
        while !threadStopped { turn(clients, timeoutMs: 100) }
        for connection in clients.connections { close(connection, clients: clients, reason: "the server stopped") }
    }

    /// One turn: waits at most `timeoutMs` for something to do, then answers what came,
    /// takes new connections, hears RTCP, sends what the feed published and keeps time.
    func turn(_ clients: Clients, timeoutMs: Int32) {
        let listening = clock.now() >= clients.listenerRestsUntil
        // The connections polled, by position (accepting below appends to the list).
        let polled = clients.connections
        // A connection with too much waiting to go is not read until it drains.
        let watched = polled.map { connection -> (StreamConnection, Poll.Events) in
            var events: Poll.Events = connection.reading ? .readable : []
            if connection.waiting > 0 { events.insert(.writable) }
            return (connection.socket, events)
        }
        let ready = streams.wait(accepting: listening, connections: watched, datagrams: [rtcp, rtp], timeoutMs: timeoutMs)
        let later = clock.now()
        for (connection, events) in zip(polled, ready.connections) where !events.isEmpty {
            serve(connection, events: events, clients: clients, now: later)
        }
        if ready.accept { accept(clients, now: later) }
        receiveRTCP(clients, now: later)
        sendMedia(to: clients)
        tick(clients, now: later)
    }

    // MARK: Connections

    private func accept(_ clients: Clients, now: Int64) {
        for _ in 0..<16 {
            let taken: (StreamConnection, SocketAddress)?
            do { taken = try streams.accept() } catch {
                refusals.emit(.rtspRefused, to: log, [("reason", "accept: \(error)")])
                clients.listenerRestsUntil = now + 100_000_000
                return
            }
            guard let (socket, peer) = taken else { return }
            let connection = Connection(socket: socket, peer: peer, now: now)
            let group = connection.group
            let fromClient = clients.connections.filter { $0.group == group }.count
            if fromClient < settings.perAddress, clients.connections.count >= settings.maxClients,
               let idle = clients.connections.filter({ $0.session?.playing != true }).min(by: { $0.opened < $1.opened }) {
                // A connection that plays nothing gives its place to a new one: idle
                // connections kept alive cannot keep a real client out.
                close(idle, clients: clients, reason: "its place went to a new client: it played nothing while every place was taken")
            }
            let refusal: String? = clients.connections.count >= settings.maxClients ? "\(settings.maxClients) RTSP clients already (rtsp.max_clients)"
                : fromClient >= settings.perAddress ? "\(settings.perAddress) RTSP clients from \(connection.client) already (rtsp.max_clients_per_address)" : nil
            if let refusal {
                // Told at once, without waiting for its first request: it holds nothing.
                refusals.emit(.rtspRefused, to: log, [("client", connection.client), ("status", 503), ("reason", refusal)])
                _ = try? RTSPResponse(status: 503, headers: [("Retry-After", "10")]).serialized(cseq: nil).withUnsafeBytes { try socket.sendSome($0) }
                socket.close()
                continue
            }
            clients.connections.append(connection)
        }
    }

    /// What a connection sent (requests answered in order, interleaved RTCP taken as a
    /// sign of life), and what waits to go to it.
    private func serve(_ connection: Connection, events: Poll.Events, clients: Clients, now: Int64) {
        do {
            if connection.reading && (events.contains(.readable) || events.contains(.hangUp) || events.contains(.error)) {
                // A bounded read per turn, so one client's flood cannot starve the others.
                for _ in 0..<4 where connection.reading {
                    guard let count = try clients.buffer.withUnsafeMutableBytes({ try connection.socket.receiveSome(into: $0) }) else { break }
                    guard count > 0 else { throw Closed.byClient }
                    try read(Array(clients.buffer[0..<count]), from: connection, clients: clients, now: now)
                    if count < clients.buffer.count || connection.closeAfterFlush { break }
                }
            }
            try connection.flush()
            if connection.closeAfterFlush && connection.waiting == 0 { throw Closed.afterRefusal }
        } catch {
            close(connection, clients: clients, reason: (error as? Closed)?.description ?? "\(error)")
        }
    }

    enum Closed: Error, CustomStringConvertible {
        case byClient, afterRefusal, notReading
        var description: String {
            switch self {
            case .byClient: return "the client closed the connection"
            case .afterRefusal: return "a request that could not be read"
            case .notReading: return "the client sends requests and does not read the answers"
            }
        }
    }

    private func read(_ bytes: [UInt8], from connection: Connection, clients: Clients, now: Int64) throws {
        guard !connection.closeAfterFlush else { return }
        let messages: [RTSPMessage]
        do { messages = try connection.parser.feed(bytes) } catch let error as RTSPParseError {
            // The request cannot be read past: its status, then the connection ends.
            connection.queue(refuse(error.status, error.description, connection).serialized(cseq: nil))
            connection.closeAfterFlush = true
            return
        }
        for message in messages {
            connection.lastHeard = now
            switch message {
            case .request(let request):
                let response: RTSPResponse
                if let cseq = request.cseq {
                    response = respond(request, on: connection, clients: clients, now: now)
                } else {
                    response = refuse(400, "\(request.method.prefix(20)) without a valid CSeq", connection)
                }
                guard connection.queue(response.serialized(cseq: request.cseq)) else { throw Closed.notReading }
            case .interleaved:
                // The client's RTCP (receiver reports) over TCP: heard, nothing to answer.
                continue
            }
        }
        connection.partialSince = connection.parser.pending > 0 ? (connection.partialSince ?? now) : nil
        publish(clients, now: now)
    }

    /// Receiver reports over UDP: a sign of life of the session they come from.
    private func receiveRTCP(_ clients: Clients, now: Int64) {
        for port in [rtcp, rtp] {
            for _ in 0..<256 {
                guard let (_, from) = port.receive(into: &clients.buffer) else { break }
                let bytes = from.bytes
                for connection in clients.connections where connection.peer.bytes == bytes {
                    guard let session = connection.session, session.tracks.values.contains(where: { $0.destination?.rtcp.port == from.port }) else { continue }
                    connection.lastHeard = now
                }
            }
        }
    }

    func end(_ session: Session, clients: Clients, connection: Connection, reason: String) {
        guard clients.sessions[session.id] === session else { return }
        clients.sessions[session.id] = nil
        if connection.session === session { connection.session = nil }
        log.emit(.rtspEnded, level: .info, [("session", session.id), ("client", connection.client), ("reason", reason),
                                            ("packets", session.stats.packets), ("dropped", session.stats.dropped)])
        publish(clients, now: clock.now())
    }

    private func close(_ connection: Connection, clients: Clients, reason: String) {
        // A session ends with its connection: a client killed mid-stream is reaped at once.
        if let session = connection.session {
            end(session, clients: clients, connection: connection, reason: reason)
        } else {
            log.emit(.rtspClosed, level: .info, [("client", connection.client), ("reason", reason)])
        }
        clients.connections.removeAll { $0 === connection }
        connection.socket.close()
        publish(clients, now: clock.now())
    }

    // MARK: Media

    /// Joins the live feed when a client begins to play, leaves it when none does.
    func read(for clients: Clients) {
        let playing = clients.connections.contains { $0.session?.playing == true }
        if playing, clients.reader == nil {
            clients.reader = feed.join("rtsp", wants: [.pictures, .aac, .rtp], capacity: Self.queuedMedia) { [weak self] in self?.poke() }
        } else if !playing, let reader = clients.reader {
            feed.leave(reader)
            clients.reader = nil
        }
    }

    /// What the feed published since the last turn, to every playing client in the order it
    /// came. A client begins at an IDR, with a sender report on each track first (so it
    /// can line them up from the first packet); one that cannot take a picture, and every
    /// client when the server fell a whole ring behind, waits for the next IDR.
    private func sendMedia(to clients: Clients) {
        guard let taken = clients.reader?.take(), !taken.items.isEmpty || taken.overflowed else { return }
        let media = taken.items.compactMap { item -> OutgoingMedia? in
            switch item {
            case .picture(let picture): OutgoingMedia(kind: .picture(isSync: picture.isSync), payloads: picture.payloads, timestamp: picture.rtpTimestamp)
            case .sound(let sound): OutgoingMedia(kind: .sound, payloads: sound.payloads, timestamp: sound.rtpTimestamp)
            case .opus, .encoded, .began, .ended: nil
            }
        }
        for connection in clients.connections {
            guard let session = connection.session, session.playing else { continue }
            if taken.overflowed { session.waitingForSync = true }
            for item in media { send(item, to: session, on: connection) }
            try? connection.flush()
        }
    }

    private func send(_ media: OutgoingMedia, to session: Session, on connection: Connection) {
        let index: Int
        let payloadType: UInt8
        switch media.kind {
        case .picture(let isSync):
            index = 0
            payloadType = Self.videoPayloadType
            if session.waitingForSync && session.tracks[0] != nil {
                guard isSync else { return }
                session.waitingForSync = false
                sendReports(to: session, on: connection)
            }
        case .sound:
            index = 1
            payloadType = Self.audioPayloadType
            if session.waitingForSync {
                // The sound waits for the picture's IDR too, unless the picture is not set up.
                guard session.tracks[0] == nil else { return }
                session.waitingForSync = false
                sendReports(to: session, on: connection)
            }
        }
        guard let track = session.tracks[index] else { return }
        let packets = session.packets(media, track: index, payloadType: payloadType)
        var delivered = true
        switch track.transport {
        case .interleaved(let channel, _):
            let bytes = packets.flatMap { interleaved($0, channel: channel) }
            delivered = connection.queue(bytes, media: true)
        case .udp:
            guard let destination = track.destination else { return }
            for packet in packets where !rtp.send(packet, to: destination.rtp) { delivered = false }
        }
        if !delivered, index == 0 {
            session.stats.dropped += 1
            session.waitingForSync = true
        }
    }

    private func sendReports(to session: Session, on connection: Connection) {
        let ntp = RTCPPacket.ntpTime(unixNanoseconds: clock.wall())
        for (index, report) in session.senderReports(ntpTime: ntp, monotonic: clock.now(), cname: cname) {
            guard let track = session.tracks[index] else { continue }
            switch track.transport {
            case .interleaved(_, let channel):
                connection.queue(interleaved(report, channel: channel), media: true)
            case .udp:
                if let destination = track.destination { rtcp.send(report, to: destination.rtcp) }
            }
        }
    }

    // MARK: Time

    /// Every second: sender reports to each playing client, and the end of connections
    /// and sessions nothing was heard from.
    private func tick(_ clients: Clients, now: Int64) {
        let timeout = Int64(settings.sessionTimeoutSeconds) * 1_000_000_000
        for connection in clients.connections {
            if let since = connection.partialSince, now - since > Self.requestNanoseconds {
                close(connection, clients: clients, reason: "a request not finished in 10 s")
            } else if now - connection.lastHeard > timeout {
                close(connection, clients: clients, reason: "nothing heard for \(settings.sessionTimeoutSeconds) s")
            }
        }
        guard now >= clients.nextReports else { return }
        clients.nextReports = now + 1_000_000_000
        for connection in clients.connections {
            guard let session = connection.session, session.playing, !session.waitingForSync else { continue }
            sendReports(to: session, on: connection)
            try? connection.flush()
        }
        publish(clients, now: now)
    }

    /// The sessions as other threads read them, and how many play.
    private func publish(_ clients: Clients, now: Int64) {
        var table: [SessionStatus] = []
        for connection in clients.connections {
            guard let session = connection.session else { continue }
            table.append(SessionStatus(id: session.id, client: connection.client, transport: session.transportName, playing: session.playing,
                                       ageMs: (now - session.created) / 1_000_000, packets: session.stats.packets, bytes: session.stats.bytes,
                                       dropped: session.stats.dropped))
        }
        table.sort { $0.ageMs > $1.ageMs }
        // The feed joined or left before the table says so (/api/status shows both).
        read(for: clients)
        shared.withLock { $0 = table }
    }
}
