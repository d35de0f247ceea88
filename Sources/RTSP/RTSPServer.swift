import Access
import Logging
import Media
import RTP
import System
import Threading

/// RTSP 1.0 (RFC 2326) clients of the live stream — NVRs, home-automation hubs, ffmpeg,
/// VLC — on one TCP port, with RTP over UDP unicast or interleaved in the connection.
/// Pictures come from the live output's thread and are packetized there once (RFC 6184,
/// the packetizer WebRTC uses; AAC per RFC 3640); one thread of the server's own reads
/// every connection, answers every request and sends every client its packets. No client
/// has a thread, and none has a copy of the stream: each gets its own RTP headers around
/// the payloads made once.
public final class RTSPServer: RealTimeOutput, Sendable {
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
    let listener: FileDescriptor
    let rtpSocket: FileDescriptor
    let rtcpSocket: FileDescriptor
    let wake: (read: FileDescriptor, write: FileDescriptor)
    private let thread = StoppableThread()
    var threadStopped: Bool { thread.isStopped }
    let log: Log
    let cname: String
    let ssrc: (video: UInt32, audio: UInt32)
    let packetizer = H264Packetizer(maximumPayload: 1400)
    let aac = AACPacketizer(maximumPayload: 1400)
    let shared = Locked(Shared())
    let refusals = RefusalLog(perMinute: 20)

    /// What the live output's thread and the server's thread hand each other.
    struct Shared {
        var stream: LiveStream?
        /// Media packetized once, in the order made, for the server's thread to send.
        var media: [OutgoingMedia] = []
        /// Media were dropped: every client begins again at the next IDR.
        var overflowed = false
        /// Sessions playing (the live thread packetizes only while there are some).
        var playing = 0
        var sessions: [SessionStatus] = []
    }

    /// The live stream as DESCRIBE tells it: its parameter sets (once its first IDR came)
    /// and its sound.
    struct LiveStream {
        var id: String
        var sps: [UInt8] = []
        var pps: [UInt8] = []
        var audio: RealTimeStream.Audio?
        /// Asks the live encoder for an IDR (a client began to play).
        var askForPicture: @Sendable () -> Void = {}
    }

    /// About a second of media; further behind, the sender drops them (clients wait for
    /// the next IDR) rather than holding the encoder.
    static let queuedMedia = 90

    public init(settings: Settings, log: Log) throws {
        let ipv6 = settings.host.contains(":")
        guard let address = SocketAddress(numeric: settings.host, port: settings.port, ipv6: ipv6) else {
            throw ListenError.badHost(service: "rtsp", host: settings.host)
        }
        do {
            listener = try FileDescriptor.listeningSocket(bound: address)
            port = try listener.boundAddress().port
        } catch let error as Errno {
            throw ListenError.cannotBind(service: "rtsp", address: "TCP \(ipv6 ? "[\(settings.host)]" : settings.host):\(settings.port)", error)
        }
        (rtpSocket, rtcpSocket) = try Self.portPair(host: address)
        mediaPorts = (try rtpSocket.boundAddress().port, try rtcpSocket.boundAddress().port)
        wake = try makePipe(nonBlocking: true)
        self.settings = settings
        self.log = log
        var generator = SystemRandomNumberGenerator()
        ssrc = (generator.next(), generator.next())
        cname = "onair-" + String(generator.next() as UInt32, radix: 16)
        thread.start(name: "onair-rtsp") { [self] in run() }
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

    func poke() {
        _ = try? [UInt8(1)].withUnsafeBytes { try wake.write.write($0) }
    }

    public var sessions: [SessionStatus] { shared.withLock { $0.sessions } }

    // MARK: The live stream (the live output's thread)

    public func began(_ stream: RealTimeStream) {
        shared.withLock { $0.stream = LiveStream(id: stream.id, audio: stream.audio, askForPicture: stream.askForPicture) }
    }

    public func picture(_ picture: RealTimePicture) {
        let playing = shared.withLock { shared -> Int in
            if picture.isSync, shared.stream != nil, !picture.sps.isEmpty, !picture.pps.isEmpty {
                shared.stream?.sps = picture.sps
                shared.stream?.pps = picture.pps
            }
            return shared.playing
        }
        guard playing > 0, let units = try? H264.splitLengthPrefixed(picture.accessUnit) else { return }
        let payloads = packetizer.payloads(units, parameterSets: picture.isSync ? [picture.sps, picture.pps] : [])
        queue(OutgoingMedia(kind: .picture(isSync: picture.isSync), payloads: payloads, timestamp: RTPClock.video(picture.captureTime)))
    }

    public func encodedSound(_ sound: RealTimeSound) {
        let (playing, rate) = shared.withLock { ($0.playing, $0.stream?.audio?.sampleRate) }
        guard playing > 0, let rate else { return }
        let payloads = aac.payloads(sound.accessUnit)
        guard !payloads.isEmpty else { return }
        queue(OutgoingMedia(kind: .sound, payloads: payloads, timestamp: RTPClock.timestamp(sound.captureTime, rate: Int64(rate))))
    }

    public func ended(stream id: String) {
        shared.withLock { if $0.stream?.id == id { $0.stream = nil } }
        poke()
    }

    private func queue(_ media: OutgoingMedia) {
        shared.withLock { shared in
            if shared.media.count >= Self.queuedMedia {
                shared.media.removeAll()
                shared.overflowed = true
            }
            shared.media.append(media)
        }
        poke()
    }
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
