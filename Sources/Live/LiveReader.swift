import Threading

/// One reader of the live feed (a server's viewers, a destination): its own bounded ring
/// of what was published since it last took, and its own count of what it lost. A reader
/// that falls a whole ring behind loses everything queued — it must begin again at an IDR
/// (`Taken.overflowed`) — and never holds back the encoder or another reader (the model of
/// MediaMTX's stream readers).
public final class LiveReader: Sendable {
    public struct Wants: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// The top rung's pictures.
        public static let pictures = Wants(rawValue: 1)
        /// The live AAC.
        public static let aac = Wants(rawValue: 2)
        /// The microphone's sound encoded as Opus (on the feed's Opus thread).
        public static let opus = Wants(rawValue: 4)
        /// Pictures and AAC with their RTP payloads (made once for every reader that wants them).
        public static let rtp = Wants(rawValue: 8)
    }

    /// What `take` gives: the items in the order published, and whether some were lost
    /// since the last take (the reader then waits for an IDR).
    public struct Taken: Sendable {
        public var items: [LiveItem]
        public var overflowed: Bool
    }

    public let name: String
    let capacity: Int
    let wake: @Sendable () -> Void
    private let state: Locked<Ring>

    struct Ring: Sendable {
        var wants: Wants
        var items: [LiveItem] = []
        var overflowed = false
        /// Items lost to overflow, over the reader's life.
        var discarded = 0
    }

    init(name: String, wants: Wants, capacity: Int, wake: @escaping @Sendable () -> Void) {
        self.name = name
        self.capacity = max(1, capacity)
        self.wake = wake
        state = Locked(Ring(wants: wants))
    }

    public var wants: Wants { state.withLock { $0.wants } }
    /// Items lost because the reader fell behind.
    public var discarded: Int { state.withLock { $0.discarded } }

    /// Everything published for this reader since the last take.
    public func take() -> Taken {
        state.withLock { ring in
            defer { ring.items = []; ring.overflowed = false }
            return Taken(items: ring.items, overflowed: ring.overflowed)
        }
    }

    func set(wants: Wants) { state.withLock { $0.wants = wants } }

    /// Queues `item` if the reader wants `kind`; true if it did (the caller then wakes it).
    func offer(_ item: LiveItem, kind: Wants) -> Bool {
        state.withLock { ring in
            guard ring.wants.contains(kind) else { return false }
            if ring.items.count >= capacity {
                ring.discarded += ring.items.count
                ring.items.removeAll(keepingCapacity: true)
                ring.overflowed = true
            }
            ring.items.append(item)
            return true
        }
    }
}
