import Live
import Logging
import RTMP
import System
import Threading

/// One RTMP(S) destination on a thread of its own: a real-time reader of the live feed
/// that connects when a stream begins, publishes it, ends the broadcast when the stream
/// ends, and, whenever the connection fails, tries again after 1, 2, 4 … 30 s for as long
/// as the stream lasts. Nothing it does holds the camera, the encoders, the recording or
/// another destination: the feed hands it pictures and sound without waiting, and what
/// it cannot send in time it drops, up to the next IDR, and says so.
final class RTMPDestination: Sendable {
    let name: String
    private let url: RTMPURL
    private let key: String
    private let feed: LiveFeed
    private let log: Log
    private let pipe: WakePipe
    private let thread = StoppableThread()
    let status: Locked<DestinationStatus>

    /// Items held for the destination between its turns: a few seconds of pictures and sound.
    static let capacity = 1024
    /// A connection that has not gone live by then is given up.
    static let connectSeconds: Int64 = 10
    /// A server that takes nothing for this long is given up.
    static let stallNanoseconds: Int64 = 10_000_000_000
    static let maximumBackoffSeconds = 30
    /// Live this long, a broadcast that fails is tried again after a second.
    static let steadyNanoseconds: Int64 = 30_000_000_000

    init(name: String, url: RTMPURL, key: String, feed: LiveFeed, log: Log) throws {
        self.name = name
        self.url = url
        self.key = key
        self.feed = feed
        self.log = log
        pipe = try WakePipe()
        status = Locked(DestinationStatus(name: name, kind: url.secure ? "rtmps" : "rtmp", host: url.host))
    }

    func start() {
        // The kernel keeps 15 bytes of a thread's name: onair- and 9 of the destination's.
        let short = name.prefix(9)
        thread.start(name: "onair-\(short)") { [self] in run() }
    }

    /// Ends the broadcast in progress (FCUnpublish, deleteStream) and the thread.
    func stop() { thread.stop(waking: pipe.wake) }

    private func run() {
        let reader = feed.join("destination.\(name)", wants: [.streams, .pictures, .aac], capacity: Self.capacity, wake: pipe.wake)
        defer { feed.leave(reader) }
        var stream = feed.now.stream
        var broadcast: Broadcast?
        var attempts = 0
        var retryAt: Int64 = 0
        var lastDropLog: Int64 = 0

        func fail(_ error: String, now: Int64) {
            broadcast?.link.close()
            if let broadcast {
                count(broadcast)
                // A broadcast that ran a while starts the backoff again; one the server
                // drops at once (a refusal it does not say) backs off as a failed connect.
                if now - broadcast.began > Self.steadyNanoseconds { attempts = 0 }
            }
            broadcast = nil
            attempts += 1
            let wait = min(Self.maximumBackoffSeconds, 1 << min(attempts - 1, 5))
            retryAt = now + Int64(wait) * 1_000_000_000
            status.withLock { $0.state = stream == nil ? .idle : .retrying; $0.lastError = error }
            log(.destinationFailed, level: .warn, ("name", name), ("error", error), ("retry_in_s", stream == nil ? 0 : wait))
        }
        func count(_ broadcast: Broadcast) {
            status.withLock {
                $0.bytesSent += broadcast.bytesSent
                $0.framesSent += broadcast.framesSent
                $0.framesDropped += broadcast.framesDropped
                $0.current = (0, 0, 0)
            }
        }
        func end(_ reason: String, now: Int64) {
            guard let ending = broadcast else { return }
            ending.end(now: now)
            count(ending)
            broadcast = nil
            status.withLock { $0.state = .idle }
            log(.destinationEnded, ("name", name), ("reason", reason), ("frames", ending.framesSent), ("dropped", ending.framesDropped),
                ("bytes", ending.bytesSent))
        }

        while !thread.isStopped {
            var now = KernelClock.monotonic()
            if let live = stream, broadcast == nil, now >= retryAt {
                do {
                    broadcast = try connect(live, attempt: attempts)
                } catch LinkError.stopped {
                    break
                } catch {
                    fail("\(error)", now: KernelClock.monotonic())
                }
                now = KernelClock.monotonic()
            }
            var timeoutMs: Int32 = 1000
            if stream != nil, broadcast == nil { timeoutMs = Int32(max(1, min(1000, (retryAt - now) / 1_000_000 + 1))) }
            var watched: [(FileDescriptor, Poll.Events)] = [(pipe.read, .readable)]
            if let broadcast { watched.append((broadcast.link.socket, broadcast.link.events(sending: broadcast.sending))) }
            let ready = (try? Poll.wait(watched, timeoutMs: timeoutMs)) ?? []
            pipe.drain()
            now = KernelClock.monotonic()
            if let current = broadcast, ready.count > 1, !ready[1].isEmpty {
                do {
                    var bytes = try current.link.receive()
                    while !bytes.isEmpty {
                        try current.received(bytes)
                        bytes = try current.link.receive()
                    }
                } catch {
                    fail("\(error)", now: now)
                }
            }
            let taken = reader.take()
            if taken.overflowed {
                broadcast?.lost()
                // Where a stream began or ended may be among what was lost.
                if feed.now.stream?.id != stream?.id {
                    end("the stream ended", now: now)
                    stream = feed.now.stream
                    (attempts, retryAt) = (0, 0)
                }
            }
            var dropped = 0
            for item in taken.items {
                switch item {
                case .began(let began):
                    end("a new stream began", now: now)
                    stream = began
                    (attempts, retryAt) = (0, 0)
                    status.withLock { $0.lastError = nil }
                case .ended(let id) where id == stream?.id:
                    end("the stream ended", now: now)
                    stream = nil
                    status.withLock { $0.state = .idle }
                case .picture(let picture): dropped += broadcast?.picture(picture) ?? 0
                case .sound(let sound): dropped += broadcast?.sound(sound) ?? 0
                default: break
                }
            }
            if dropped > 0, now - lastDropLog > 5_000_000_000 {
                lastDropLog = now
                log(.destinationDropped, level: .warn, ("name", name), ("frames", dropped),
                    ("reason", "the server takes the stream slower than it is made; going on at the next IDR"))
            }
            if let current = broadcast {
                do {
                    try current.write(now: now)
                    if now - current.lastProgress > Self.stallNanoseconds {
                        fail("the server stopped reading (nothing taken for \(Self.stallNanoseconds / 1_000_000_000) s)", now: now)
                    }
                } catch {
                    fail("\(error)", now: now)
                }
            }
            if let broadcast { publishStatus(broadcast, now: now) } else { status.withLock { $0.bitsPerSecond = 0; $0.rateSample = (0, 0) } }
        }
        end("onair stopped", now: KernelClock.monotonic())
    }

    /// Connects, shakes hands and publishes, within `connectSeconds`: a broadcast live on
    /// the server, or the reason it is not.
    private func connect(_ stream: RealTimeStream, attempt: Int) throws -> Broadcast {
        let began = KernelClock.monotonic()
        let deadline = began + Self.connectSeconds * 1_000_000_000
        status.withLock { $0.state = .connecting; if attempt > 0 { $0.reconnects += 1 } }
        log(.destinationConnecting, ("name", name), ("url", url.tcURL), ("attempt", attempt + 1))
        let link = try Link.open(host: url.host, port: url.port, secure: url.secure, deadline: deadline, wake: pipe,
                                 stopped: { [thread] in thread.isStopped })
        var session = PublishSession(url: url, key: key)
        var random = [UInt8](repeating: 0, count: 1528)
        for index in random.indices { random[index] = UInt8.random(in: 0...255) }
        link.flush(session.start(time: 0, random: random), deadline: deadline)
        while true {
            if thread.isStopped { throw LinkError.stopped }
            let now = KernelClock.monotonic()
            guard now < deadline else { throw LinkError.failed("the server did not take the stream within \(Self.connectSeconds) s") }
            _ = try? Poll.wait([(link.socket, link.events(sending: false)), (pipe.read, .readable)],
                               timeoutMs: Int32(min(1000, (deadline - now) / 1_000_000 + 1)))
            pipe.drain()
            let bytes: [UInt8]
            let publishing = session.state == .publishing
            do { bytes = try link.receive() } catch {
                // What YouTube, Twitch and nginx-rtmp's on_publish do with a key they refuse.
                guard publishing, case .failed(let text) = error else { throw error }
                throw LinkError.failed(text + " when asked to publish: is the stream key right?")
            }
            guard !bytes.isEmpty else { continue }
            let (reply, events): ([UInt8], [PublishSession.Event])
            do { (reply, events) = try session.received(bytes) } catch { throw LinkError.failed("\(error)") }
            link.flush(reply, deadline: deadline)
            if events.contains(.live) { break }
        }
        let milliseconds = (KernelClock.monotonic() - began) / 1_000_000
        status.withLock { $0.state = .live; $0.lastError = nil }
        log(.destinationLive, ("name", name), ("url", url.tcURL), ("connect_ms", milliseconds))
        // Begin with a picture now rather than at the next IDR of the grid.
        feed.askForPicture()
        return Broadcast(link: link, session: session, audio: stream.audio, now: KernelClock.monotonic())
    }

    private func publishStatus(_ broadcast: Broadcast, now: Int64) {
        status.withLock { status in
            status.current = (broadcast.bytesSent, broadcast.framesSent, broadcast.framesDropped)
            let elapsed = now - status.rateSample.at
            guard elapsed >= 2_000_000_000 else { return }
            if status.rateSample.at > 0 {
                status.bitsPerSecond = Int(Int64(max(0, status.totalBytes - status.rateSample.bytes)) * 8_000_000_000 / elapsed)
            }
            status.rateSample = (now, status.totalBytes)
        }
    }
}
