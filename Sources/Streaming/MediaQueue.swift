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
public final class MediaQueue: CaptureSink, @unchecked Sendable {  // every var under `condition`
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
    }
    enum Kind { case video, audio, control }
    public enum Policy: Sendable { case dropOldest, block }

    public let videoCapacity: Int
    public let audioCapacity: Int
    public let policy: Policy
    /// An item and whether it was held in the start-up buffer while the encoders opened:
    /// the queue makes room for a held item (the producer waits) instead of dropping it,
    /// so a start before the pipeline was ready loses nothing.
    private struct Slot {
        var item: Item
        var held: Bool
    }
    /// Pending items are `items[head...]`; a popped slot is emptied at once, so a picture
    /// is freed when its consumer is done with it, not when the array is next compacted
    /// (64 popped slots held up to 40 MB of 720p pictures).
    private var items: [Slot?] = []
    private var head = 0
    private var closed = false
    private var videoCount = 0
    private var audioCount = 0
    /// One condition for both waits (a consumer for an item, a blocked producer for room):
    /// each queue has one consumer and one producer, so broadcasting wakes at most both.
    private let condition = Condition()
    private var droppedVideo = 0
    private var droppedAudio = 0

    public init(videoCapacity: Int, audioCapacity: Int, policy: Policy) {
        precondition(videoCapacity > 0 && audioCapacity > 0)
        self.videoCapacity = videoCapacity
        self.audioCapacity = audioCapacity
        self.policy = policy
    }

    private var pending: Int { items.count - head }

    public func capture(_ frame: VideoFrame) { push(.video(frame)) }
    public func capture(_ chunk: AudioChunk) { push(.audio(chunk)) }

    private static func kind(_ item: Item?) -> Kind {
        switch item {
        case .video: return .video
        case .audio: return .audio
        case .begin, .finish, .rate, .droppedRungs, nil: return .control
        }
    }

    private func adjust(_ kind: Kind, _ delta: Int) {
        switch kind {
        case .video: videoCount += delta
        case .audio: audioCount += delta
        case .control: break
        }
    }

    /// `held`: an item of the start-up buffer, which waits for room rather than be dropped
    /// or make room by dropping another held one.
    public func push(_ item: Item, held: Bool = false) {
        condition.withLock { append(Slot(item: item, held: held)) }
    }

    private func append(_ slot: Slot) {
        let kind = Self.kind(slot.item)
        func full() -> Bool {
            switch kind {
            case .video: return videoCount >= videoCapacity
            case .audio: return audioCount >= audioCapacity
            case .control: return false
            }
        }
        if closed { return }
        if full() {
            switch slot.held ? .block : policy {
            case .block:
                while full() && !closed { condition.wait() }
                if closed { return }
            case .dropOldest:
                // Never a held item (the start-up backlog): the next one of the kind.
                if let index = items[head...].firstIndex(where: { Self.kind($0?.item) == kind && $0?.held == false })
                    ?? items[head...].firstIndex(where: { Self.kind($0?.item) == kind }) {
                    items.remove(at: index)
                    adjust(kind, -1)
                    if kind == .video { droppedVideo += 1 } else { droppedAudio += 1 }
                }
            }
        }
        items.append(slot)
        adjust(kind, 1)
        condition.broadcast()
    }

    /// The next item, or nil once the queue is closed and empty.
    public func pop() -> Item? {
        condition.withLock { take() }
    }

    private func take() -> Item? {
        while pending == 0 && !closed { condition.wait() }
        guard pending > 0 else { return nil }
        guard let item = items[head]?.item else { preconditionFailure("a pending slot is never empty") }
        items[head] = nil
        head += 1
        adjust(Self.kind(item), -1)
        if head > 64 && head * 2 > items.count { items.removeFirst(head); head = 0 }
        condition.broadcast()
        return item
    }

    /// Wakes everyone; pushes are ignored from now on, pops drain what is left.
    public func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }

    /// Items dropped so far because the consumer fell behind.
    public var dropped: (video: Int, audio: Int) {
        condition.withLock { (droppedVideo, droppedAudio) }
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
