import Devices
import Logging
import Media
import Streaming
import Threading
#if canImport(Glibc)
import Glibc
#endif

/// Where the first use of a captured frame goes: the screen. The DRM/KMS preview plugs
/// in here; until then "presented" means handed to this sink.
protocol PreviewSink: AnyObject, Sendable {
    func present(_ frame: VideoFrame)
    /// Returns once the first frame is presented (on a screen: after its flip).
    func waitForFirstFrame()
    /// When the first frame was presented, in the log's milliseconds since process start.
    var firstFrameMilliseconds: Double? { get }
}

/// Notes the first presented frame and tells whoever waits for it (the deferred start).
final class FirstFramePreview: PreviewSink, @unchecked Sendable {  // `first` under `lock`
    private let presented = Completion()
    private let lock = Lock()
    private var first: Double?
    private let log: Log

    init(log: Log) { self.log = log }

    var firstFrameMilliseconds: Double? { lock.withLock { first } }

    func present(_ frame: VideoFrame) {
        let isFirst = lock.withLock { () -> Bool in
            guard first == nil else { return false }
            first = log.elapsedMilliseconds
            return true
        }
        if isFirst {
            log(.previewFirstFrame, ("frame", frame.index), ("sink", "none (no display in this build)"))
            presented.signal()
        }
    }

    func waitForFirstFrame() { presented.wait() }
}

/// Between the camera and the session: every frame goes to the preview at once; until
/// the pipeline is ready (`open`), frames are also held, up to `startup.buffer_seconds`,
/// so a start asked for before the encoders existed still begins with the frame it was
/// asked at. Once open, a feeder hands the held frames over in order (pushed as held, so
/// the queue drops none of them) and then the gate passes everything straight through.
final class StartupGate: CaptureSink, @unchecked Sendable {  // vars under `condition`; `feeder` only in open()/join(), on the run's thread
    private let preview: PreviewSink
    private let condition = Condition()
    private var held: [MediaQueue.Item] = []
    private var heldVideo = 0
    private let capacity: Int
    /// `--pace fast`: a full buffer makes the producer wait rather than drop.
    private let blocking: Bool
    private var target: MediaQueue?
    private var direct = false
    private var closed = false
    private var firstFrame = true
    private let log: Log
    private var droppedCount = 0
    /// Frames dropped because the buffer was full before the pipeline opened.
    var droppedWhileHeld: Int { condition.withLock { droppedCount } }
    private var feeder: WorkerThread?

    /// `capacity`: how many frames may be held (sound rides along with them).
    init(capacity: Int, blocking: Bool, preview: PreviewSink, log: Log) {
        self.capacity = max(1, capacity)
        self.blocking = blocking
        self.preview = preview
        self.log = log
    }

    func capture(_ frame: VideoFrame) {
        if condition.withLock({ () -> Bool in defer { firstFrame = false }; return firstFrame }) {
            log(.cameraFirstFrame, ("frame", frame.index))
        }
        preview.present(frame)
        forward(.video(frame))
    }

    func capture(_ chunk: AudioChunk) { forward(.audio(chunk)) }

    private static func isVideo(_ item: MediaQueue.Item) -> Bool {
        if case .video = item { return true } else { return false }
    }

    private func forward(_ item: MediaQueue.Item) {
        let queue = condition.withLock { () -> MediaQueue? in
            if Self.isVideo(item) && blocking {
                while heldVideo >= capacity && !direct && !closed { condition.wait() }
            }
            if closed { return nil }
            if direct { return target }
            held.append(item)
            if Self.isVideo(item) {
                heldVideo += 1
                // Full: the oldest frame goes, with the sound before the next one.
                while heldVideo > capacity, let oldest = held.firstIndex(where: Self.isVideo) {
                    let next = held[(oldest + 1)...].firstIndex(where: Self.isVideo) ?? held.endIndex
                    held.removeSubrange(0..<next)
                    heldVideo -= 1
                    droppedCount += 1
                }
            }
            return nil
        }
        queue?.push(item)
    }

    /// The pipeline is ready: hand over what is held, then pass frames straight on.
    func open(into queue: MediaQueue) {
        let (count, dropped) = condition.withLock { () -> (Int, Int) in target = queue; return (heldVideo, droppedCount) }
        log(.startupBuffer, ("held_frames", count), ("dropped_frames", dropped))
        feeder = WorkerThread(name: "onair-startup") { [self] in
            while true {
                let next = condition.withLock { () -> MediaQueue.Item? in
                    defer { condition.broadcast() }
                    guard !held.isEmpty else { direct = true; return nil }
                    let item = held.removeFirst()
                    if Self.isVideo(item) { heldVideo -= 1 }
                    return item
                }
                guard let item = next else { return }
                queue.push(item, held: true)
            }
        }
    }

    /// Waits for the held frames to be handed over.
    func join() { feeder?.join() }

    /// Nothing more goes anywhere; a producer waiting for room is let go (the run ends, or
    /// the pipeline failed to start and will never take the held frames).
    func close() {
        condition.withLock {
            closed = true
            held = []
            heldVideo = 0
            condition.broadcast()
        }
    }
}
