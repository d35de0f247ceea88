import Access
import Basics
import Layout
import Live
import Media
import RTP
import System

/// The answers to each method (RFC 2326 §10), on the server's thread. A client describes
/// the live stream, sets up its tracks (UDP or interleaved), plays, pauses, keeps the
/// session alive, and tears it down; anything out of order gets §11's status for it.
extension RTSPServer {
    static let methods = ["OPTIONS", "DESCRIBE", "SETUP", "PLAY", "PAUSE", "TEARDOWN", "GET_PARAMETER"]

    /// The payload types DESCRIBE gives the tracks.
    static let videoPayloadType: UInt8 = 96
    static let audioPayloadType: UInt8 = 97

    func respond(_ request: RTSPRequest, on connection: Connection, clients: Clients, now: Int64) -> RTSPResponse {
        if let session = connection.session, request.header("Session").map(Self.sessionID) == session.id {
            connection.lastHeard = now
        }
        switch request.method {
        case "OPTIONS":
            return RTSPResponse(status: 200, headers: [("Public", Self.methods.joined(separator: ", "))])
        case "DESCRIBE":
            return admit(request, from: connection) ?? describe(request)
        case "SETUP":
            return admit(request, from: connection) ?? setUp(request, on: connection, clients: clients, now: now)
        case "PLAY", "PAUSE", "TEARDOWN", "GET_PARAMETER":
            guard let id = request.header("Session").map(Self.sessionID) else {
                // GET_PARAMETER without a session is a keep-alive of the connection (§10.8).
                if request.method == "GET_PARAMETER" { return RTSPResponse(status: 200) }
                return refuse(454, "\(request.method) without a Session", connection)
            }
            guard let session = clients.sessions[id] else { return refuse(454, "no session \(id.prefix(40))", connection) }
            guard session === connection.session else { return refuse(454, "session \(id) belongs to another connection", connection) }
            return control(request, session: session, on: connection, clients: clients, now: now)
        case "ANNOUNCE", "RECORD", "SET_PARAMETER", "REDIRECT":
            return RTSPResponse(status: 405, headers: [("Allow", Self.methods.joined(separator: ", "))])
        default:
            return RTSPResponse(status: 501, headers: [("Public", Self.methods.joined(separator: ", "))])
        }
    }

    private func describe(_ request: RTSPRequest) -> RTSPResponse {
        guard let target = RTSPTarget(request.uri), target.track == nil else { return RTSPResponse(status: 404) }
        let live = feed.now
        guard let stream = live.stream, target.names(stream.id) else {
            return live.stream == nil ? RTSPResponse(status: 503, headers: [("Retry-After", "5")]) : RTSPResponse(status: 404)
        }
        guard !live.sps.isEmpty else { return RTSPResponse(status: 503, headers: [("Retry-After", "1")]) }
        let audio = stream.audio.flatMap { try? AudioSpecificConfig(bytes: $0.config) }.map {
            RTSPDescription.Audio(config: $0, payloadType: Self.audioPayloadType)
        }
        var generator = SystemRandomNumberGenerator()
        let sdp = RTSPDescription.sdp(sps: live.sps, pps: live.pps, videoPayloadType: Self.videoPayloadType, audio: audio,
                                      sessionID: generator.next() >> 2, host: "0.0.0.0")
        return RTSPResponse(status: 200, headers: [("Content-Type", "application/sdp"), ("Content-Base", target.base + "/")],
                            body: Array(sdp.utf8))
    }

    private func setUp(_ request: RTSPRequest, on connection: Connection, clients: Clients, now: Int64) -> RTSPResponse {
        guard let target = RTSPTarget(request.uri) else { return refuse(404, "SETUP of \(request.uri.prefix(80))", connection) }
        guard let live = feed.now.stream, target.names(live.id) else { return refuse(404, "SETUP of a stream that is not live", connection) }
        // A single-track URL names the picture (a client that skipped DESCRIBE's controls).
        let index = target.track ?? 0
        guard index == 0 || (index == 1 && live.audio != nil) else { return refuse(404, "SETUP of track \(index), which the stream has not", connection) }
        var session = connection.session
        if let id = request.header("Session").map(Self.sessionID) {
            guard let existing = clients.sessions[id], existing === session else { return refuse(454, "no session \(id.prefix(40))", connection) }
        }
        if let existing = session, existing.stream != live.id { return refuse(455, "the session is for another stream", connection) }
        if session?.playing == true { return refuse(455, "SETUP while playing", connection) }
        let used = session?.tracks.filter { $0.key != index }.values.map(\.transport) ?? []
        let nextChannel = UInt8(2 * index)
        let transport: RTSPTransport
        do { transport = try RTSPTransport.choose(request.header("Transport"), nextChannel: nextChannel) } catch {
            return refuse(461, "\(error)", connection)
        }
        var destination: (rtp: SocketAddress, rtcp: SocketAddress)?
        switch transport {
        case .udp(let rtp, let rtcp):
            destination = (connection.peer.with(port: rtp), connection.peer.with(port: rtcp))
        case .interleaved(let rtp, let rtcp):
            let taken = used.flatMap { used -> [UInt8] in
                if case .interleaved(let a, let b) = used { return [a, b] } else { return [] }
            }
            guard rtp != rtcp, !taken.contains(rtp), !taken.contains(rtcp) else {
                return refuse(461, "interleaved channels \(rtp)-\(rtcp) are taken by another track", connection)
            }
        }
        if session == nil {
            guard clients.sessions.count < settings.maxClients else { return refuse(453, "\(settings.maxClients) sessions already (rtsp.max_clients)", connection) }
            let created = Session(id: Self.newSessionID(), stream: live.id, created: now)
            clients.sessions[created.id] = created
            connection.session = created
            session = created
        }
        guard let session else { return RTSPResponse(status: 500) }
        let clockRate = index == 0 ? Int64(90_000) : Int64(live.audio?.sampleRate ?? 48_000)
        session.tracks[index] = Session.Track(transport: transport, destination: destination, ssrc: index == 0 ? ssrc.video : ssrc.audio,
                                              clockRate: clockRate)
        connection.lastHeard = now
        let serverPorts = destination == nil ? nil : (mediaPorts.rtp, mediaPorts.rtcp)
        return RTSPResponse(status: 200, headers: [("Transport", transport.header(serverPorts: serverPorts, ssrc: index == 0 ? ssrc.video : ssrc.audio)),
                                                   ("Session", "\(session.id);timeout=\(settings.sessionTimeoutSeconds)")])
    }

    private func control(_ request: RTSPRequest, session: Session, on connection: Connection, clients: Clients, now: Int64) -> RTSPResponse {
        connection.lastHeard = now
        let sessionHeader = ("Session", "\(session.id);timeout=\(settings.sessionTimeoutSeconds)")
        switch request.method {
        case "PLAY":
            guard !session.tracks.isEmpty else { return refuse(455, "PLAY before SETUP", connection) }
            guard let target = RTSPTarget(request.uri) else { return RTSPResponse(status: 404) }
            if !session.playing {
                session.playing = true
                session.waitingForSync = true
                // The first picture at once rather than at the grid's next IDR (up to a
                // segment away), once the server reads the feed.
                read(for: clients)
                feed.askForPicture()
                log.emit(.rtspPlaying, level: .info, [("session", session.id), ("client", connection.client), ("transport", session.transportName),
                                                      ("tracks", session.tracks.count)])
            }
            // §12.33: where each track's packets will begin — the next sequence number and
            // the RTP time of now on its clock (the first picture is the next IDR's).
            let info = session.tracks.sorted { $0.key < $1.key }.map { index, track in
                "url=\(target.base)/trackID=\(index);seq=\(track.nextSequence);rtptime=\(RTPClock.timestamp(now, rate: track.clockRate))"
            }
            return RTSPResponse(status: 200, headers: [sessionHeader, ("Range", "npt=now-"), ("RTP-Info", info.joined(separator: ","))])
        case "PAUSE":
            session.playing = false
            return RTSPResponse(status: 200, headers: [sessionHeader])
        case "TEARDOWN":
            end(session, clients: clients, connection: connection, reason: "TEARDOWN")
            return RTSPResponse(status: 200)
        default:
            return RTSPResponse(status: 200, headers: [sessionHeader])
        }
    }

    /// With users in `[access]`, DESCRIBE and SETUP want one (Digest): nil lets the
    /// request in. What follows in a session needs nothing more: the session was set up
    /// by a user, its ID is unguessable, and it is bound to its connection.
    private func admit(_ request: RTSPRequest, from connection: Connection) -> RTSPResponse? {
        guard let access = settings.access else { return nil }
        switch access.check(request.header("Authorization"), method: request.method, uri: request.uri, client: connection.client, channel: .rtsp) {
        case .allowed:
            return nil
        case .challenge(let stale):
            return RTSPResponse(status: 401, headers: access.challenges(.rtsp, stale: stale, client: connection.client).map { ("WWW-Authenticate", $0) })
        case .refused:
            return RTSPResponse(status: 401, headers: access.challenges(.rtsp, stale: false, client: connection.client).map { ("WWW-Authenticate", $0) })
        case .throttled(let seconds):
            // RTSP has no 429 (RFC 2326 §7.1.1): 503 with when to come back (§12.31).
            return RTSPResponse(status: 503, headers: [("Retry-After", "\(seconds)")])
        }
    }

    /// One line (rate-limited) and the status.
    func refuse(_ status: Int, _ reason: String, _ connection: Connection) -> RTSPResponse {
        refusals.emit(.rtspRefused, to: log, [("client", connection.client), ("status", status), ("reason", reason)])
        return RTSPResponse(status: status)
    }

    /// `abc123;timeout=60` → `abc123` (§12.37).
    static func sessionID(_ header: String) -> String {
        String(header.split(separator: ";", maxSplits: 1).first ?? "").trimmingWhitespace()
    }

    static func newSessionID() -> String {
        var generator = SystemRandomNumberGenerator()
        let value: UInt64 = generator.next()
        return String(repeating: "0", count: max(0, 16 - String(value, radix: 16).count)) + String(value, radix: 16).uppercased()
    }
}

/// A request's URL as onair serves it: `rtsp://host[:port]/live` or `/streams/<id>`, and
/// a track's `/trackID=N` after it.
public struct RTSPTarget: Sendable {
    /// The URL without the track (and without a trailing slash or a query).
    public var base: String
    public var path: String
    public var track: Int?

    public init?(_ uri: String) {
        guard uri.count <= 1024, uri.lowercased().hasPrefix("rtsp://") else { return nil }
        let afterScheme = uri.dropFirst("rtsp://".count)
        let slash = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        let authority = String(afterScheme[..<slash])
        var path = String(afterScheme[slash...])
        if let query = path.firstIndex(of: "?") { path = String(path[..<query]) }
        while path.hasSuffix("/") { path.removeLast() }
        if let last = path.split(separator: "/").last, last.lowercased().hasPrefix("trackid=") {
            let digits = last.dropFirst("trackid=".count)
            guard (1...2).contains(digits.count), digits.allSatisfy(\.isASCIIDigit), let index = Int(digits) else { return nil }
            track = index
            path.removeLast(last.count + 1)
        }
        self.path = path.isEmpty ? "/" : path
        base = "rtsp://" + authority + path
    }

    /// Whether the path names the live stream `id`: `/live`, or `/streams/<id>` (the
    /// path of its HTTP folder, so one name serves both).
    public func names(_ id: String) -> Bool { path == "/live" || path == StreamLayout.streamsURL + id }
}
