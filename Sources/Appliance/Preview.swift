import Codecs
import Devices
import Foundation
import Media

/// `preview.device`: the camera on the attached screen, on a thread of its own. The
/// capture hands it each frame and goes on (newest wins: a preview that falls behind drops
/// pictures, counted, and never slows capture or encoding); it letterboxes the picture
/// into the display mode, draws a red border while recording (and an amber square in the
/// top right corner while the uplink is failing), and flips at vblank.
/// `preview.first_frame` is logged when the first flip has completed: the picture is on
/// the screen, and the deferred start may begin.
final class DisplayPreview: PreviewSink, @unchecked Sendable {
    private let display: DRMDisplay
    private let converter = PictureConverter()
    private let condition = NSCondition()
    private var next: VideoFrame?
    private var stopped = false
    private var thread: ThreadHandle?
    private let presented = Completion()
    private(set) var dropped = 0
    private var shown = 0

    /// `state`: recording, and whether the destination has stopped confirming uploads.
    init(display: DRMDisplay, log: Log, state: @escaping @Sendable () -> (recording: Bool, uplinkFailing: Bool)) {
        self.display = display
        log("preview.opened", ("device", display.path), ("connector", display.connectorName), ("mode", display.mode.description),
            ("plane", "primary"), ("format", "XRGB8888"))
        thread = ThreadHandle(name: "onair-preview") { [self] in
            while let frame = take() {
                let (border, failing) = state()
                let ok = display.show { memory, pitch, width, height in
                    let box = letterbox(source: (frame.width, frame.height), target: (width, height))
                    // The bars stay black (the buffers start black and the box never moves);
                    // the edge strip is red while recording, black again after.
                    if !border { Self.drawBorder(memory, pitch: pitch, width: width, height: height, colour: 0) }
                    converter.draw(frame, into: memory + box.y * pitch + box.x * 4, pitch: pitch, width: box.width, height: box.height)
                    if border { Self.drawBorder(memory, pitch: pitch, width: width, height: height, colour: 0x00E0_2020) }
                    if failing { Self.drawUplinkWarning(memory, pitch: pitch, width: width, height: height) }
                }
                if ok {
                    shown += 1
                    if shown == 1 {
                        log("preview.first_frame", ("frame", frame.index), ("device", display.path), ("mode", display.mode.description))
                        presented.signal()
                    }
                } else {
                    condition.withLock { dropped += 1 }
                }
            }
        }
    }

    func present(_ frame: VideoFrame) {
        condition.withLock {
            if next != nil { dropped += 1 }
            next = frame
            condition.signal()
        }
    }

    private func take() -> VideoFrame? {
        condition.withLock {
            while next == nil && !stopped { condition.wait() }
            defer { next = nil }
            return stopped ? nil : next
        }
    }

    func waitForFirstFrame() { presented.wait() }

    /// Ends the preview and gives the display back.
    func stop() {
        condition.withLock { stopped = true; condition.signal() }
        thread?.join()
        thread = nil
    }

    /// The uplink indicator: an amber square in the top right corner, inside the border.
    static func drawUplinkWarning(_ memory: UnsafeMutableRawPointer, pitch: Int, width: Int, height: Int) {
        let side = min(32, width / 8, height / 8), margin = 16
        guard width > side + margin, height > side + margin else { return }
        for y in margin..<(margin + side) {
            let row = (memory + y * pitch).assumingMemoryBound(to: UInt32.self)
            for x in (width - margin - side)..<(width - margin) { row[x] = 0x00F0_A000 }
        }
    }

    /// The recording indicator: an 8-pixel red frame around the screen.
    static func drawBorder(_ memory: UnsafeMutableRawPointer, pitch: Int, width: Int, height: Int, colour red: UInt32) {
        let thickness = min(8, height / 2, width / 2)
        for y in 0..<height {
            let row = (memory + y * pitch).assumingMemoryBound(to: UInt32.self)
            if y < thickness || y >= height - thickness {
                for x in 0..<width { row[x] = red }
            } else {
                for x in 0..<thickness { row[x] = red; row[width - 1 - x] = red }
            }
        }
    }
}
