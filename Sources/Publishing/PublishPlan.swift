/// What to upload next for one stream, and when; pure, driven by the caller's clock.
///
/// The source talk's rule, made stronger: save bytes first, then make them visible. The
/// origin's playlist is rebuilt from the segments the origin has confirmed (2xx) and lists
/// only the contiguous run from the first one: if segment 5 is confirmed while 4 still
/// fails, the playlist stops at 3 until 4 is confirmed. So it never lists a segment the
/// origin lacks, never reorders, never shrinks. init.mp4 and index.m3u8 are confirmed
/// before the first playlist; ENDLIST goes up only after every segment is confirmed.
/// Every media playlist of the stream (playlist.m3u8 and iframes.m3u8, which list the
/// same segments) follows these rules on its own.
/// Failed uploads are retried forever: the talk's quick retries, then exponential backoff
/// with jitter.
public struct PublishPlan: Sendable {
    public enum Job: Hashable, Sendable {
        case initSegment
        case segment(Int)
        /// index.m3u8, at the local version it had when the job was made.
        case multivariant(version: Int)
        /// A media playlist (`playlist.m3u8`, `iframes.m3u8`) listing segments 1...count,
        /// with ENDLIST if `ended`.
        case playlist(String, count: Int, ended: Bool)
    }

    enum Item: Equatable {
        case pending(notBefore: Int64, failures: Int)
        case inFlight(failures: Int)
        case confirmed
    }

    public let id: String
    public let retry: RetryPolicy
    /// The media playlists, as index.m3u8 names them.
    public let playlists: [String]
    /// Segments 1...stored are complete on local disk.
    public private(set) var stored = 0
    public private(set) var localEnded = false
    /// The origin holds segments 1...confirmedThrough.
    public private(set) var confirmedThrough = 0
    /// Every playlist on the origin lists segments 1...listed (at least).
    public var listed: Int { playlists.map { listedBy[$0] ?? 0 }.min() ?? 0 }
    /// Every playlist on the origin has ENDLIST.
    public var endlistConfirmed: Bool { playlists.allSatisfy(endedBy.contains) }
    private var listedBy: [String: Int] = [:]
    private var endedBy = Set<String>()
    private var initItem: Item = .pending(notBefore: 0, failures: 0)
    private var segments: [Int: Item] = [:]
    private var multivariantItem: Item = .pending(notBefore: 0, failures: 0)
    private var multivariantLocal = 1
    private var multivariantConfirmed = 0
    private var playlistItems: [String: Item] = [:]
    /// When each segment was stored (caller's clock), for the age of the oldest unpublished.
    private var storedAt: [Int: Int64] = [:]

    public init(id: String, retry: RetryPolicy, playlists: [String] = ["playlist.m3u8"]) {
        precondition(!playlists.isEmpty)
        self.id = id
        self.retry = retry
        self.playlists = playlists
        for name in playlists { playlistItems[name] = .pending(notBefore: 0, failures: 0) }
    }

    /// Nothing is left to upload: the stream ended and ENDLIST is on the origin.
    public var isComplete: Bool { endlistConfirmed }

    public var pendingSegments: Int { stored - confirmedThrough }

    // MARK: Local events

    public mutating func segmentStored(_ sequence: Int, at now: Int64 = 0) {
        precondition(sequence == stored + 1, "segments are stored in order")
        stored = sequence
        segments[sequence] = .pending(notBefore: 0, failures: 0)
        storedAt[sequence] = now
    }

    /// When the oldest segment the destination does not have yet was stored.
    public var oldestUnconfirmedStoredAt: Int64? {
        stride(from: confirmedThrough + 1, through: stored, by: 1).first { segments[$0] != .confirmed }.flatMap { storedAt[$0] }
    }

    /// Sequence numbers stored but not confirmed.
    public var unconfirmedSegments: [Int] {
        stride(from: confirmedThrough + 1, through: stored, by: 1).filter { segments[$0] != .confirmed }
    }

    /// index.m3u8 was rewritten locally (a higher BANDWIDTH): the origin needs it again
    /// before its next playlist.
    public mutating func multivariantChanged() {
        multivariantLocal += 1
        if multivariantItem == .confirmed { multivariantItem = .pending(notBefore: 0, failures: 0) }
    }

    public mutating func ended() { localEnded = true }

    /// Marks what an earlier run already confirmed (from the journal).
    public mutating func restore(confirmedSegments: Int, listed: Int, endlist: Bool) {
        initItem = .confirmed
        multivariantItem = .confirmed
        multivariantConfirmed = multivariantLocal
        confirmedThrough = min(confirmedSegments, stored)
        for sequence in stride(from: 1, through: confirmedThrough, by: 1) { segments[sequence] = .confirmed }
        for name in playlists { listedBy[name] = min(listed, confirmedThrough) }
        if endlist && localEnded && self.listed == stored {
            endedBy = Set(playlists)
            for name in playlists { playlistItems[name] = .confirmed }
        }
    }

    /// What the journal may say once `job` is confirmed: every playlist lists at least
    /// `listed`, and all have ENDLIST when `endlist`.
    public func afterConfirming(_ job: Job) -> (listed: Int, endlist: Bool) {
        guard case .playlist(let name, let count, let ended) = job else { return (listed, endlistConfirmed) }
        return (playlists.map { $0 == name ? max(count, listedBy[$0] ?? 0) : listedBy[$0] ?? 0 }.min() ?? 0,
                playlists.allSatisfy { $0 == name ? ended || endedBy.contains($0) : endedBy.contains($0) })
    }

    // MARK: Scheduling

    /// Jobs that may start at `now`, given room for `segmentSlots` more segment uploads;
    /// each returned job is marked in flight. Segments go in order of their number.
    public mutating func start(now: Int64, segmentSlots: Int) -> [Job] {
        var jobs: [Job] = []
        if Self.ready(initItem, now) { jobs.append(.initSegment); initItem = Self.flying(initItem) }
        var room = segmentSlots
        var sequence = confirmedThrough + 1
        while room > 0 && sequence <= stored {
            if let item = segments[sequence], Self.ready(item, now) {
                jobs.append(.segment(sequence))
                segments[sequence] = Self.flying(item)
                room -= 1
            }
            sequence += 1
        }
        guard initItem == .confirmed else { return jobs }
        if multivariantConfirmed < multivariantLocal, Self.ready(multivariantItem, now) {
            jobs.append(.multivariant(version: multivariantLocal))
            multivariantItem = Self.flying(multivariantItem)
        }
        // A playlist only once the multivariant playlist that describes it is up.
        guard multivariantConfirmed == multivariantLocal else { return jobs }
        let ending = localEnded && confirmedThrough == stored
        for name in playlists where Self.ready(playlistItems[name]!, now) {
            if confirmedThrough > listedBy[name, default: 0] || (ending && !endedBy.contains(name)) {
                jobs.append(.playlist(name, count: confirmedThrough, ended: ending))
                playlistItems[name] = Self.flying(playlistItems[name]!)
            }
        }
        return jobs
    }

    /// Records how a job went; a failure schedules the next try.
    public mutating func finish(_ job: Job, succeeded: Bool, now: Int64, jitter: Double) {
        func next(_ item: Item) -> Item {
            guard case .inFlight(let failures) = item else { return item }
            if succeeded { return .confirmed }
            return .pending(notBefore: now + retry.delayMilliseconds(afterFailures: failures + 1, jitter: jitter), failures: failures + 1)
        }
        switch job {
        case .initSegment:
            initItem = next(initItem)
        case .segment(let sequence):
            segments[sequence] = next(segments[sequence] ?? .confirmed)
            while segments[confirmedThrough + 1] == .confirmed {
                confirmedThrough += 1
                storedAt[confirmedThrough] = nil
            }
        case .multivariant(let version):
            multivariantItem = next(multivariantItem)
            if succeeded {
                multivariantConfirmed = max(multivariantConfirmed, version)
                if multivariantConfirmed < multivariantLocal { multivariantItem = .pending(notBefore: 0, failures: 0) }
            }
        case .playlist(let name, let count, let ended):
            playlistItems[name] = next(playlistItems[name] ?? .confirmed)
            if succeeded {
                listedBy[name] = max(listedBy[name, default: 0], count)
                if ended { endedBy.insert(name) } else { playlistItems[name] = .pending(notBefore: 0, failures: 0) }
            }
        }
    }

    /// How many times in a row `job` has failed, and when it may be tried again.
    public func retryState(of job: Job) -> (failures: Int, notBefore: Int64?) {
        let item: Item?
        switch job {
        case .initSegment: item = initItem
        case .segment(let sequence): item = segments[sequence]
        case .multivariant: item = multivariantItem
        case .playlist(let name, _, _): item = playlistItems[name]
        }
        switch item {
        case .pending(let at, let failures)?: return (failures, at)
        case .inFlight(let failures)?: return (failures, nil)
        default: return (0, nil)
        }
    }

    /// When the earliest waiting retry becomes due (nil: nothing is waiting on time).
    public var nextRetry: Int64? {
        let items = [initItem, multivariantItem] + Array(playlistItems.values) + Array(segments.values)
        return items.compactMap { item -> Int64? in
            if case .pending(let at, let failures) = item, failures > 0 { return at }
            return nil
        }.min()
    }

    static func ready(_ item: Item, _ now: Int64) -> Bool {
        if case .pending(let at, _) = item { return at <= now }
        return false
    }

    static func flying(_ item: Item) -> Item {
        if case .pending(_, let failures) = item { return .inFlight(failures: failures) }
        return item
    }
}

/// The source talk's quick retries (250 ms, then 500 ms), then exponential backoff with
/// "equal jitter" (half fixed, half random) up to a ceiling, forever.
public struct RetryPolicy: Sendable, Equatable {
    public var quickMilliseconds: [Int64]
    public var maximumMilliseconds: Int64

    public init(quickMilliseconds: [Int64] = [250, 500], maximumMilliseconds: Int64 = 30_000) {
        precondition(!quickMilliseconds.isEmpty && maximumMilliseconds > 0)
        self.quickMilliseconds = quickMilliseconds
        self.maximumMilliseconds = maximumMilliseconds
    }

    /// The wait after the `failures`-th consecutive failure; `jitter` in 0..<1.
    public func delayMilliseconds(afterFailures failures: Int, jitter: Double) -> Int64 {
        if failures <= quickMilliseconds.count { return quickMilliseconds[max(0, failures - 1)] }
        let doublings = min(failures - quickMilliseconds.count, 30)
        let ceiling = min(maximumMilliseconds, quickMilliseconds.last! << Int64(doublings))
        return ceiling / 2 + Int64(Double(ceiling / 2) * min(max(jitter, 0), 0.999))
    }
}
