import Live
import System

/// One live connection to a destination's server, whatever its protocol (an RTMP
/// publish, an SRT call): it takes the live stream's pictures and sound, formats them,
/// and sends what its connection takes, never waiting. The destination's thread
/// (`DestinationLoop`) owns it from its connect to its end.
protocol Outlet: AnyObject {
    /// What it has queued and sent.
    var sending: Sending { get }
    /// A picture, queued once the stream has begun at an IDR; how many pictures were
    /// dropped to make room.
    func picture(_ picture: LivePicture) -> Int
    func sound(_ sound: LiveSound) -> Int
    /// The reader lost items: the stream goes on at the next IDR.
    func lost()
    /// Waits at most `timeoutMs` for the connection (or `wake`): whether it has something
    /// to read.
    func wait(timeoutMs: Int32, wake: WakePipe) -> Bool
    /// Reads what came (when `readable`) and sends what the connection takes now; throws
    /// when the connection failed or the server refused.
    func turn(now: Int64, readable: Bool) throws
    /// Ends the stream cleanly (what the protocol says at the end), for at most a second.
    func end(now: Int64)
    /// Drops the connection at once.
    func close()
}

extension Outlet {
    var began: Int64 { sending.began }
    var lastProgress: Int64 { sending.lastProgress }
    var bytesSent: Int { sending.bytesSent }
    var framesSent: Int { sending.framesSent }
    var framesDropped: Int { sending.framesDropped }
}

/// An outlet's media on its way: the queue, where the stream begins, and what went.
struct Sending {
    var queue = OutgoingQueue()
    var gate = StartGate()
    /// When the outlet went live (CLOCK_MONOTONIC ns).
    let began: Int64
    /// When a byte last went: a server that takes nothing for long is given up.
    private(set) var lastProgress: Int64
    private(set) var bytesSent = 0
    var framesSent = 0
    private var dropped = 0
    /// Pictures not sent: dropped from the queue, or left out waiting for an IDR.
    var framesDropped: Int { dropped + gate.skipped }

    init(now: Int64) {
        began = now
        lastProgress = now
    }

    /// Queues a message of the stream.
    mutating func append(_ bytes: [UInt8], at captureTime: Int64, picture: Bool = false) {
        queue.append(bytes, at: captureTime, picture: picture)
        if picture { framesSent += 1 }
    }

    /// Drops what waits when it is too far behind, and waits for the next IDR: how many
    /// pictures went.
    mutating func dropIfBehind() -> Int {
        let count = queue.dropIfBehind()
        guard count > 0 else { return 0 }
        dropped += count
        framesSent -= count
        gate.lost()
        return count
    }

    /// Sends what `send` takes now (see `OutgoingQueue.write`).
    mutating func write(now: Int64, _ send: (ArraySlice<UInt8>) throws -> Int) rethrows {
        let sent = try queue.write(send)
        if sent > 0 || queue.isEmpty { lastProgress = now }
        bytesSent += sent
    }
}

/// What every outlet does the same: the stream begins at an IDR with its parameter sets,
/// its times count from that IDR's capture, and sound before it is left out; after a
/// loss it waits for the next IDR.
struct StartGate {
    /// The capture time of the first IDR sent: the stream's time zero.
    private(set) var base: Int64?
    private(set) var waitingForIDR = true
    /// Pictures left out while waiting for an IDR after the start.
    private(set) var skipped = 0

    /// Whether `picture` goes out; the first IDR sets time zero.
    mutating func admit(_ picture: RealTimePicture) -> Bool {
        if waitingForIDR {
            guard picture.isSync, !picture.sps.isEmpty, !picture.pps.isEmpty else {
                if base != nil { skipped += 1 }
                return false
            }
            waitingForIDR = false
        }
        if base == nil { base = picture.captureTime }
        return true
    }

    /// Whether sound captured at `captureTime` goes out.
    func admit(sound captureTime: Int64) -> Bool {
        guard let base, !waitingForIDR else { return false }
        return captureTime >= base
    }

    mutating func lost() { waitingForIDR = true }

    /// Nanoseconds since time zero.
    func elapsed(_ captureTime: Int64) -> Int64 { max(0, captureTime - (base ?? captureTime)) }
}

/// What waits to be sent, whole messages in order, bounded by time: when the oldest
/// waiting is more than `maximumBehind` older than the newest (or more than
/// `maximumQueued` bytes wait), every message not yet begun goes and the stream waits for
/// the next IDR (the server sees a gap, never a broken picture).
struct OutgoingQueue {
    private var messages: [Message] = []
    /// How much of the first message has gone (it must go whole).
    private var sentOfFirst = 0
    private var queuedBytes = 0

    static let maximumBehind: Int64 = 2_000_000_000
    static let maximumQueued = 16 << 20

    struct Message {
        var bytes: [UInt8]
        /// A picture: counted when dropped.
        var isPicture: Bool
        var captureTime: Int64
    }

    var isEmpty: Bool { messages.isEmpty }
    var lastCaptureTime: Int64 { messages.last?.captureTime ?? 0 }

    mutating func append(_ bytes: [UInt8], at captureTime: Int64, picture: Bool = false) {
        guard !bytes.isEmpty else { return }
        messages.append(Message(bytes: bytes, isPicture: picture, captureTime: captureTime))
        queuedBytes += bytes.count
    }

    /// Drops what waits when it is too far behind: how many pictures went (0 mostly).
    mutating func dropIfBehind() -> Int {
        guard let first = messages.first, let last = messages.last,
              last.captureTime - first.captureTime > Self.maximumBehind || queuedBytes > Self.maximumQueued else { return 0 }
        let keep = sentOfFirst > 0 ? 1 : 0
        let dropped = messages[keep...].filter(\.isPicture).count
        queuedBytes = messages.prefix(keep).reduce(0) { $0 + $1.bytes.count }
        messages.removeSubrange(keep...)
        return dropped
    }

    /// Sends with `send` (which takes a prefix of what it is given and says how much)
    /// until it takes nothing: the bytes that went.
    mutating func write(_ send: (ArraySlice<UInt8>) throws -> Int) rethrows -> Int {
        var total = 0
        while let first = messages.first {
            let sent = try send(first.bytes[sentOfFirst...])
            guard sent > 0 else { break }
            total += sent
            sentOfFirst += sent
            if sentOfFirst == first.bytes.count {
                queuedBytes -= first.bytes.count
                messages.removeFirst()
                sentOfFirst = 0
            }
        }
        return total
    }

    /// Everything not yet sent, in order, and the queue emptied.
    mutating func takeAll() -> [UInt8] {
        defer { messages = []; sentOfFirst = 0; queuedBytes = 0 }
        guard let first = messages.first else { return [] }
        return Array(first.bytes[sentOfFirst...]) + messages.dropFirst().flatMap(\.bytes)
    }
}
