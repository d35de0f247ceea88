import Devices
import Logging
import Media
import System
import Threading

/// Where the first use of a captured frame goes: the screen. The DRM/KMS preview plugs
/// in here; until then "presented" means handed to this sink.
public protocol PreviewSink: AnyObject, Sendable {
    func present(_ frame: VideoFrame)
    /// Returns once the first frame is presented (on a screen: after its flip).
    func waitForFirstFrame()
    /// When the first frame was presented, in the log's milliseconds since process start.
    var firstFrameMilliseconds: Double? { get }
}

/// Notes the first presented frame and tells whoever waits for it (the deferred start).
public final class FirstFramePreview: PreviewSink, Sendable {
    private let presented = Completion()
    private let first = Locked<Double?>(nil)
    private let log: Log

    public init(log: Log) { self.log = log }

    public var firstFrameMilliseconds: Double? { first.withLock { $0 } }

    public func present(_ frame: VideoFrame) {
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

    public func waitForFirstFrame() { presented.wait() }
}

/// Between the camera and the session: every frame goes to the preview at once; until
/// the pipeline is ready (`open`), frames are also held, up to `startup.buffer_seconds`,
/// so a start asked for before the encoders existed still begins with the frame it was
/// asked at. Once open, a feeder hands the held frames over in order (pushed as held, so
/// the queue drops none of them) and then the gate passes everything straight through.
public final class StartupGate: CaptureSink, Sendable {
    private let preview: PreviewSink
    /// Each frame is kept for `GET /api/snapshot.jpg` too.
    private let snapshots: Snapshots?
    private struct State {
        /// Up to `capacity` frames; the sound rides along with them (before the oldest
        /// frame there is none), bounded only by their number.
        var held: MediaBuffer
        var target: MediaQueue?
        var direct = false
        var closed = false
        var firstFrame = true
        var feeder: WorkerThread?
    }
    private let state: Condition<State>
    private let capacity: Int
    /// `--pace fast`: a full buffer makes the producer wait rather than drop.
    private let blocking: Bool
    private let log: Log
    /// Frames dropped because the buffer was full before the pipeline opened.
    var droppedWhileHeld: Int { state.withLock { $0.held.dropped.video } }

    /// `capacity`: how many frames may be held (sound rides along with them).
    public init(capacity: Int, blocking: Bool, preview: PreviewSink, snapshots: Snapshots? = nil, log: Log) {
        self.snapshots = snapshots
        self.capacity = max(1, capacity)
        state = Condition(State(held: MediaBuffer(videoCapacity: self.capacity, audioCapacity: .max)))
        self.blocking = blocking
        self.preview = preview
        self.log = log
    }

    public func capture(_ frame: VideoFrame) {
        if state.withLock({ state -> Bool in defer { state.firstFrame = false }; return state.firstFrame }) {
            log(.cameraFirstFrame, ("frame", frame.index))
        }
        preview.present(frame)
        snapshots?.keep(frame)
        forward(.video(frame))
    }

    public func capture(_ chunk: AudioChunk) { forward(.audio(chunk)) }

    private func forward(_ item: MediaQueue.Item) {
        let isVideo = item.kind == .video
        let queue = state.withLock(waitingFor: { [blocking] state -> ConditionStep<MediaQueue?> in
            if isVideo && blocking && state.held.isFull(.video) && !state.direct && !state.closed { return .wait }
            if state.closed { return .done(nil) }
            if state.direct { return .done(state.target) }
            // Full: the oldest frame goes, with the sound before the next one. Once the
            // pipeline is open nothing more is dropped here: the feeder is handing the
            // backlog over, and the queue it feeds waits for room.
            let dropped = state.held.dropped.video
            state.held.append(item, evicting: state.target == nil)
            if state.held.dropped.video > dropped { state.held.dropBeforeFirstPicture() }
            return .done(nil)
        })
        queue?.push(item)
    }

    /// The pipeline is ready: hand over what is held, then pass frames straight on.
    public func open(into queue: MediaQueue) {
        let (count, dropped) = state.withLock { state -> (Int, Int) in state.target = queue; return (state.held.videoFrames, state.held.dropped.video) }
        log(.startupBuffer, ("held_frames", count), ("dropped_frames", dropped))
        let feeder = WorkerThread(name: "onair-startup") { [state] in
            while true {
                let next = state.withLock { state -> MediaQueue.Item? in
                    guard let item = state.held.takeFirst() else { state.direct = true; return nil }
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
    public func join() { state.withLock { $0.feeder }?.join() }

    /// Nothing more goes anywhere; a producer waiting for room is let go (the run ends, or
    /// the pipeline failed to start and will never take the held frames).
    public func close() {
        state.withLock { state in
            state.closed = true
            state.held.removeAll()
        }
        state.broadcast()
    }
}
