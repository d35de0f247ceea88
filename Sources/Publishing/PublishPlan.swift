import Layout
/// What to upload next for one stream, and when; pure, driven by the caller's clock.
///
/// The source talk's rule, made stronger: save bytes first, then make them visible. The
/// origin's playlist is rebuilt from the segments the origin has confirmed (2xx) and lists
/// only the contiguous run from the first one: if segment 5 is confirmed while 4 still
/// fails, the playlist stops at 3 until 4 is confirmed. So it never lists a segment the
/// origin lacks, never reorders, never shrinks. init.mp4 and index.m3u8 are confirmed
/// before the first playlist; ENDLIST goes up only after every segment is confirmed.
/// A stream is one or more renditions (a ladder's rungs and its sound, each in a folder
/// of its own), each with its own init.mp4, segments and media playlists (playlist.m3u8,
/// and iframes.m3u8 which lists the same segments); every playlist follows these rules
/// on its own, over its own rendition's segments.
/// Failed uploads are retried forever: the talk's quick retries, then exponential backoff
/// with jitter.
public struct PublishPlan: Sendable {
    public enum Job: Hashable, Sendable {
        /// The init.mp4 of the rendition in this folder ("" without a ladder).
        case initSegment(String)
        /// Segment `sequence` of the rendition in folder `in`.
        case segment(Int, in: String = "")
        /// index.m3u8, at the local version it had when the job was made.
        case multivariant(version: Int)
        /// A media playlist (its path in the stream: `playlist.m3u8`, `v0/iframes.m3u8`)
        /// listing its rendition's segments 1...count, with ENDLIST if `ended`.
        case playlist(String, count: Int, ended: Bool)
    }

    enum Item: Equatable {
        case pending(notBefore: Int64, failures: Int)
        case inFlight(failures: Int)
        case confirmed
    }

    /// One rendition's uploads.
    struct Rendition: Sendable {
        let folder: String
        let playlists: [String]
        var initItem: Item = .pending(notBefore: 0, failures: 0)
        var segments: [Int: Item] = [:]
        /// Segments 1...stored are complete on local disk.
        var stored = 0
        /// The origin holds segments 1...confirmedThrough.
        var confirmedThrough = 0
        /// When each segment was stored (caller's clock), for the age of the oldest unpublished.
        var storedAt: [Int: Int64] = [:]
        var listedBy: [String: Int] = [:]
        var endedBy = Set<String>()
        var playlistItems: [String: Item] = [:]

        init(folder: String, playlists: [String]) {
            self.folder = folder
            self.playlists = playlists
            for name in playlists { playlistItems[name] = .pending(notBefore: 0, failures: 0) }
        }

        var listed: Int { playlists.map { listedBy[$0] ?? 0 }.min() ?? 0 }
        var ending: Bool { confirmedThrough == stored }
        var unconfirmed: [Int] { stride(from: confirmedThrough + 1, through: stored, by: 1).filter { segments[$0] != .confirmed } }
    }

    public let id: String
    public let retry: RetryPolicy
    var renditions: [Rendition]
    public private(set) var localEnded = false
    private var multivariantItem: Item = .pending(notBefore: 0, failures: 0)
    private var multivariantLocal = 1
    private var multivariantConfirmed = 0

    /// A stream of one rendition in its own directory, with these media playlists.
    public init(id: String, retry: RetryPolicy, playlists: [String] = [StreamLayout.playlist]) {
        self.init(id: id, retry: retry, renditions: [(folder: "", playlists: playlists)])
    }

    /// A stream of renditions, each a folder ("" for the stream's directory) and the paths
    /// of its media playlists.
    public init(id: String, retry: RetryPolicy, renditions: [(folder: String, playlists: [String])]) {
        precondition(!renditions.isEmpty && renditions.allSatisfy { !$0.playlists.isEmpty })
        self.id = id
        self.retry = retry
        self.renditions = renditions.map { Rendition(folder: $0.folder, playlists: $0.playlists) }
    }

    /// Every playlist on the origin lists at least this many segments.
    public var listed: Int { renditions.map(\.listed).min() ?? 0 }
    /// Every playlist on the origin has ENDLIST.
    public var endlistConfirmed: Bool { renditions.allSatisfy { $0.playlists.allSatisfy($0.endedBy.contains) } }
    /// Nothing is left to upload: the stream ended and ENDLIST is on the origin.
    public var isComplete: Bool { endlistConfirmed }
    /// Each rendition's confirmed run, in order (the journal's).
    public var confirmedThrough: [Int] { renditions.map(\.confirmedThrough) }

    public var pendingSegments: Int { renditions.reduce(0) { $0 + $1.stored - $1.confirmedThrough } }

    // MARK: Local events

    public mutating func segmentStored(_ sequence: Int, in folder: String = "", at now: Int64 = 0) {
        guard let r = renditions.firstIndex(where: { $0.folder == folder }) else { return }
        precondition(sequence == renditions[r].stored + 1, "segments are stored in order")
        renditions[r].stored = sequence
        renditions[r].segments[sequence] = .pending(notBefore: 0, failures: 0)
        renditions[r].storedAt[sequence] = now
    }

    /// When the oldest segment the destination does not have yet was stored.
    public var oldestUnconfirmedStoredAt: Int64? {
        renditions.compactMap { r in r.unconfirmed.first.flatMap { r.storedAt[$0] } }.min()
    }

    /// Segments stored but not confirmed: each rendition's folder and sequence numbers.
    public var unconfirmedSegments: [(folder: String, sequence: Int)] {
        renditions.flatMap { r in r.unconfirmed.map { (r.folder, $0) } }
    }

    /// index.m3u8 was rewritten locally (a higher BANDWIDTH): the origin needs it again
    /// before its next playlist.
    public mutating func multivariantChanged() {
        multivariantLocal += 1
        if multivariantItem == .confirmed { multivariantItem = .pending(notBefore: 0, failures: 0) }
    }

    public mutating func ended() { localEnded = true }

    /// Marks what an earlier run already confirmed (from the journal: per rendition, in
    /// order; a journal of one number speaks for every rendition).
    public mutating func restore(confirmedSegments: [Int], listed: [Int], endlist: Bool) {
        multivariantItem = .confirmed
        multivariantConfirmed = multivariantLocal
        for r in renditions.indices {
            let confirmed = min(confirmedSegments.count > r ? confirmedSegments[r] : confirmedSegments.first ?? 0, renditions[r].stored)
            let shown = listed.count > r ? listed[r] : listed.first ?? 0
            renditions[r].initItem = .confirmed
            renditions[r].confirmedThrough = confirmed
            for sequence in stride(from: 1, through: confirmed, by: 1) { renditions[r].segments[sequence] = .confirmed }
            for name in renditions[r].playlists { renditions[r].listedBy[name] = min(shown, confirmed) }
        }
        if endlist && localEnded && renditions.allSatisfy({ $0.listed == $0.stored }) {
            for r in renditions.indices {
                renditions[r].endedBy = Set(renditions[r].playlists)
                for name in renditions[r].playlists { renditions[r].playlistItems[name] = .confirmed }
            }
        }
    }

    /// What the journal may say once `job` is confirmed: how many segments each
    /// rendition's playlists all list, and whether every playlist has ENDLIST.
    public func afterConfirming(_ job: Job) -> (listed: [Int], endlist: Bool) {
        guard case .playlist(let path, let count, let ended) = job else {
            return (renditions.map(\.listed), endlistConfirmed)
        }
        let listed = renditions.map { r in
            r.playlists.map { $0 == path ? max(count, r.listedBy[$0] ?? 0) : r.listedBy[$0] ?? 0 }.min() ?? 0
        }
        let endlist = renditions.allSatisfy { r in r.playlists.allSatisfy { $0 == path ? ended || r.endedBy.contains($0) : r.endedBy.contains($0) } }
        return (listed, endlist)
    }

    // MARK: Scheduling

    /// Jobs that may start at `now`, given room for `segmentSlots` more segment uploads;
    /// each returned job is marked in flight. Segments go in order of their number, the
    /// renditions side by side.
    public mutating func start(now: Int64, segmentSlots: Int) -> [Job] {
        var jobs: [Job] = []
        for r in renditions.indices where Self.ready(renditions[r].initItem, now) {
            jobs.append(.initSegment(renditions[r].folder))
            renditions[r].initItem = Self.flying(renditions[r].initItem)
        }
        var room = segmentSlots
        var sequence = (renditions.map(\.confirmedThrough).min() ?? 0) + 1
        let last = renditions.map(\.stored).max() ?? 0
        while room > 0 && sequence <= last {
            for r in renditions.indices where room > 0 && sequence > renditions[r].confirmedThrough && sequence <= renditions[r].stored {
                if let item = renditions[r].segments[sequence], Self.ready(item, now) {
                    jobs.append(.segment(sequence, in: renditions[r].folder))
                    renditions[r].segments[sequence] = Self.flying(item)
                    room -= 1
                }
            }
            sequence += 1
        }
        // index.m3u8 names every rendition: only once all their init segments are up.
        guard renditions.allSatisfy({ $0.initItem == .confirmed }) else { return jobs }
        if multivariantConfirmed < multivariantLocal, Self.ready(multivariantItem, now) {
            jobs.append(.multivariant(version: multivariantLocal))
            multivariantItem = Self.flying(multivariantItem)
        }
        // A playlist only once the multivariant playlist that describes it is up.
        guard multivariantConfirmed == multivariantLocal else { return jobs }
        for r in renditions.indices {
            let ending = localEnded && renditions[r].ending
            for name in renditions[r].playlists where Self.ready(renditions[r].playlistItems[name]!, now) {
                if renditions[r].confirmedThrough > renditions[r].listedBy[name, default: 0] || (ending && !renditions[r].endedBy.contains(name)) {
                    jobs.append(.playlist(name, count: renditions[r].confirmedThrough, ended: ending))
                    renditions[r].playlistItems[name] = Self.flying(renditions[r].playlistItems[name]!)
                }
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
        case .initSegment(let folder):
            guard let r = renditions.firstIndex(where: { $0.folder == folder }) else { return }
            renditions[r].initItem = next(renditions[r].initItem)
        case .segment(let sequence, let folder):
            guard let r = renditions.firstIndex(where: { $0.folder == folder }) else { return }
            renditions[r].segments[sequence] = next(renditions[r].segments[sequence] ?? .confirmed)
            while renditions[r].segments[renditions[r].confirmedThrough + 1] == .confirmed {
                renditions[r].confirmedThrough += 1
                renditions[r].storedAt[renditions[r].confirmedThrough] = nil
            }
        case .multivariant(let version):
            multivariantItem = next(multivariantItem)
            if succeeded {
                multivariantConfirmed = max(multivariantConfirmed, version)
                if multivariantConfirmed < multivariantLocal { multivariantItem = .pending(notBefore: 0, failures: 0) }
            }
        case .playlist(let name, let count, let ended):
            guard let r = renditions.firstIndex(where: { $0.playlists.contains(name) }) else { return }
            renditions[r].playlistItems[name] = next(renditions[r].playlistItems[name] ?? .confirmed)
            if succeeded {
                renditions[r].listedBy[name] = max(renditions[r].listedBy[name, default: 0], count)
                if ended { renditions[r].endedBy.insert(name) } else { renditions[r].playlistItems[name] = .pending(notBefore: 0, failures: 0) }
            }
        }
    }

    /// How many times in a row `job` has failed, and when it may be tried again.
    public func retryState(of job: Job) -> (failures: Int, notBefore: Int64?) {
        let item: Item?
        switch job {
        case .initSegment(let folder): item = renditions.first { $0.folder == folder }?.initItem
        case .segment(let sequence, let folder): item = renditions.first { $0.folder == folder }?.segments[sequence]
        case .multivariant: item = multivariantItem
        case .playlist(let name, _, _): item = renditions.first { $0.playlists.contains(name) }?.playlistItems[name]
        }
        switch item {
        case .pending(let at, let failures)?: return (failures, at)
        case .inFlight(let failures)?: return (failures, nil)
        default: return (0, nil)
        }
    }

    /// When the earliest waiting retry becomes due (nil: nothing is waiting on time).
    public var nextRetry: Int64? {
        let items = [multivariantItem] + renditions.flatMap { [$0.initItem] + Array($0.playlistItems.values) + Array($0.segments.values) }
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
