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
final class FirstFramePreview: PreviewSink, Sendable {
    private let presented = Completion()
    private let first = Locked<Double?>(nil)
    private let log: Log

    init(log: Log) { self.log = log }

    var firstFrameMilliseconds: Double? { first.withLock { $0 } }

    func present(_ frame: VideoFrame) {
        let isFirst = first.withLock { [log] first -> Bool in
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
final class StartupGate: CaptureSink, Sendable {
    private let preview: PreviewSink
    private struct State {
        var held: [MediaQueue.Item] = []
        var heldVideo = 0
        var target: MediaQueue?
        var direct = false
        var closed = false
        var firstFrame = true
        var dropped = 0
        var feeder: WorkerThread?
    }
    private let state = Condition(State())
    private let capacity: Int
    /// `--pace fast`: a full buffer makes the producer wait rather than drop.
    private let blocking: Bool
    private let log: Log
    /// Frames dropped because the buffer was full before the pipeline opened.
    var droppedWhileHeld: Int { state.withLock { $0.dropped } }

    /// `capacity`: how many frames may be held (sound rides along with them).
    init(capacity: Int, blocking: Bool, preview: PreviewSink, log: Log) {
        self.capacity = max(1, capacity)
        self.blocking = blocking
        self.preview = preview
        self.log = log
    }

    func capture(_ frame: VideoFrame) {
        if state.withLock({ state -> Bool in defer { state.firstFrame = false }; return state.firstFrame }) {
            log(.cameraFirstFrame, ("frame", frame.index))
        }
        preview.present(frame)
        forward(.video(frame))
    }

    func capture(_ chunk: AudioChunk) { forward(.audio(chunk)) }

    private func forward(_ item: MediaQueue.Item) {
        let isVideo = item.kind == .video
        let queue = state.withLock(waitingFor: { [capacity, blocking] state -> ConditionStep<MediaQueue?> in
            if isVideo && blocking && state.heldVideo >= capacity && !state.direct && !state.closed { return .wait }
            if state.closed { return .done(nil) }
            if state.direct { return .done(state.target) }
            state.held.append(item)
            if isVideo {
                state.heldVideo += 1
                // Full: the oldest frame goes, with the sound before the next one.
                while state.heldVideo > capacity, let oldest = state.held.firstIndex(where: { $0.kind == .video }) {
                    let next = state.held[(oldest + 1)...].firstIndex(where: { $0.kind == .video }) ?? state.held.endIndex
                    state.held.removeSubrange(0..<next)
                    state.heldVideo -= 1
                    state.dropped += 1
                }
            }
            return .done(nil)
        })
        queue?.push(item)
    }

    /// The pipeline is ready: hand over what is held, then pass frames straight on.
    func open(into queue: MediaQueue) {
        let (count, dropped) = state.withLock { state -> (Int, Int) in state.target = queue; return (state.heldVideo, state.dropped) }
        log(.startupBuffer, ("held_frames", count), ("dropped_frames", dropped))
        let feeder = WorkerThread(name: "onair-startup") { [state] in
            while true {
                let next = state.withLock { state -> MediaQueue.Item? in
                    guard !state.held.isEmpty else { state.direct = true; return nil }
                    let item = state.held.removeFirst()
                    if item.kind == .video { state.heldVideo -= 1 }
                    return item
                }
                state.broadcast()
                guard let item = next else { return }
                queue.push(item, held: true)
            }
        }
        state.withLock { $0.feeder = feeder }
    }

    /// Waits for the held frames to be handed over.
    func join() { state.withLock { $0.feeder }?.join() }

    /// Nothing more goes anywhere; a producer waiting for room is let go (the run ends, or
    /// the pipeline failed to start and will never take the held frames).
    func close() {
        state.withLock { state in
            state.closed = true
            state.held = []
            state.heldVideo = 0
        }
        state.broadcast()
    }
}
