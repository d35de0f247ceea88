import Live
import Logging
import System
import Threading

/// One destination on a thread of its own: a real-time reader of the live feed that
/// connects (`open`: an RTMP publish, an SRT call) when a stream begins, sends it, ends it
/// cleanly when the stream ends, and, whenever the connection fails, tries again after
/// 1, 2, 4 … 30 s for as long as the stream lasts. Nothing it does holds the camera, the
/// encoders, the recording or another destination: the feed hands it pictures and sound
/// without waiting, and what its server does not take in time its outlet drops, up to the
/// next IDR, and says so.
final class DestinationLoop: Sendable {
    typealias Open = @Sendable (_ stream: RealTimeStream, _ wake: WakePipe, _ stopped: () -> Bool) throws -> Outlet

    let name: String
    /// The quality ladder's rung it sends (0: the top, as configured).
    private let rung: Int
    /// What the log says it connects to (never a key or a passphrase).
    private let shown: String
    private let open: Open
    private let feed: LiveFeed
    private let log: Log
    private let pipe: WakePipe
    private let thread = StoppableThread()
    let status: Locked<DestinationStatus>

    /// Items held for the destination between its turns: a few seconds of pictures and sound.
    static let capacity = 1024
    /// A server that takes nothing for this long is given up.
    static let stallNanoseconds: Int64 = 10_000_000_000
    static let maximumBackoffSeconds = 30
    /// Live this long, a broadcast was working: one that fails after is tried again after
    /// a second (a cut every 20 s is a second's gap each time), one that fails sooner (a
    /// server that takes the publish and drops it at once) backs off.
    static let steadyNanoseconds: Int64 = 5_000_000_000
    /// Media captured this long before an outlet went live is not sent to it (a connect
    /// on a busy board may take a second; a studio may call minutes after).
    static let backlogNanoseconds: Int64 = 1_500_000_000

    init(name: String, kind: String, host: String, shown: String, rung: Int = 0, feed: LiveFeed, log: Log, open: @escaping Open) throws {
        self.name = name
        self.rung = rung
        self.shown = shown
        self.open = open
        self.feed = feed
        self.log = log
        pipe = try WakePipe()
        status = Locked(DestinationStatus(name: name, kind: kind, host: host, rung: rung))
    }

    func start() {
        // The kernel keeps 15 bytes of a thread's name: onair- and 9 of the destination's.
        let short = name.prefix(9)
        thread.start(name: "onair-\(short)") { [self] in run() }
    }

    /// Ends the stream in progress cleanly, and the thread.
    func stop() { thread.stop(waking: pipe.wake) }

    private func run() {
        let reader = feed.join("destination.\(name)", wants: [.streams, .pictures, .aac], rung: rung, capacity: Self.capacity,
                               wake: pipe.wake)
        defer { feed.leave(reader) }
        var stream = feed.now.stream
        var outlet: Outlet?
        var attempts = 0
        var retryAt: Int64 = 0
        var lastDropLog: Int64 = 0
        var sentRung: Int?

        func count(_ outlet: Outlet) {
            status.withLock {
                $0.bytesSent += outlet.bytesSent
                $0.framesSent += outlet.framesSent
                $0.framesDropped += outlet.framesDropped
                $0.current = (0, 0, 0)
            }
        }
        func fail(_ error: String, now: Int64) {
            if let failed = outlet {
                failed.close()
                count(failed)
                // One that ran a while starts the backoff again; one the server drops at
                // once (a refusal it does not say) backs off as a failed connect.
                if now - failed.began > Self.steadyNanoseconds { attempts = 0 }
            }
            outlet = nil
            attempts += 1
            let wait = min(Self.maximumBackoffSeconds, 1 << min(attempts - 1, 5))
            retryAt = now + Int64(wait) * 1_000_000_000
            status.withLock { $0.state = stream == nil ? .idle : .retrying; $0.lastError = error }
            log(.destinationFailed, level: .warn, ("name", name), ("error", error), ("retry_in_s", stream == nil ? 0 : wait))
        }
        func end(_ reason: String, now: Int64) {
            guard let ending = outlet else { return }
            ending.end(now: now)
            count(ending)
            outlet = nil
            status.withLock { $0.state = .idle }
            log(.destinationEnded, ("name", name), ("reason", reason), ("frames", ending.framesSent), ("dropped", ending.framesDropped),
                ("bytes", ending.bytesSent))
        }

        while !thread.isStopped {
            var now = KernelClock.monotonic()
            if let live = stream, outlet == nil, now >= retryAt {
                do {
                    outlet = try connect(live, attempt: attempts)
                } catch LinkError.stopped {
                    // Stopped, or the stream ended while it connected (or listened).
                    if thread.isStopped { break }
                    retryAt = 0
                } catch {
                    fail("\(error)", now: KernelClock.monotonic())
                }
                now = KernelClock.monotonic()
            }
            var timeoutMs: Int32 = 1000
            if stream != nil, outlet == nil { timeoutMs = Int32(max(1, min(1000, (retryAt - now) / 1_000_000 + 1))) }
            let readable: Bool
            if let outlet { readable = outlet.wait(timeoutMs: timeoutMs, wake: pipe) } else {
                _ = try? Poll.wait([(pipe.read, .readable)], timeoutMs: timeoutMs)
                pipe.drain()
                readable = false
            }
            now = KernelClock.monotonic()
            let taken = reader.take()
            if taken.overflowed {
                outlet?.lost()
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
                // What was captured well before the outlet went live waited in the ring
                // while it connected (or listened): not sent, the stream begins now.
                case .picture(let picture):
                    if picture.isSync, picture.picture.rung != sentRung {
                        // A rung the heat left out, or back: the size changes at this IDR.
                        sentRung = picture.picture.rung
                        status.withLock { $0.rungSent = picture.picture.rung }
                    }
                    if let outlet, picture.captureTime >= outlet.began - Self.backlogNanoseconds { dropped += outlet.picture(picture) }
                case .sound(let sound):
                    if let outlet, sound.sound.captureTime >= outlet.began - Self.backlogNanoseconds { dropped += outlet.sound(sound) }
                default: break
                }
            }
            if dropped > 0, now - lastDropLog > 5_000_000_000 {
                lastDropLog = now
                log(.destinationDropped, level: .warn, ("name", name), ("frames", dropped),
                    ("reason", "the server takes the stream slower than it is made; going on at the next IDR"))
            }
            if let current = outlet {
                do {
                    try current.turn(now: now, readable: readable)
                    if now - current.lastProgress > Self.stallNanoseconds {
                        fail("the server stopped reading (nothing taken for \(Self.stallNanoseconds / 1_000_000_000) s)", now: now)
                    }
                } catch {
                    fail("\(error)", now: now)
                }
            }
            if let outlet { publishStatus(outlet, now: now) } else { status.withLock { $0.bitsPerSecond = 0; $0.rateSample = (0, 0) } }
        }
        end("onair stopped", now: KernelClock.monotonic())
    }

    /// Connects and goes live: an outlet, or the reason there is none.
    private func connect(_ stream: RealTimeStream, attempt: Int) throws -> Outlet {
        let began = KernelClock.monotonic()
        status.withLock { $0.state = .connecting; if attempt > 0 { $0.reconnects += 1 } }
        log(.destinationConnecting, ("name", name), ("url", shown), ("attempt", attempt + 1))
        let outlet = try open(stream, pipe) { [thread, feed] in thread.isStopped || feed.now.stream?.id != stream.id }
        let milliseconds = (KernelClock.monotonic() - began) / 1_000_000
        status.withLock { $0.state = .live; $0.lastError = nil }
        log(.destinationLive, ("name", name), ("url", shown), ("connect_ms", milliseconds))
        // Begin with a picture now rather than at the next IDR of the grid.
        feed.askForPicture()
        return outlet
    }

    private func publishStatus(_ outlet: Outlet, now: Int64) {
        status.withLock { status in
            status.current = (outlet.bytesSent, outlet.framesSent, outlet.framesDropped)
            let elapsed = now - status.rateSample.at
            guard elapsed >= 2_000_000_000 else { return }
            if status.rateSample.at > 0 {
                status.bitsPerSecond = Int(Int64(max(0, status.totalBytes - status.rateSample.bytes)) * 8_000_000_000 / elapsed)
            }
            status.rateSample = (now, status.totalBytes)
        }
    }
}
