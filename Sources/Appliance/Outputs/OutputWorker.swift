import Devices
import Media

/// One use of the capture (the live stream, the recording): it encodes and writes on a
/// thread of its own, so one falling behind never holds up the other.
protocol StreamOutput: AnyObject {
    var name: String { get }
    /// Opens the encoders for the first stream, before any frame needs them.
    func prepare() throws
    func begin(_ start: StreamStart, firstFrame: VideoFrame) throws
    func encode(_ frame: VideoFrame) throws
    func encode(_ chunk: AudioChunk) throws
    func finish() throws
}

/// An output's thread and its own bounded queue. The session hands every item to each
/// worker; a worker whose queue is full drops its own oldest picture (and counts it),
/// never another output's.
final class OutputWorker: @unchecked Sendable {
    let output: StreamOutput
    let queue: MediaQueue
    private var thread: ThreadHandle?
    private let failed: @Sendable (String, Error) -> Void

    init(_ output: StreamOutput, queue: MediaQueue, failed: @escaping @Sendable (String, Error) -> Void) {
        self.output = output
        self.queue = queue
        self.failed = failed
        thread = ThreadHandle(name: "onair-\(output.name)") { [self] in run() }
    }

    /// Lets the worker finish what it holds, then ends its thread.
    func stop() {
        queue.close()
        thread?.join()
        thread = nil
    }

    private func run() {
        var pending: StreamStart?
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
                    } else if active {
                        try output.encode(frame)
                    }
                case .audio(let chunk):
                    if active { try output.encode(chunk) }
                case .finish:
                    pending = nil
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
