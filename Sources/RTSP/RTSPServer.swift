import Access
import Live
import Logging
import RTP
import System
import Threading

/// RTSP 1.0 (RFC 2326) clients of the live stream — NVRs, home-automation hubs, ffmpeg,
/// VLC — on one TCP port, with RTP over UDP unicast or interleaved in the connection.
/// One thread of the server's own reads every connection, answers every request and sends
/// every client its packets; it reads the live feed while a client plays, pictures
/// (RFC 6184) and AAC (RFC 3640) packetized once for every RTP reader. No client has a
/// thread, and none has a copy of the stream: each gets its own RTP headers around the
/// payloads made once.
public final class RTSPServer: Sendable {
    public struct Settings: Sendable {
        /// The address to bind (the web server's).
        public var host: String
        public var port: UInt16
        /// Connections at once, and from one client address.
        public var maxClients: Int
        public var perAddress: Int
        /// A session nothing is heard from for this long is ended (RFC 2326 §12.37).
        public var sessionTimeoutSeconds: Int
        /// Who may watch (Digest, RFC 2617 §3.2 as RTSP clients implement it); nil: anyone.
        public var access: AccessGate?

        public init(host: String, port: UInt16, maxClients: Int, perAddress: Int = 8, sessionTimeoutSeconds: Int = 60, access: AccessGate? = nil) {
            self.access = access
            self.host = host
            self.port = port
            self.maxClients = max(1, maxClients)
            self.perAddress = max(1, perAddress)
            self.sessionTimeoutSeconds = max(1, sessionTimeoutSeconds)
        }
    }

    public struct SessionStatus: Sendable, Equatable {
        public var id: String
        public var client: String
        /// `tcp` (interleaved) or `udp`.
        public var transport: String
        public var playing: Bool
        public var ageMs: Int64
        public var packets: Int, bytes: Int
        /// Pictures not sent because the client could not take them (it then waited for
        /// the next IDR).
        public var dropped: Int
    }

    public let port: UInt16
    /// The server's RTP and RTCP ports for UDP clients.
    public let mediaPorts: (rtp: UInt16, rtcp: UInt16)
    let settings: Settings
    /// The RTSP port and its connections (the kernel's TCP, or a test's in memory).
    let streams: StreamPort
    /// The server's RTP and RTCP ports for UDP clients.
    let rtp: DatagramPort
    let rtcp: DatagramPort
    private let thread = StoppableThread()
    var threadStopped: Bool { thread.isStopped }
    let log: Log
    let cname: String
    let ssrc: (video: UInt32, audio: UInt32)
    let feed: LiveFeed
    /// Timers and timeouts; RTCP's NTP times.
    let clock: ServerClock
    /// The sessions as the server's thread last published them, for /api/status.
    let shared = Locked<[SessionStatus]>([])
    let refusals = RefusalLog(perMinute: 20)

    /// About a second of media (30 pictures, 47 AAC frames); further behind, the sender
    /// drops them (clients wait for the next IDR) rather than holding the encoder.
    static let queuedMedia = 90

    public convenience init(settings: Settings, feed: LiveFeed, log: Log, clock: ServerClock = .system) throws {
        let ipv6 = settings.host.contains(":")
        guard let address = SocketAddress(numeric: settings.host, port: settings.port, ipv6: ipv6) else {
            throw ListenError.badHost(service: "rtsp", host: settings.host)
        }
        let listener: FileDescriptor
        do {
            listener = try FileDescriptor.listeningSocket(bound: address)
        } catch let error as Errno {
            throw ListenError.cannotBind(service: "rtsp", address: "TCP \(ipv6 ? "[\(settings.host)]" : settings.host):\(settings.port)", error)
        }
        let (rtp, rtcp) = try Self.portPair(host: address)
        self.init(settings: settings, feed: feed, log: log, clock: clock, streams: try TCPPort(listener), port: try listener.boundAddress().port,
                  rtp: try UDPPort(rtp, waitedOnElsewhere: true), rtcp: try UDPPort(rtcp, waitedOnElsewhere: true), mediaPorts: (try rtp.boundAddress().port, try rtcp.boundAddress().port), thread: true)
    }

    /// `thread` false: no thread of its own; a test runs its turns (`turn`).
    init(settings: Settings, feed: LiveFeed, log: Log, clock: ServerClock, streams: StreamPort, port: UInt16,
         rtp: DatagramPort, rtcp: DatagramPort, mediaPorts: (rtp: UInt16, rtcp: UInt16), thread: Bool) {
        self.streams = streams
        self.port = port
        self.rtp = rtp
        self.rtcp = rtcp
        self.mediaPorts = mediaPorts
        self.settings = settings
        self.feed = feed
        self.clock = clock
        self.log = log
        var generator = SystemRandomNumberGenerator()
        ssrc = (generator.next(), generator.next())
        cname = "onair-" + String(generator.next() as UInt32, radix: 16)
        if thread { self.thread.start(name: "onair-rtsp") { [self] in run() } }
        log.emit(.rtspListening, level: .info, [("port", Int(port)), ("rtp_port", Int(mediaPorts.rtp)), ("rtcp_port", Int(mediaPorts.rtcp))])
    }

    /// An even port for RTP and the next for RTCP (RFC 3550 §11), both chosen from the
    /// kernel's ephemeral range: a few tries find a free pair.
    private static func portPair(host: SocketAddress) throws -> (FileDescriptor, FileDescriptor) {
        var lastError = Errno.addressInUse
        for _ in 0..<32 {
            do {
                let first = try FileDescriptor.datagramSocket(bound: host.with(port: 0), bufferBytes: 1 << 20)
                let port = try first.boundAddress().port
                guard port % 2 == 0, port < 65_535 else { continue }
                let second = try FileDescriptor.datagramSocket(bound: host.with(port: port + 1))
                return (first, second)
            } catch let error as Errno {
                lastError = error
            }
        }
        throw ListenError.cannotBind(service: "rtsp", address: "a UDP port pair on \(host.host)", lastError)
    }

    public func stop() { thread.stop { poke() } }

    deinit { stop() }

    func poke() { streams.wake() }

    public var sessions: [SessionStatus] { shared.withLock { $0 } }
}

/// One picture's or one AAC frame's RTP payloads, made once for every client, with the
/// RTP timestamp on its track's clock.
struct OutgoingMedia {
    enum Kind: Equatable {
        case picture(isSync: Bool)
        case sound
    }
    var kind: Kind
    var payloads: [[UInt8]]
    var timestamp: UInt32
}

/// What RTSP logs.
extension Event {
    public static let rtspListening = Event("rtsp.listening")
    public static let rtspPlaying = Event("rtsp.playing")
    public static let rtspEnded = Event("rtsp.ended")
    /// A connection without a session closed (a DESCRIBE-only client, one refused): why.
    public static let rtspClosed = Event("rtsp.closed")
    public static let rtspRefused = Event("rtsp.refused")
}
