import Media
import Threading

/// The live end of the streams being made, kept in memory for the built-in server's
/// low-latency playlists (RFC 8216bis §4.4.4.9, §6.2.5, §6.2.6): each stream's segments as
/// its playlist file lists them, the parts of its last segments and of the one in
/// progress, and the requests waiting for what does not exist yet. The live output writes
/// it (from its own thread); the web server's threads read it. Nothing here is stored or
/// published: the files on disk and at the destination stay regular HLS.
public final class LiveEdge: Sendable {
    /// A request waiting for a stream to change (`wake` runs once, outside the lock).
    public struct Wait: Hashable, Sendable { let id: Int }

    struct Stream {
        var timing: PartTiming
        var playlist: MediaPlaylist
        /// Parts of complete segments still kept, by media sequence number.
        var parts: [Int: [PartReport]] = [:]
        /// Parts of segments not yet in `playlist` (the one in progress, and rarely the one
        /// after it, when both are written at once), by media sequence number.
        var pending: [Int: [PartReport]] = [:]
        /// Media time at the end of each complete segment, in part ticks' timescale.
        var segmentEnds: [Int: Int64] = [:]
        var endedAt: Int64?

        /// The media sequence number of the next segment to complete.
        var inProgress: Int { playlist.mediaSequence + playlist.entries.count }
        var lastSegment: Int { inProgress - 1 }
        var partial: [PartReport] { pending[inProgress] ?? [] }

        /// The part that comes next: after the last one made, or the first of the next
        /// segment when the last one ended its segment.
        var next: (sequence: Int, index: Int) {
            guard let last = partial.last else { return (inProgress, 0) }
            return last.endsSegment ? (inProgress + 1, 0) : (inProgress, last.index + 1)
        }

        /// The part (or a later one) exists: `index` past a complete segment's last part
        /// means the next segment's first (§6.2.5.2).
        func has(sequence: Int, index: Int?) -> Bool {
            guard let index else { return sequence <= lastSegment }
            if sequence < playlist.mediaSequence { return true }
            if sequence <= lastSegment {
                let count = parts[sequence]?.count ?? 0
                return index < count || count == 0 || has(sequence: sequence + 1, index: 0)
            }
            let made = pending[sequence] ?? []
            if let last = made.last, last.endsSegment, index > last.index { return has(sequence: sequence + 1, index: 0) }
            return made.count > index
        }

        /// How many parts beyond the last one made (M, N) lies; segments in progress count
        /// as full ones.
        func partsAhead(sequence: Int, index: Int) -> Int {
            let perSegment = Int((segmentTicks + timing.ticks - 1) / timing.ticks)
            let (lastSequence, lastIndex) = partial.last.map { ($0.sequence, $0.index) } ?? (lastSegment, perSegment - 1)
            return (sequence - lastSequence) * perSegment + index - lastIndex
        }

        var segmentTicks: Int64 { Int64(playlist.targetDuration) * timing.timescale }

        /// Parts are listed for the segments of the last three target durations, and kept
        /// for three more after that (§6.2.2; HLS_RULES LL10).
        func listed(_ sequence: Int, within durations: Int64) -> Bool {
            guard let end = segmentEnds[sequence], let last = segmentEnds[lastSegment] else { return false }
            return last - end < durations * Int64(playlist.targetDuration) * timing.timescale
        }
    }

    public enum PlaylistAnswer: Sendable, Equatable {
        case playlist(String)
        /// Not yet: `wake` runs when the stream changes; ask again then.
        case wait(Wait)
        case badRequest(String)
        /// Not a live stream here (ended, or never low-latency): the file on disk answers,
        /// and the directives are ignored (§6.2.5.2).
        case notLive
    }

    public enum PartAnswer: Sendable, Equatable {
        /// The part, and when its last frame was captured (monotonic ns).
        case part([UInt8], captured: Int64)
        case wait(Wait)
        case notFound
    }

    /// The live streams and the requests waiting on them.
    private struct Edge {
        var streams: [String: Stream] = [:]
        /// Each wait with what it waits for: it is woken when that holds, or the stream ends.
        var waiters: [Wait: (stream: String, ready: @Sendable (Stream) -> Bool, wake: @Sendable () -> Void)] = [:]
        var nextWaiter = 0

        mutating func register(_ id: String, _ ready: @escaping @Sendable (Stream) -> Bool, _ wake: @escaping @Sendable () -> Void) -> Wait {
            nextWaiter += 1
            let wait = Wait(id: nextWaiter)
            waiters[wait] = (id, ready, wake)
            return wait
        }

        /// Ended streams whose parts nobody may still ask for.
        mutating func forgetEnded(now: Int64) {
            streams = streams.filter { _, stream in
                guard let ended = stream.endedAt else { return true }
                return now - ended < Int64(3 * stream.playlist.targetDuration) * 1_000_000_000
            }
        }
    }
    private let edge = Locked(Edge())
    private let clock: MediaClock

    public init(clock: MediaClock = MonotonicClock()) { self.clock = clock }

    // MARK: The live output

    /// A stream starts: its segments will be `mapURI`'s, its parts `timing`'s.
    public func begin(_ id: String, targetDuration: Int, timing: PartTiming) {
        edge.withLock { [clock] edge in
            edge.forgetEnded(now: clock.now())
            edge.streams[id] = Stream(timing: timing, playlist: MediaPlaylist(targetDuration: targetDuration))
        }
    }

    public func add(_ id: String, parts: [PartReport]) {
        guard !parts.isEmpty else { return }
        change(id) { stream in
            for part in parts { stream.pending[part.sequence, default: []].append(part) }
        }
    }

    /// A segment was stored and its playlist file lists it: it leaves the parts in progress.
    public func add(_ id: String, segment: SegmentReport, entry: MediaPlaylist.Entry) {
        change(id) { stream in
            stream.playlist.entries.append(entry)
            let end = rescale(segment.videoStart + segment.videoDuration, from: segment.videoTimescale, to: stream.timing.timescale)
            stream.segmentEnds[segment.sequence] = end
            stream.parts[segment.sequence] = stream.pending.removeValue(forKey: segment.sequence)
            for sequence in stream.parts.keys where !stream.listed(sequence, within: 6) {
                stream.parts[sequence] = nil
                stream.segmentEnds[sequence] = nil
            }
        }
    }

    /// The stream has its ENDLIST: its playlist is the file's from now on; its parts stay
    /// fetchable for three target durations, for players that were reading them.
    public func end(_ id: String) {
        change(id) { stream in
            if stream.endedAt == nil { stream.endedAt = clock.now() }
            stream.playlist.isEnded = true
        }
    }

    private func change(_ id: String, _ body: (inout Stream) -> Void) {
        let woken: [@Sendable () -> Void] = edge.withLock { edge in
            guard var stream = edge.streams[id] else { return [] }
            body(&stream)
            edge.streams[id] = stream
            let due = edge.waiters.filter { $0.value.stream == id && (stream.endedAt != nil || $0.value.ready(stream)) }
            for key in due.keys { edge.waiters[key] = nil }
            return due.map(\.value.wake)
        }
        for wake in woken { wake() }
    }


    // MARK: The server

    /// The playlist for `directives`, or a wait for it (§6.2.5.2): `wake` runs once what it
    /// asks for exists (or the stream ends), and the caller asks again; `cancel` it when
    /// giving up. Only those waits are woken, not every one at every part.
    public func playlist(_ id: String, _ directives: DeliveryDirectives, orWake wake: @escaping @Sendable () -> Void) -> PlaylistAnswer {
        edge.withLock { edge in
            guard let stream = edge.streams[id], stream.endedAt == nil else { return .notLive }
            if let msn = directives.msn {
                if msn > stream.lastSegment + 2 {
                    return .badRequest("_HLS_msn=\(msn) is more than two segments past the last one (\(stream.lastSegment))")
                }
                if let part = directives.part, stream.partsAhead(sequence: msn, index: part) > stream.timing.advancePartLimit {
                    return .badRequest("_HLS_msn=\(msn)&_HLS_part=\(part) is more than \(stream.timing.advancePartLimit) parts past the last one")
                }
                let part = directives.part
                if !stream.has(sequence: msn, index: part) { return .wait(edge.register(id, { $0.has(sequence: msn, index: part) }, wake)) }
            }
            let listed = stream.parts.filter { stream.listed($0.key, within: 3) }
            return .playlist(LowLatencyPlaylist(playlist: stream.playlist, timing: stream.timing, parts: listed,
                                                partial: stream.partial, next: stream.next, skip: directives.skip).render())
        }
    }

    /// Part `index` of segment `sequence`; a wait for the hinted next part (§6.2.6); not
    /// found for anything else, and for the hinted part once the stream has ended.
    public func part(_ id: String, sequence: Int, index: Int, orWake wake: @escaping @Sendable () -> Void) -> PartAnswer {
        edge.withLock { [clock] edge in
            edge.forgetEnded(now: clock.now())
            guard let stream = edge.streams[id] else { return .notFound }
            let made = stream.parts[sequence] ?? stream.pending[sequence] ?? []
            if let part = made.first(where: { $0.index == index }) { return .part(part.bytes, captured: part.lastFrameCaptureTime) }
            guard stream.endedAt == nil, stream.next == (sequence, index) else { return .notFound }
            // Made, or no longer the next part (a discontinuity ended its segment): answer.
            return .wait(edge.register(id, { $0.next != (sequence, index) }, wake))
        }
    }


    /// Gives up a wait; false if it has already been woken (its `wake` has run or is running).
    public func cancel(_ wait: Wait) -> Bool {
        edge.withLock { edge in edge.waiters.removeValue(forKey: wait) != nil }
    }

    /// Wakes every wait (the server is stopping).
    public func wakeAll() {
        let woken = edge.withLock { edge -> [@Sendable () -> Void] in
            defer { edge.waiters = [:] }
            return edge.waiters.values.map(\.wake)
        }
        for wake in woken { wake() }
    }

    public var waiting: Int { edge.withLock { edge in edge.waiters.count } }

    /// Whether `id` is live here (its playlist has parts).
    public func isLive(_ id: String) -> Bool { edge.withLock { edge in edge.streams[id].map { $0.endedAt == nil } ?? false } }

    /// The longest a blocked request is held before 503 (§6.2.5.2: three target durations).
    public func blockingLimitNanoseconds(_ id: String) -> Int64 {
        edge.withLock { edge in Int64(3 * (edge.streams[id]?.playlist.targetDuration ?? 2)) * 1_000_000_000 }
    }
}
