/// What to upload next for one stream, and when; pure, driven by the caller's clock.
///
/// The source talk's rule, made stronger: save bytes first, then make them visible. The
/// origin's playlist is rebuilt from the segments the origin has confirmed (2xx) and lists
/// only the contiguous run from the first one: if segment 5 is confirmed while 4 still
/// fails, the playlist stops at 3 until 4 is confirmed. So it never lists a segment the
/// origin lacks, never reorders, never shrinks. init.mp4 and index.m3u8 are confirmed
/// before the first playlist; ENDLIST goes up only after every segment is confirmed.
/// Failed uploads are retried forever: the talk's quick retries, then exponential backoff
/// with jitter.
public struct PublishPlan: Sendable {
    public enum Job: Hashable, Sendable {
        case initSegment
        case segment(Int)
        /// index.m3u8, at the local version it had when the job was made.
        case multivariant(version: Int)
        /// playlist.m3u8 listing segments 1...count, with ENDLIST if `ended`.
        case playlist(count: Int, ended: Bool)
    }

    enum Item: Equatable {
        case pending(notBefore: Int64, failures: Int)
        case inFlight(failures: Int)
        case confirmed
    }

    public let id: String
    public let retry: RetryPolicy
    /// Segments 1...stored are complete on local disk.
    public private(set) var stored = 0
    public private(set) var localEnded = false
    /// The origin holds segments 1...confirmedThrough.
    public private(set) var confirmedThrough = 0
    /// The origin's playlist lists segments 1...listed.
    public private(set) var listed = 0
    public private(set) var endlistConfirmed = false
    private var initItem: Item = .pending(notBefore: 0, failures: 0)
    private var segments: [Int: Item] = [:]
    private var multivariantItem: Item = .pending(notBefore: 0, failures: 0)
    private var multivariantLocal = 1
    private var multivariantConfirmed = 0
    private var playlistItem: Item = .pending(notBefore: 0, failures: 0)
    /// When each segment was stored (caller's clock), for the age of the oldest unpublished.
    private var storedAt: [Int: Int64] = [:]

    public init(id: String, retry: RetryPolicy) {
        self.id = id
        self.retry = retry
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
        self.listed = min(listed, confirmedThrough)
        endlistConfirmed = endlist && localEnded && self.listed == stored
        if endlistConfirmed { playlistItem = .confirmed }
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
        guard multivariantConfirmed == multivariantLocal, Self.ready(playlistItem, now) else { return jobs }
        let ending = localEnded && confirmedThrough == stored
        if confirmedThrough > listed || (ending && !endlistConfirmed) {
            jobs.append(.playlist(count: confirmedThrough, ended: ending))
            playlistItem = Self.flying(playlistItem)
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
        case .playlist(let count, let ended):
            playlistItem = next(playlistItem)
            if succeeded {
                listed = max(listed, count)
                if ended { endlistConfirmed = true } else { playlistItem = .pending(notBefore: 0, failures: 0) }
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
        case .playlist: item = playlistItem
        }
        switch item {
        case .pending(let at, let failures)?: return (failures, at)
        case .inFlight(let failures)?: return (failures, nil)
        default: return (0, nil)
        }
    }

    /// When the earliest waiting retry becomes due (nil: nothing is waiting on time).
    public var nextRetry: Int64? {
        let items = [initItem, multivariantItem, playlistItem] + Array(segments.values)
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
