import Codecs
import Devices
#if canImport(Glibc)
import Glibc
#endif
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
final class DisplayPreview: PreviewSink, SharedBufferConsumer, @unchecked Sendable {  // vars under `condition`; `thread` set in init, joined by stop()
    private let display: DRMDisplay
    private let converter = PictureConverter()
    private let condition = Condition()
    private var next: VideoFrame?
    private var nextBuffer: SharedBuffer?
    private var stopped = false
    private var thread: WorkerThread?
    private let presented = Completion()
    private var firstFrameAt: Double?
    /// Recording, and whether the destination has stopped confirming uploads: from the
    /// pipeline, once it runs (`showIndicators`); none before.
    private var indicators: (@Sendable () -> DRMDisplay.Indicators)?

    var firstFrameMilliseconds: Double? { condition.withLock { firstFrameAt } }

    /// The session's state on the picture from now on.
    func showIndicators(_ state: @escaping @Sendable () -> DRMDisplay.Indicators) {
        condition.withLock { indicators = state }
    }

    init(display: DRMDisplay, log: Log) {
        self.display = display
        log(.previewOpened, ("device", display.path), ("connector", display.connectorName), ("mode", display.mode.description),
            ("modeset", display.atomic ? "atomic" : "legacy"), ("picture", display.plan.description),
            ("why", display.plan.reason ?? "best available"))
        thread = WorkerThread(name: "onair-preview") { [self] in
            while let (frame, buffer) = take() {
                let state = condition.withLock { indicators }?() ?? DRMDisplay.Indicators(recording: false, uplinkFailing: false)
                let ok = display.show(frame: frame, buffer: buffer, indicators: state) { [converter] frame, memory, pitch, width, height in
                    converter.draw(frame, into: memory, pitch: pitch, width: width, height: height)
                }
                guard ok else { continue }
                if display.shown == 1 {
                    condition.withLock { firstFrameAt = log.elapsedMilliseconds }
                    log(.previewFirstFrame, ("frame", buffer?.frameIndex ?? frame?.index ?? 0), ("device", display.path),
                        ("mode", display.mode.description), ("picture", display.plan.description))
                    presented.signal()
                }
            }
        }
    }

    func present(_ frame: VideoFrame) {
        // While the camera's buffers are scanned out, its copies are for the encoders only.
        guard !display.importsCameraBuffers else { return }
        condition.withLock {
            next = frame
            condition.signal()
        }
    }

    /// A camera buffer to scan out (on the capture thread: the framebuffer is made now,
    /// while the loan's fd is valid).
    func offer(_ buffer: SharedBuffer) -> Bool {
        guard display.prepare(buffer) else { return false }
        let replaced = condition.withLock { () -> SharedBuffer? in
            guard !stopped else { return buffer }
            defer { nextBuffer = buffer; condition.signal() }
            return nextBuffer
        }
        if let replaced { display.giveBack(replaced) }
        return true
    }

    private func take() -> (VideoFrame?, SharedBuffer?)? {
        condition.withLock {
            while next == nil && nextBuffer == nil && !stopped { condition.wait() }
            defer { next = nil; nextBuffer = nil }
            if stopped {
                if let nextBuffer { display.giveBack(nextBuffer) }
                return nil
            }
            return (next, nextBuffer)
        }
    }

    func waitForFirstFrame() { presented.wait() }

    /// Ends the preview and gives the display back.
    func stop() {
        condition.withLock { stopped = true; condition.signal() }
        thread?.join()
        thread = nil
    }
}
