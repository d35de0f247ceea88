import Live
import Logging
import Threading

/// What a destination is doing now, for the console, /status, /api/status and /metrics.
public struct DestinationStatus: Sendable, Equatable {
    public enum State: String, Sendable {
        /// No stream is live: nothing to send.
        case idle
        /// Connecting and publishing.
        case connecting
        /// The server takes the stream.
        case live
        /// The connection failed; it is tried again after a while (`lastError` says why).
        case retrying
    }

    public var name: String
    /// rtmp, rtmps, srt.
    public var kind: String
    /// The server's host (the URL's, never the key).
    public var host: String
    /// The quality ladder's rung it asked for (0: the top, as configured), and the one
    /// whose pictures it takes now (a lower one while the heat leaves its own out; nil
    /// before the first).
    public var rung: Int
    public internal(set) var rungSent: Int?
    public var state = State.idle
    /// Connections made again after one failed, over the run.
    public var reconnects = 0
    /// Why the last connection failed or was refused, in words; nil once live again.
    public var lastError: String?
    /// Over the run: what ended broadcasts sent and lost, and the one in progress.
    var bytesSent = 0
    var framesSent = 0
    var framesDropped = 0
    var current = (bytes: 0, frames: 0, dropped: 0)
    /// The bit rate going out, over the last few seconds.
    public internal(set) var bitsPerSecond = 0
    var rateSample = (at: Int64(0), bytes: 0)

    init(name: String, kind: String, host: String, rung: Int = 0) {
        self.name = name
        self.kind = kind
        self.host = host
        self.rung = rung
    }

    public var totalBytes: Int { bytesSent + current.bytes }
    public var totalFrames: Int { framesSent + current.frames }
    /// Pictures not sent: waiting for an IDR after a loss, or dropped because the server
    /// took the stream slower than it was made.
    public var totalDropped: Int { framesDropped + current.dropped }

    public static func == (a: DestinationStatus, b: DestinationStatus) -> Bool {
        a.name == b.name && a.state == b.state && a.totalBytes == b.totalBytes && a.totalDropped == b.totalDropped && a.lastError == b.lastError
    }
}

/// Every destination of onair.conf (`[destination.NAME]`), each on its own thread,
/// reading the live feed from the start of the run to its end: they connect when a
/// stream begins and end their broadcasts when it ends.
public final class Destinations: Sendable {
    private let destinations: [DestinationLoop]

    /// The enabled destinations of `settings`; one whose settings cannot work is said
    /// (one line, never its key) and left out, the rest go on.
    public init(_ settings: [DestinationSettings], feed: LiveFeed, log: Log) {
        var destinations: [DestinationLoop] = []
        for destination in settings.sorted(by: { $0.name < $1.name }) where destination.enabled {
            do {
                destinations.append(try Self.loop(destination, feed: feed, log: log))
            } catch {
                log(.destinationUnusable, level: .error, ("name", destination.name), ("problem", "\(error)"))
            }
        }
        self.destinations = destinations
        for destination in destinations { destination.start() }
    }

    /// The thread of one destination, speaking its URL's protocol.
    private static func loop(_ destination: DestinationSettings, feed: LiveFeed, log: Log) throws -> DestinationLoop {
        if destination.isSRT {
            let target = try destination.srtTarget()
            return try DestinationLoop(name: destination.name, kind: "srt", host: target.host, shown: target.shown, rung: destination.rung,
                                       feed: feed, log: log) {
                stream, wake, stopped in try SRTOutlet.open(target, stream: stream, wake: wake, stopped: stopped)
            }
        }
        let (url, key) = try destination.target()
        return try DestinationLoop(name: destination.name, kind: url.secure ? "rtmps" : "rtmp", host: url.host, shown: url.tcURL,
                                   rung: destination.rung, feed: feed, log: log) { stream, wake, stopped in
            try RTMPOutlet.open(url: url, key: key, stream: stream, wake: wake, stopped: stopped)
        }
    }

    /// Each destination's state, in name order.
    public var statuses: [DestinationStatus] { destinations.map { $0.status.withLock { $0 } } }

    /// Whether a destination takes the stream now (the tally's "on air").
    public var anyLive: Bool { destinations.contains { $0.status.withLock { $0.state == .live } } }

    /// Ends every broadcast (the platforms end theirs at once) and every thread.
    public func stop() { for destination in destinations { destination.stop() } }
}
