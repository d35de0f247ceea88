import Codecs
import Devices
import Logging
import Media
import Threading

/// `preview.device`: the camera on the attached screen, on a thread of its own. The
/// capture hands it each frame (or, when the display scans out the camera's own buffers,
/// lends it each buffer) and goes on: newest wins, so a preview that falls behind drops
/// pictures, counted, and never slows capture or encoding. The display shows a red frame
/// while recording and an amber corner while the uplink is failing.
/// `preview.first_frame` is logged when the first flip has completed: the picture is on
/// the screen, and the deferred start may begin.
public final class DisplayPreview: PreviewSink, SharedBufferConsumer, @unchecked Sendable {  // DRMDisplay and PictureConverter are used on the preview thread only
    private let display: DRMDisplay
    private let converter = PictureConverter()
    private struct State {
        /// The newest picture or camera buffer not yet shown.
        var next: VideoFrame?
        var nextBuffer: SharedBuffer?
        var stopped = false
        var firstFrameAt: Double?
        /// Recording, and whether the destination has stopped confirming uploads: from
        /// the pipeline, once it runs (`showIndicators`); none before.
        var indicators: (@Sendable () -> DRMDisplay.Indicators)?
    }
    private let state = Condition(State())
    private let thread: Locked<WorkerThread?> = Locked(nil)
    private let presented = Completion()

    public var firstFrameMilliseconds: Double? { state.withLock { $0.firstFrameAt } }

    /// The session's state on the picture from now on.
    public func showIndicators(_ indicators: @escaping @Sendable () -> DRMDisplay.Indicators) {
        state.withLock { $0.indicators = indicators }
    }

    public init(display: DRMDisplay, log: Log) {
        self.display = display
        log(.previewOpened, ("device", display.path), ("connector", display.connectorName), ("mode", display.mode.description),
            ("modeset", display.atomic ? "atomic" : "legacy"), ("picture", display.plan.description),
            ("why", display.plan.reason ?? "best available"))
        let worker = WorkerThread(name: "onair-preview") { [self] in
            while let (frame, buffer) = take() {
                let shown = state.withLock { $0.indicators }?() ?? DRMDisplay.Indicators(recording: false, uplinkFailing: false)
                let ok = display.show(frame: frame, buffer: buffer, indicators: shown) { [converter] frame, memory, pitch, width, height in
                    converter.draw(frame, into: memory, pitch: pitch, width: width, height: height)
                }
                guard ok else { continue }
                if display.shown == 1 {
                    state.withLock { $0.firstFrameAt = log.elapsedMilliseconds }
                    log(.previewFirstFrame, ("frame", buffer?.frameIndex ?? frame?.index ?? 0), ("device", display.path),
                        ("mode", display.mode.description), ("picture", display.plan.description))
                    presented.signal()
                }
            }
        }
        thread.withLock { $0 = worker }
    }

    public func present(_ frame: VideoFrame) {
        // While the camera's buffers are scanned out, its copies are for the encoders only.
        guard !display.importsCameraBuffers else { return }
        state.withLock { $0.next = frame }
        state.broadcast()
    }

    /// A camera buffer to scan out (on the capture thread: the framebuffer is made now,
    /// while the loan's fd is valid).
    public func offer(_ buffer: SharedBuffer) -> Bool {
        guard display.prepare(buffer) else { return false }
        let replaced = state.withLock { state -> SharedBuffer? in
            guard !state.stopped else { return buffer }
            defer { state.nextBuffer = buffer }
            return state.nextBuffer
        }
        state.broadcast()
        if let replaced { display.giveBack(replaced) }
        return true
    }

    private func take() -> (VideoFrame?, SharedBuffer?)? {
        state.withLock(waitingFor: { [display] state in
            guard state.next != nil || state.nextBuffer != nil || state.stopped else { return .wait }
            defer { state.next = nil; state.nextBuffer = nil }
            if state.stopped {
                if let buffer = state.nextBuffer { display.giveBack(buffer) }
                return .done(nil)
            }
            return .done((state.next, state.nextBuffer))
        })
    }

    public func waitForFirstFrame() { presented.wait() }

    /// Ends the preview and gives the display back.
    public func stop() {
        state.withLock { $0.stopped = true }
        state.broadcast()
        let worker = thread.withLock { thread in defer { thread = nil }; return thread }
        worker?.join()
    }
}
