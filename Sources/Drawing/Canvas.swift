/// A rectangle on a screen, in pixels.
public struct Box: Sendable, Equatable {
    public var x: Int, y: Int, width: Int, height: Int
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

/// An XRGB8888 picture in memory (a framebuffer), `pitch` bytes a row, drawn into with
/// everything clipped to it: a box, a QR code, words in the console font.
public struct Canvas {
    public let memory: UnsafeMutableRawPointer
    public let pitch: Int, width: Int, height: Int

    public init(memory: UnsafeMutableRawPointer, pitch: Int, width: Int, height: Int) {
        self.memory = memory
        self.pitch = pitch
        self.width = width
        self.height = height
    }

    public func fill(_ box: Box, _ colour: UInt32) {
        let left = max(0, box.x), right = min(width, box.x + box.width)
        let top = max(0, box.y), bottom = min(height, box.y + box.height)
        guard left < right, top < bottom else { return }
        for y in top..<bottom {
            let row = (memory + y * pitch).assumingMemoryBound(to: UInt32.self)
            for x in left..<right { row[x] = colour }
        }
    }

    /// The code with its quiet zone of four light modules (ISO/IEC 18004 §6.3.8), `scale`
    /// pixels a module, its top left corner at (x, y).
    public func draw(_ code: QRCode, x: Int, y: Int, scale: Int, dark: UInt32 = 0, light: UInt32 = 0x00FF_FFFF) {
        let quiet = QRCode.quietZone
        fill(Box(x: x, y: y, width: (code.size + 2 * quiet) * scale, height: (code.size + 2 * quiet) * scale), light)
        for row in 0..<code.size {
            for column in 0..<code.size where code[column, row] {
                fill(Box(x: x + (column + quiet) * scale, y: y + (row + quiet) * scale, width: scale, height: scale), dark)
            }
        }
    }

    /// `text` from (x, y), each pixel of the font `scale` pixels square; a character the
    /// font lacks is drawn as '?'. Nothing is drawn past the canvas.
    public func text(_ text: String, x: Int, y: Int, scale: Int, colour: UInt32) {
        var left = x
        for byte in text.utf8 where byte < 0x80 || byte >= 0xC0 {  // one glyph per character
            let code = (ConsoleFont.first...ConsoleFont.last).contains(byte) ? byte : UInt8(ascii: "?")
            let glyph = Int(code - ConsoleFont.first) * ConsoleFont.height
            for row in 0..<ConsoleFont.height {
                let bits = ConsoleFont.rows[glyph + row]
                for column in 0..<ConsoleFont.width where bits & (0x80 >> UInt8(column)) != 0 {
                    fill(Box(x: left + column * scale, y: y + row * scale, width: scale, height: scale), colour)
                }
            }
            left += ConsoleFont.width * scale
            if left >= width { return }
        }
    }

    /// The size of `text` drawn at `scale`, in pixels.
    public static func textSize(_ text: String, scale: Int) -> (width: Int, height: Int) {
        (text.utf8.lazy.filter { $0 < 0x80 || $0 >= 0xC0 }.count * ConsoleFont.width * scale, ConsoleFont.height * scale)
    }
}

extension QRCode {
    /// Light modules around the symbol that a reader needs (§6.3.8).
    public static let quietZone = 4
}
