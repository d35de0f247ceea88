import HLS
import Devices
import Media
import Threading

/// The bounded hand-off between threads: capture → session, and session → each output.
/// Video and audio have bounds of their own, so a burst of one never evicts the other;
/// control items (a stream's start and end) are never dropped or bounded. Never an unbounded
/// backlog: in real time a full queue drops the oldest item of that kind (newest wins) and
/// counts it; with `--pace fast` the producer waits instead, so a benchmark measures work
/// rather than drops.
public final class MediaQueue: CaptureSink, Sendable {
    public enum Item: Sendable {
        case video(VideoFrame)
        case audio(AudioChunk)
        /// A stream begins at the next video frame.
        case begin(StreamStart)
        /// The stream ends here.
        case finish
        /// Outputs change to this frame rate at their next keyframe boundary.
        case rate(Int)
        /// The live ladder leaves out this many top rungs from its next keyframe boundary.
        case droppedRungs(Int)

        public var kind: Kind {
            switch self {
            case .video: return .video
            case .audio: return .audio
            case .begin, .finish, .rate, .droppedRungs: return .control
            }
        }
    }
    public enum Kind: Sendable { case video, audio, control }
    public enum Policy: Sendable { case dropOldest, block }

    public var videoCapacity: Int { capacity.video }
    public var audioCapacity: Int { capacity.audio }
    private let capacity: (video: Int, audio: Int)
    public let policy: Policy
    /// One condition for both waits (a consumer for an item, a blocked producer for room):
    /// each queue has one consumer and one producer, so broadcasting wakes at most both.
    private let state: Condition<(buffer: MediaBuffer, closed: Bool)>

    public init(videoCapacity: Int, audioCapacity: Int, policy: Policy) {
        precondition(videoCapacity > 0 && audioCapacity > 0)
        capacity = (videoCapacity, audioCapacity)
        self.policy = policy
        state = Condition((MediaBuffer(videoCapacity: videoCapacity, audioCapacity: audioCapacity), false))
    }

    public func capture(_ frame: VideoFrame) { push(.video(frame)) }
    public func capture(_ chunk: AudioChunk) { push(.audio(chunk)) }

    /// `held`: an item of the start-up buffer, which waits for room rather than be dropped
    /// or make room by dropping another held one.
    public func push(_ item: Item, held: Bool = false) {
        let blocks = held || policy == .block
        state.withLock(waitingFor: { state -> ConditionStep<Void> in
            if state.closed { return .done(()) }
            if blocks && state.buffer.isFull(item.kind) { return .wait }
            state.buffer.append(item, held: held)
            return .done(())
        })
        state.broadcast()
    }

    /// The next item, or nil once the queue is closed and empty.
    public func pop() -> Item? { popHeld()?.item }

    /// The next item and whether it was pushed as held (whoever passes it on keeps it so),
    /// or nil once the queue is closed and empty.
    public func popHeld() -> (item: Item, held: Bool)? {
        let next = state.withLock(waitingFor: { state -> ConditionStep<(item: Item, held: Bool)?> in
            if let next = state.buffer.takeFirstHeld() { return .done(next) }
            return state.closed ? .done(nil) : .wait
        })
        state.broadcast()
        return next
    }

    /// Wakes everyone; pushes are ignored from now on, pops drain what is left.
    public func close() {
        state.withLock { $0.closed = true }
        state.broadcast()
    }

    /// Items dropped so far because the consumer fell behind.
    public var dropped: (video: Int, audio: Int) { state.withLock { $0.buffer.dropped } }
}

/// Items waiting between two threads, pictures and sound each bounded on its own (control
/// items are never bounded or dropped): appended to a full kind, the oldest item of that
/// kind goes, counted, so the newest wins. The one drop-oldest buffer: every
/// `MediaQueue`, and the start-up gate's backlog.
public struct MediaBuffer {
    public typealias Item = MediaQueue.Item
    public let videoCapacity: Int
    public let audioCapacity: Int

    /// An item and whether it was held in the start-up buffer while the encoders opened:
    /// the queue makes room for a held item (the producer waits) instead of dropping it,
    /// so a start before the pipeline was ready loses nothing.
    private struct Slot {
        var item: Item
        var held: Bool
    }
    /// Pending items are `items[head...]`; a taken slot is emptied at once, so a picture is
    /// freed when its consumer is done with it, not when the array is next compacted (64
    /// taken slots held up to 40 MB of 720p pictures).
    private var items: [Slot?] = []
    private var head = 0
    private var videoCount = 0
    private var audioCount = 0
    public private(set) var dropped = (video: 0, audio: 0)

    public init(videoCapacity: Int, audioCapacity: Int) {
        self.videoCapacity = videoCapacity
        self.audioCapacity = audioCapacity
    }

    public var isEmpty: Bool { head == items.count }
    public var videoFrames: Int { videoCount }

    public func isFull(_ kind: MediaQueue.Kind) -> Bool {
        switch kind {
        case .video: return videoCount >= videoCapacity
        case .audio: return audioCount >= audioCapacity
        case .control: return false
        }
    }

    /// Appends `item`; when its kind is full, the oldest of that kind goes first (one not
    /// held, if there is one), unless `evicting` is off (then the bound is the caller's).
    public mutating func append(_ item: Item, held: Bool = false, evicting: Bool = true) {
        if evicting && isFull(item.kind) { dropOldest(item.kind) }
        items.append(Slot(item: item, held: held))
        adjust(item.kind, 1)
    }

    /// Drops the oldest pending item of `kind`, counted.
    public mutating func dropOldest(_ kind: MediaQueue.Kind) {
        guard let index = items[head...].firstIndex(where: { $0?.item.kind == kind && $0?.held == false })
            ?? items[head...].firstIndex(where: { $0?.item.kind == kind }) else { return }
        items.remove(at: index)
        adjust(kind, -1)
        if kind == .video { dropped.video += 1 } else { dropped.audio += 1 }
    }

    /// Drops what comes before the oldest picture (the sound of a picture dropped before).
    public mutating func dropBeforeFirstPicture() {
        while let first = items[head...].first, let slot = first, slot.item.kind != .video {
            items.remove(at: head)
            adjust(slot.item.kind, -1)
        }
    }

    public mutating func takeFirst() -> Item? { takeFirstHeld()?.item }

    /// The oldest pending item, and whether it was appended as held.
    public mutating func takeFirstHeld() -> (item: Item, held: Bool)? {
        guard head < items.count, let slot = items[head] else { return nil }
        items[head] = nil
        head += 1
        adjust(slot.item.kind, -1)
        if head > 64 && head * 2 > items.count { items.removeFirst(head); head = 0 }
        return (slot.item, slot.held)
    }

    public mutating func removeAll() {
        items = []
        head = 0
        videoCount = 0
        audioCount = 0
    }

    private mutating func adjust(_ kind: MediaQueue.Kind, _ delta: Int) {
        switch kind {
        case .video: videoCount += delta
        case .audio: audioCount += delta
        case .control: break
        }
    }
}

/// What every output of a stream shares: its id and its calendar (PROGRAM-DATE-TIME, the
/// recording's start), so the live stream and the recording are dated alike.
public struct StreamStart: Sendable, Equatable {
    public var id: String
    public var dating: StreamDating
    public init(id: String, dating: StreamDating) {
        self.id = id
        self.dating = dating
    }

    public static func == (a: StreamStart, b: StreamStart) -> Bool { a.id == b.id && a.dating === b.dating }
}
