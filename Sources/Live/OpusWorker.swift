import Logging
import Media
import Threading

/// The feed's Opus encoder on a thread of its own ("onair-opus"): the microphone's sound
/// is handed over on the live output's thread and encoded here, only while a reader wants
/// Opus; with none the encoder is freed. The thread starts when Opus is first wanted. At
/// most a second of sound waits: a thread that fell further behind loses the oldest
/// (and the frames begin again at the next chunk's capture time).
final class OpusWorker: Sendable {
    private struct Queue {
        var chunks: [AudioChunk] = []
        var wanted = false
        var stopping = false
        var thread: WorkerThread?
        var deliver: (@Sendable ([OpusPacket]) -> Void)?
    }

    /// 50 chunks: a second at the 20 ms periods ALSA is asked for.
    static let queuedChunks = 50

    private let queue = Condition(Queue())
    private let bitrate: Int
    private let log: Log

    init(bitrate: Int, log: Log) {
        self.bitrate = bitrate
        self.log = log
    }

    /// Where encoded packets go (set once, by the feed).
    func deliver(to deliver: @escaping @Sendable ([OpusPacket]) -> Void) {
        queue.withLock { $0.deliver = deliver }
    }

    /// Whether the thread was started (it is, once Opus was first wanted).
    var started: Bool { queue.withLock { $0.thread != nil } }
    /// Chunks waiting for the thread.
    var queued: Int { queue.withLock { $0.chunks.count } }

    /// Opus is wanted (a reader takes it) or no longer.
    func set(wanted: Bool) {
        let start = queue.withLock { queue -> Bool in
            queue.wanted = wanted
            if !wanted { queue.chunks = [] }
            return wanted && queue.thread == nil && !queue.stopping
        }
        if start {
            let thread = WorkerThread(name: "onair-opus") { [self] in run() }
            queue.withLock { $0.thread = thread }
        }
        queue.broadcast()
    }

    /// Queues `chunk` for the thread (the live output's thread; returns at once).
    func encode(_ chunk: AudioChunk) {
        queue.withLock { queue in
            guard queue.wanted, !queue.stopping else { return }
            if queue.chunks.count >= Self.queuedChunks { queue.chunks.removeFirst() }
            queue.chunks.append(chunk)
        }
        queue.broadcast()
    }

    func stop() {
        let thread = queue.withLock { queue -> WorkerThread? in
            queue.stopping = true
            defer { queue.thread = nil }
            return queue.thread
        }
        queue.broadcast()
        thread?.join()
    }

    private enum Work {
        case encode([AudioChunk], deliver: (@Sendable ([OpusPacket]) -> Void)?)
        case idle
        case stop
    }

    /// The encoder and the samples not yet a whole frame are the thread's own.
    private func run() {
        var frames = OpusFrames(bitrate: bitrate)
        while true {
            let work = queue.withLock { queue -> ConditionStep<Work> in
                if queue.stopping { return .done(.stop) }
                if !queue.chunks.isEmpty {
                    defer { queue.chunks = [] }
                    return .done(.encode(queue.chunks, deliver: queue.deliver))
                }
                return queue.wanted ? .wait : .done(.idle)
            }
            switch work {
            case .stop:
                return
            case .idle:
                // Nobody wants Opus: the encoder and its pending samples go.
                frames.stop()
                queue.withLock { queue -> ConditionStep<Void> in queue.wanted || queue.stopping ? .done(()) : .wait }
            case .encode(let chunks, let deliver):
                let packets = chunks.flatMap { frames.encode($0, log: log) }
                if !packets.isEmpty { deliver?(packets) }
            }
        }
    }
}
