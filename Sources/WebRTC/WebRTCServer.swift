import Codecs
import Live
import Logging
import RTP
import SDP
import STUN
import System
import Threading

/// WHEP viewers of the live stream (draft-ietf-wish-whep) on one UDP port: offers come
/// from the web server's thread, and one thread of its own does every viewer's ICE-lite,
/// DTLS and SRTP. It reads the live feed while it has viewers (one reader for all of
/// them): each picture comes packetized once (RFC 6184) and only its headers and
/// encryption are made per viewer; no viewer has a thread, a socket or a copy of the stream.
public final class WebRTCServer: Sendable {
    public struct Settings: Sendable {
        /// The address to bind (the web server's): a wildcard offers every interface's.
        public var host: String
        public var port: UInt16
        public var maxViewers: Int
        /// Sessions one HTTP client address may hold.
        public var perAddress: Int

        public init(host: String, port: UInt16, maxViewers: Int, perAddress: Int = 4) {
            self.host = host
            self.port = port
            self.maxViewers = max(1, maxViewers)
            self.perAddress = max(1, perAddress)
        }
    }

    /// What `offer` gives: the answer and the session's id, or why not (an HTTP status, a
    /// line, and when to try again).
    public enum OfferResult: Sendable, Equatable {
        case answer(sdp: String, id: String)
        case refused(status: Int, message: String, retryAfter: Int?)
    }

    public struct SessionStatus: Sendable, Equatable {
        /// A short name for status pages and logs; not the session's resource, which is a
        /// capability (whoever knows it may end the session) and is never listed.
        public var id: String
        /// The resource id (`/whep/session/<resource>`), known only to the offerer.
        var resource: String
        /// When the offer came (CLOCK_MONOTONIC ns).
        var since: Int64
        /// The client's address as the per-address limit counts it.
        var group: [UInt8]
        public var client: String
        /// Where the media go, once the browser nominated a pair.
        public var media: String?
        public var ageMs: Int64
        public var connected: Bool
        public var packets: Int, bytes: Int, audioPackets: Int, nacks: Int, retransmitted: Int, pictureLosses: Int
        public var roundTripMs: Double?
        /// Offer to first picture sent.
        public var firstPictureMs: Int64?
    }

    public let port: UInt16
    public let certificate: DTLSCertificate
    let settings: Settings
    /// The UDP port every viewer's datagrams go through (in memory, in a test).
    let datagrams: DatagramPort
    let candidates: [PeerAddress]
    private let thread = StoppableThread()
    var threadStopped: Bool { thread.isStopped }
    let log: Log
    let cname: String
    let ssrc: UInt32
    let feed: LiveFeed
    /// Timers, consent and timeouts; RTCP's NTP times.
    let clock: ServerClock
    let shared = Locked(Shared())
    private let refusals = RefusalLog(perMinute: WebRTCServer.refusalsPerMinute)
    /// Offers, and the end of sessions that never checked connectivity: a flood of offers
    /// that displace one another must not flood the log either.
    let offerLog = RefusalLog(perMinute: 60)
    let audioSSRC: UInt32

    /// What the web server's thread and the UDP thread hand each other.
    struct Shared {
        var arriving: [Arrival] = []
        var ending: [String] = []
        /// How long after its capture each of the last pictures reached the sender (ns):
        /// the encoder's share of the glass-to-glass time.
        var senderDelays: [Int64] = []
        /// Sessions by id with the client that opened them (for the limits), as the UDP
        /// thread last saw them.
        var sessions: [String: SessionStatus] = [:]
    }

    /// A new session on its way from the web server's thread to the UDP thread, which owns
    /// it from then on; until then the web server's thread reads only its constants (id,
    /// address group, creation time), which no thread changes.
    struct Arrival: @unchecked Sendable {
        let peer: Peer
        var id: String { peer.id }
    }

    /// About a second of pictures and sound (30 + 50); a sender further behind drops them
    /// (and its viewers wait for the next IDR) rather than holding the encoder.
    static let queuedItems = 80

    /// The server on a UDP port of its own, its thread started.
    public convenience init(settings: Settings, certificate: DTLSCertificate, feed: LiveFeed, log: Log, clock: ServerClock = .system) throws {
        let ipv6 = settings.host.contains(":")
        guard let address = SocketAddress(numeric: settings.host, port: settings.port, ipv6: ipv6) else {
            throw ListenError.badHost(service: "webrtc", host: settings.host)
        }
        let socket: FileDescriptor, port: UInt16
        do {
            socket = try FileDescriptor.datagramSocket(bound: address, bufferBytes: 1 << 20)
            port = try socket.boundAddress().port
        } catch let error as Errno {
            throw ListenError.cannotBind(service: "webrtc", address: "UDP \(ipv6 ? "[\(settings.host)]" : settings.host):\(settings.port)", error)
        }
        let wildcard = settings.host == "0.0.0.0" || settings.host == "::"
        let own = wildcard ? NetworkInterfaces.addresses(ipv6: ipv6, loopback: false) : [address]
        // No interface but loopback (a test machine): the loopback address, so a browser
        // on the board itself still connects.
        let listed = own.isEmpty ? NetworkInterfaces.addresses(ipv6: ipv6, loopback: true) : own
        try self.init(settings: settings, certificate: certificate, feed: feed, log: log, clock: clock, datagrams: try UDPPort(socket),
                      port: port, candidates: listed.map { PeerAddress(address: $0.bytes, port: port) })
    }

    /// The server on `datagrams`, offering `candidates`; with `thread: false` nothing runs
    /// it but its owner's calls of `turn` (a test on virtual time).
    init(settings: Settings, certificate: DTLSCertificate, feed: LiveFeed, log: Log, clock: ServerClock, datagrams: DatagramPort,
         port: UInt16, candidates: [PeerAddress], thread runs: Bool = true) throws {
        self.datagrams = datagrams
        self.port = port
        self.candidates = candidates
        self.settings = settings
        self.certificate = certificate
        self.feed = feed
        self.clock = clock
        self.log = log
        var generator = SystemRandomNumberGenerator()
        ssrc = generator.next()
        audioSSRC = generator.next()
        cname = ICECredentials.random().ufrag
        if runs { thread.start(name: "onair-webrtc") { [self] in run() } }
        log.emit(.webrtcListening, level: .info, [("port", Int(port)), ("candidates", candidates.map(\.description).joined(separator: " ")),
                                                 ("fingerprint", certificate.sdpFingerprint)])
    }

    public func stop() {
        thread.stop { poke() }
    }

    deinit { stop() }

    /// Wakes the UDP thread.
    func poke() { datagrams.wake() }

    // MARK: WHEP (the web server's thread)

    /// A browser's offer (`POST /whep`, or `/whep/<id>` for `stream`): an answer and a
    /// new session, or why not.
    public func offer(_ text: String, client: String, stream requested: String? = nil) -> OfferResult {
        let now = clock.now()
        let offer: SessionDescription
        do { offer = try SessionDescription(parsing: text) } catch {
            return refuse(400, "\(error)", client: client)
        }
        let group = SocketAddress.clientGroup(client)
        let admission = shared.withLock { admit(group, $0) }
        let live = feed.now
        guard let stream = live.stream else { return refuse(503, "no stream is live", client: client, retryAfter: 5) }
        if let requested, requested != stream.id { return refuse(404, "stream \(requested) is not live", client: client) }
        // Sound when the microphone's comes at a rate Opus takes.
        let microphone = live.microphone.flatMap { OpusEncoder.rates.contains($0.rate) && (1...2).contains($0.channels) ? $0 : nil }
        guard let profile = Self.profile(sps: live.sps) else { return refuse(503, "the live stream has not made its first picture yet", client: client, retryAfter: 1) }
        if let refusal = refusal(admission, client: client) { return refusal }
        let local = WHEPAnswer.Local(credentials: .random(), fingerprint: certificate.sdpFingerprint, candidates: candidates,
                                     videoSSRC: ssrc, cname: cname, stream: profile, audioSSRC: microphone == nil ? nil : audioSSRC)
        let answer: WHEPAnswer
        do { answer = try WHEPAnswer(offer: offer, local: local) } catch let refusal as WHEPAnswer.Refusal {
            switch refusal {
            case .noVideo, .noH264, .notReceiving: return refuse(406, refusal.description, client: client)
            default: return refuse(400, refusal.description, client: client)
            }
        } catch {
            return refuse(400, "\(error)", client: client)
        }
        guard let expected = Self.sha256(answer.remoteFingerprint) else {
            return refuse(400, "the offer's fingerprint is not sha-256 (RFC 8122): \(answer.remoteFingerprint.prefix(80))", client: client)
        }
        let id = ICECredentials.random().password.filter { $0.isLetter || $0.isNumber }
        let peer: Peer
        do {
            peer = try Peer(id: id, client: client, now: now, ice: ICELiteSession(local: local.credentials, remote: answer.remote, started: now),
                            video: answer.video, ssrc: ssrc, audio: answer.audio.map { ($0, audioSSRC) }, cname: cname,
                            expectedFingerprint: expected, certificate: certificate)
        } catch {
            return refuse(500, "\(error)", client: client)
        }
        // The places are counted again as the session takes one: other offers may have
        // come while this one was answered.
        let taken = shared.withLock { shared -> Places.Admission in
            let admission = admit(group, shared)
            guard case .admit(let displaced) = admission else { return admission }
            if let displaced {
                shared.sessions[displaced] = nil
                shared.arriving.removeAll { $0.id == displaced }
                shared.ending.append(displaced)
            }
            shared.arriving.append(Arrival(peer: peer))
            return admission
        }
        if let refusal = refusal(taken, client: client) { return refusal }
        poke()
        if case .admit(_?) = taken {
            refusals.emit(.webrtcDisplaced, to: log, [("client", client), ("reason", "a session that never checked connectivity gave its place to a new offer")])
        }
        offerLog.emit(.webrtcOffered, to: log, [("session", peer.name), ("client", client)] + (answer.profileStretched ? [("profile_stretched", true)] : []),
                      level: .info)
        return .answer(sdp: answer.sdp.text, id: id)
    }

    /// Whether a client of `group` may take a place now, from what the UDP thread last
    /// published and the sessions it has not taken yet.
    private func admit(_ group: [UInt8], _ shared: Shared) -> Places.Admission {
        let holders = shared.sessions.values.map { Places.Holder(id: $0.resource, group: $0.group, checked: $0.media != nil, since: $0.since) }
            + shared.arriving.map { Places.Holder(id: $0.id, group: $0.peer.group, checked: false, since: $0.peer.created) }
        return Places.admit(holders, group: group, maximum: settings.maxViewers, perAddress: settings.perAddress)
    }

    private func refusal(_ admission: Places.Admission, client: String) -> OfferResult? {
        switch admission {
        case .admit: return nil
        case .full: return refuse(503, "\(settings.maxViewers) WebRTC viewers already (webrtc.max_viewers)", client: client, retryAfter: 10)
        case .fullFromAddress: return refuse(503, "\(settings.perAddress) WebRTC viewers from \(client) already", client: client, retryAfter: 10)
        }
    }

    /// One line per refusal, at most `refusalsPerMinute` a minute: thousands of offers
    /// thrown at the board must not flood its log (the rest are counted in the next line).
    private func refuse(_ status: Int, _ message: String, client: String, retryAfter: Int? = nil) -> OfferResult {
        refusals.emit(.webrtcRefused, to: log, [("client", client), ("status", status), ("reason", message)])
        return .refused(status: status, message: message, retryAfter: retryAfter)
    }

    static let refusalsPerMinute = 20

    /// `DELETE` on a session's resource: true if there was one.
    public func end(_ id: String) -> Bool {
        let known = shared.withLock { shared -> Bool in
            let known = shared.sessions[id] != nil || shared.arriving.contains { $0.id == id }
            if known { shared.ending.append(id) }
            return known
        }
        if known { poke() }
        return known
    }

    /// The median time from a picture's capture to its reaching the sender, over the last
    /// 128 pictures, in ms; nil before any.
    public var pictureAfterCaptureMs: Double? {
        let delays = shared.withLock { $0.senderDelays }.sorted()
        return delays.isEmpty ? nil : Double(delays[delays.count / 2]) / 1e6
    }

    public var sessions: [SessionStatus] { shared.withLock { Array($0.sessions.values) }.sorted { $0.ageMs > $1.ageMs } }

    /// The H.264 profile of an SPS (RFC 6184 §8.1: its second to fourth bytes).
    static func profile(sps: [UInt8]) -> H264Offer.Profile? {
        sps.count >= 4 ? H264Offer.Profile(profileIDC: sps[1], constraints: sps[2], levelIDC: sps[3]) : nil
    }

    /// `sha-256 AB:CD:…` → the 32 bytes; nil for another hash or a malformed one.
    static func sha256(_ fingerprint: String) -> [UInt8]? {
        let parts = fingerprint.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "sha-256" else { return nil }
        let bytes = parts[1].split(separator: ":").compactMap { $0.count == 2 ? UInt8($0, radix: 16) : nil }
        return bytes.count == 32 ? bytes : nil
    }

    /// A picture at once for a viewer that begins or lost one, not at the grid's next IDR.
    func askForPicture() { feed.askForPicture() }
}
