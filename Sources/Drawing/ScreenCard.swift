/// What the attached screen shows beside the picture while the board needs its owner (its
/// setup network is open): a title, a QR code a phone's camera reads, and a few lines of
/// words, dark on light in a panel at the screen's right. The picture moves left to make
/// room, so nothing of it is hidden.
public struct ScreenCard: Sendable, Equatable {
    public var title: String
    public var code: QRCode?
    public var lines: [String]

    public init(title: String, code: QRCode?, lines: [String]) {
        self.title = title
        self.code = code
        self.lines = lines
    }

    public static let paper: UInt32 = 0x00FF_FFFF, ink: UInt32 = 0x0000_0000

    /// The boxes of the picture and of the card on a screen `width` × `height` whose edge
    /// strip is `inset` wide: the card the right two fifths inside the strip, the picture
    /// the rest.
    public static func layout(width: Int, height: Int, inset: Int) -> (picture: Box, card: Box) {
        let inner = Box(x: inset, y: inset, width: max(0, width - 2 * inset), height: max(0, height - 2 * inset))
        let cardWidth = inner.width * 2 / 5
        return (Box(x: inner.x, y: inner.y, width: inner.width - cardWidth, height: inner.height),
                Box(x: inner.x + inner.width - cardWidth, y: inner.y, width: cardWidth, height: inner.height))
    }

    /// The card drawn into `box` of `canvas`: the words at the largest of 3, 2 or 1 times
    /// the font that fits the box's width, the code as large as what is left allows.
    public func draw(on canvas: Canvas, in box: Box) {
        canvas.fill(box, Self.paper)
        let margin = max(4, box.width / 24)
        let inner = box.width - 2 * margin
        let longest = ([title] + lines).map { Canvas.textSize($0, scale: 1).width }.max() ?? 0
        let scale = (1...3).reversed().first { longest * $0 <= inner } ?? 1
        let line = Canvas.textSize("", scale: scale).height + scale * 4
        let modules = code.map { $0.size + 2 * QRCode.quietZone } ?? 0
        let room = box.height - 2 * margin - (1 + lines.count) * line - margin
        let size = modules == 0 ? 0 : max(1, min(inner / modules, room / modules))
        // The whole of it in the middle of the card's height.
        var y = box.y + max(margin, (box.height - (1 + lines.count) * line - margin - modules * size) / 2)
        canvas.text(title, x: box.x + margin, y: y, scale: scale, colour: Self.ink)
        y += line
        if let code {
            canvas.draw(code, x: box.x + (box.width - modules * size) / 2, y: y, scale: size, dark: Self.ink, light: Self.paper)
            y += modules * size + margin
        }
        for text in lines {
            canvas.text(text, x: box.x + margin, y: y, scale: scale, colour: Self.ink)
            y += line
        }
    }
}
