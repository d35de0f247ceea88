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

    private struct State {
        /// Pending items are `items[head...]`; a popped slot is emptied at once, so a
        /// picture is freed when its consumer is done with it, not when the array is next
        /// compacted (64 popped slots held up to 40 MB of 720p pictures).
        var items: [Slot?] = []
        var head = 0
        var closed = false
        var videoCount = 0
        var audioCount = 0
        var droppedVideo = 0
        var droppedAudio = 0

        var pending: Int { items.count - head }

        func count(_ kind: Kind) -> Int {
            switch kind {
            case .video: return videoCount
            case .audio: return audioCount
            case .control: return 0
            }
        }

        mutating func adjust(_ kind: Kind, _ delta: Int) {
            switch kind {
            case .video: videoCount += delta
            case .audio: audioCount += delta
            case .control: break
            }
        }

        /// Drops the oldest pending item of `kind`: one not held if there is one.
        mutating func dropOldest(_ kind: Kind) {
            guard let index = items[head...].firstIndex(where: { $0?.item.kind == kind && $0?.held == false })
                ?? items[head...].firstIndex(where: { $0?.item.kind == kind }) else { return }
            items.remove(at: index)
            adjust(kind, -1)
            if kind == .video { droppedVideo += 1 } else { droppedAudio += 1 }
        }

        mutating func append(_ slot: Slot) {
            items.append(slot)
            adjust(slot.item.kind, 1)
        }

        mutating func take() -> Item {
            guard let item = items[head]?.item else { preconditionFailure("a pending slot is never empty") }
            items[head] = nil
            head += 1
            adjust(item.kind, -1)
            if head > 64 && head * 2 > items.count { items.removeFirst(head); head = 0 }
            return item
        }
    }
    /// One condition for both waits (a consumer for an item, a blocked producer for room):
    /// each queue has one consumer and one producer, so broadcasting wakes at most both.
    private let state = Condition(State())

    public init(videoCapacity: Int, audioCapacity: Int, policy: Policy) {
        precondition(videoCapacity > 0 && audioCapacity > 0)
        self.videoCapacity = videoCapacity
        self.audioCapacity = audioCapacity
        self.policy = policy
    }

    public func capture(_ frame: VideoFrame) { push(.video(frame)) }
    public func capture(_ chunk: AudioChunk) { push(.audio(chunk)) }

    private func capacity(_ kind: Kind) -> Int {
        switch kind {
        case .video: return videoCapacity
        case .audio: return audioCapacity
        case .control: return .max
        }
    }

    /// `held`: an item of the start-up buffer, which waits for room rather than be dropped
    /// or make room by dropping another held one.
    public func push(_ item: Item, held: Bool = false) {
        let kind = item.kind, capacity = capacity(kind)
        let blocks = held || policy == .block
        state.withLock(waitingFor: { state -> ConditionStep<Void> in
            if state.closed { return .done(()) }
            if state.count(kind) >= capacity {
                if blocks { return .wait }
                state.dropOldest(kind)
            }
            state.append(Slot(item: item, held: held))
            return .done(())
        })
        state.broadcast()
    }

    /// The next item, or nil once the queue is closed and empty.
    public func pop() -> Item? {
        let item = state.withLock(waitingFor: { state -> ConditionStep<Item?> in
            if state.pending > 0 { return .done(state.take()) }
            return state.closed ? .done(nil) : .wait
        })
        state.broadcast()
        return item
    }

    /// Wakes everyone; pushes are ignored from now on, pops drain what is left.
    public func close() {
        state.withLock { $0.closed = true }
        state.broadcast()
    }

    /// Items dropped so far because the consumer fell behind.
    public var dropped: (video: Int, audio: Int) {
        state.withLock { ($0.droppedVideo, $0.droppedAudio) }
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
