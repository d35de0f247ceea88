import Devices
import Media
import Threading

/// One use of the capture (the live stream, the recording): it encodes and writes on a
/// thread of its own, so one falling behind never holds up the other. Between `begin`
/// and `finish` it is driven as its stream is (`EncodingStream`).
protocol StreamOutput: EncodingStream {
    var name: String { get }
    /// Opens the encoders for the first stream, before any frame needs them.
    func prepare() throws
    /// What the prepared video encoders (one per rung) will be asked to do, for the
    /// cost estimate.
    var encodings: [EncodingCost.Output] { get }
    /// While armed with a pre-roll: encode into the pre-roll ring.
    func prime(_ frame: VideoFrame) throws
    func prime(_ chunk: AudioChunk) throws
    func begin(_ start: StreamStart, firstFrame: VideoFrame) throws
}

/// An output's thread and its own bounded queue. The session hands every item to each
/// worker; a worker whose queue is full drops its own oldest picture (and counts it),
/// never another output's.
final class OutputWorker: Sendable {
    let queue: MediaQueue
    /// Runs the output: the output itself is touched on this thread only.
    private let thread: WorkerThread

    init(_ output: StreamOutput, queue: MediaQueue, failed: @escaping @Sendable (String, Error) -> Void) {
        self.queue = queue
        thread = WorkerThread(name: "onair-\(output.name)") { Self.run(output, queue: queue, failed: failed) }
    }

    /// Lets the worker finish what it holds, then ends its thread.
    func stop() {
        queue.close()
        thread.join()
    }

    private static func run(_ output: StreamOutput, queue: MediaQueue, failed: @Sendable (String, Error) -> Void) {
        var pending: StreamStart?
        var early: [AudioChunk] = []  // sound between a start and its first frame
        var active = false
        while let item = queue.pop() {
            do {
                switch item {
                case .begin(let start):
                    pending = start
                case .video(let frame):
                    if let start = pending {
                        pending = nil
                        try output.begin(start, firstFrame: frame)
                        active = true
                        for chunk in early { try output.encode(chunk) }
                        early = []
                    } else if active {
                        try output.encode(frame)
                    } else {
                        try output.prime(frame)
                    }
                case .audio(let chunk):
                    if active { try output.encode(chunk) } else if pending != nil { early.append(chunk) } else { try output.prime(chunk) }
                case .rate(let fps):
                    output.setRate(fps)
                case .droppedRungs(let dropped):
                    output.setDroppedRungs(dropped)
                case .finish:
                    pending = nil
                    early = []
                    if active { active = false; try output.finish() }
                }
            } catch {
                active = false
                pending = nil
                failed(output.name, error)
            }
        }
        if active {
            do { try output.finish() } catch { failed(output.name, error) }
        }
    }
}
