import Drawing

/// What the screen says around the picture, drawn into an XRGB8888 buffer along its
/// edges: a red frame while recording, and an amber corner (top right) while the uplink
/// is failing. Both stay inside an edge strip `thickness` pixels wide, which an overlay
/// plane leaves uncovered, so they read the same whichever plane shows the picture.
public enum ScreenIndicators {
    public static let thickness = 8
    public static let red: UInt32 = 0x00E0_2020
    public static let amber: UInt32 = 0x00F0_A000
    /// The length of each arm of the amber corner.
    static let corner = 96

    /// Repaints the whole strip: red or black, then the amber corner if the uplink fails.
    public static func draw(_ indicators: DRMDisplay.Indicators, into memory: UnsafeMutableRawPointer, pitch: Int, width: Int, height: Int) {
        let edge = min(thickness, height / 2, width / 2)
        paintStrip(memory, pitch: pitch, width: width, height: height, edge: edge, colour: indicators.recording ? red : 0)
        guard indicators.uplinkFailing else { return }
        let arm = min(corner, width, height)
        for y in 0..<arm {
            let row = (memory + y * pitch).assumingMemoryBound(to: UInt32.self)
            let from = y < edge ? width - arm : width - edge
            for x in from..<width { row[x] = amber }
        }
    }

    private static func paintStrip(_ memory: UnsafeMutableRawPointer, pitch: Int, width: Int, height: Int, edge: Int, colour: UInt32) {
        for y in 0..<height {
            let row = (memory + y * pitch).assumingMemoryBound(to: UInt32.self)
            if y < edge || y >= height - edge {
                for x in 0..<width { row[x] = colour }
            } else {
                for x in 0..<edge { row[x] = colour; row[width - 1 - x] = colour }
            }
        }
    }
}

extension DRMDisplay {
    /// What the screen shows around the picture.
    public struct Indicators: Sendable, Equatable {
        public var recording: Bool
        public var uplinkFailing: Bool
        /// A card beside the picture (the setup network's), which moves the picture left.
        public var card: ScreenCard?
        public init(recording: Bool, uplinkFailing: Bool, card: ScreenCard? = nil) {
            self.recording = recording
            self.uplinkFailing = uplinkFailing
            self.card = card
        }
    }
}
