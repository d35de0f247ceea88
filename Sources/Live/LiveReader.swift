import Threading

/// One reader of the live feed (a server's viewers, a destination, the HLS packager): its
/// own bounded ring of what was published since it last took, and its own count of what
/// it lost. A real-time reader that falls a whole ring behind loses everything queued — it
/// must begin again at an IDR (`Taken.overflowed`) — and never holds back the encoder or
/// another reader (the model of MediaMTX's stream readers). A complete reader (`.complete`)
/// loses nothing: while its ring is full the publisher waits (back-pressure, as a write
/// on the encoder's own thread would hold it), and the stream's end waits until it says
/// it is done.
public final class LiveReader: Sendable {
    public struct Wants: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// The pictures of the reader's rung (`LiveReader.rung`; the highest encoded one
        /// while its own is left out).
        public static let pictures = Wants(rawValue: 1)
        /// The live AAC.
        public static let aac = Wants(rawValue: 2)
        /// The microphone's sound encoded as Opus (on the feed's Opus thread).
        public static let opus = Wants(rawValue: 4)
        /// Pictures and AAC with their RTP payloads (made once for every reader that wants them).
        public static let rtp = Wants(rawValue: 8)
        /// Every encoded sample of every rung, the stream's changes and its end
        /// (`LiveItem.encoded`), never lost.
        public static let complete = Wants(rawValue: 16)
        /// Where each stream begins and ends (`LiveItem.began`, `.ended`), in order with
        /// its pictures and sound: a destination connects and ends its broadcast by them.
        /// (A ring that overflows loses these too: the reader then asks `LiveFeed.now`.)
        public static let streams = Wants(rawValue: 32)
    }

    /// What `take` gives: the items in the order published, and whether some were lost
    /// since the last take (the reader then waits for an IDR).
    public struct Taken: Sendable {
        public var items: [LiveItem]
        public var overflowed: Bool
    }

    public let name: String
    /// The rung of the quality ladder whose pictures it takes (0: the top, as configured).
    /// While the rung is left out (the heat, or the cost check) it takes the highest one
    /// encoded, which begins at an IDR (every rung's IDRs fall on the same frames, and
    /// rungs change only at one); its size may change there.
    public let rung: Int
    let capacity: Int
    let wake: @Sendable () -> Void
    private let state: Condition<Ring>

    struct Ring: Sendable {
        var wants: Wants
        var items: [LiveItem] = []
        var overflowed = false
        /// Items lost to overflow, over the reader's life.
        var discarded = 0
        /// Takes nothing more: it left, said it is done, or its stream was given up.
        var closed = false
        /// A complete reader that said it is done (its stream's end, or a failure).
        var done = false
    }

    init(name: String, wants: Wants, rung: Int, capacity: Int, wake: @escaping @Sendable () -> Void) {
        self.name = name
        self.rung = max(0, rung)
        self.capacity = max(1, capacity)
        self.wake = wake
        state = Condition(Ring(wants: wants))
    }

    public var wants: Wants { state.withLock { $0.wants } }
    /// Items lost because the reader fell behind.
    public var discarded: Int { state.withLock { $0.discarded } }

    /// Everything published for this reader since the last take.
    public func take() -> Taken {
        let taken = state.withLock { ring in
            defer { ring.items = []; ring.overflowed = false }
            return Taken(items: ring.items, overflowed: ring.overflowed)
        }
        state.broadcast()
        return taken
    }

    /// A complete reader's wait: what was published since the last take, once there is
    /// some; nil once the reader is closed and nothing is left.
    public func next() -> [LiveItem]? {
        let items = state.withLock(waitingFor: { ring -> ConditionStep<[LiveItem]?> in
            if !ring.items.isEmpty {
                defer { ring.items = [] }
                return .done(ring.items)
            }
            return ring.closed ? .done(nil) : .wait
        })
        state.broadcast()
        return items
    }

    func set(wants: Wants) { state.withLock { $0.wants = wants } }

    /// Queues `item` if the reader wants `kind`; true if it did (the caller then wakes it).
    /// A complete reader's item waits for room; one closed meanwhile takes nothing.
    func offer(_ item: LiveItem, kind: Wants) -> Bool {
        guard kind == .complete else {
            return state.withLock { ring in
                guard ring.wants.contains(kind), !ring.closed else { return false }
                if ring.items.count >= capacity {
                    ring.discarded += ring.items.count
                    ring.items.removeAll(keepingCapacity: true)
                    ring.overflowed = true
                }
                ring.items.append(item)
                return true
            }
        }
        let queued = state.withLock(waitingFor: { ring -> ConditionStep<Bool> in
            guard ring.wants.contains(kind), !ring.closed else { return .done(false) }
            guard ring.items.count < capacity else { return .wait }
            ring.items.append(item)
            return .done(true)
        })
        state.broadcast()
        return queued
    }

    /// Takes nothing more; `done`: a complete reader finished (its `next` then gives nil
    /// once emptied, and `waitUntilDone` returns).
    func close(done: Bool = false) {
        state.withLock { ring in
            ring.closed = true
            if done { ring.done = true; ring.items = [] }
        }
        state.broadcast()
    }

    /// Waits until a complete reader says it is done, or is closed without it.
    func waitUntilDone() {
        state.withLock(waitingFor: { ring -> ConditionStep<Void> in ring.done || ring.closed ? .done(()) : .wait })
    }
}
