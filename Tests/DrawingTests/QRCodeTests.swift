import Foundation
import TestSupport
import XCTest
@testable import Drawing

/// The QR codes onair draws, read back by a real reader (zbarimg, from Debian's
/// zbar-tools) from the pixels as the screen gets them.
final class QRCodeTests: XCTestCase {
    var directory = ""

    override func setUp() {
        directory = NSTemporaryDirectory() + "onair-drawing-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    /// XRGB8888 pixels as a PGM file, and what zbarimg reads from it (nil: nothing).
    func read(_ pixels: [UInt32], width: Int, height: Int) throws -> String? {
        let path = directory + "/code-\(UUID().uuidString).pgm"
        var file = Array("P5\n\(width) \(height)\n255\n".utf8)
        file += pixels.map { UInt8($0 & 0xFF) }
        try Data(file).write(to: URL(fileURLWithPath: path))
        let (status, output) = try toolOutput("/usr/bin/zbarimg", ["--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", path])
        guard status == 0 else { return nil }
        var text = String(decoding: output, as: UTF8.self)
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    func render(_ code: QRCode, scale: Int = 4) -> (pixels: [UInt32], side: Int) {
        let side = (code.size + 2 * QRCode.quietZone) * scale
        var pixels = Array(repeating: UInt32(0x00FF_00FF), count: side * side)
        pixels.withUnsafeMutableBytes {
            Canvas(memory: $0.baseAddress!, pitch: side * 4, width: side, height: side).draw(code, x: 0, y: 0, scale: scale)
        }
        return (pixels, side)
    }

    func testEveryLevelAndManyVersionsReadBack() throws {
        // Lengths that need versions 1, 2, 6, 7 (version information), 10 (a 16-bit count),
        // 22 and 40, at each level.
        let lengths = [1, 14, 100, 130, 250, 600, 1200]
        for correction in QRCode.Correction.allCases {
            for length in lengths {
                let text = String((0..<length).map { i in Character(UnicodeScalar(UInt8(33 + (i * 7 + length) % 90))) })
                guard let code = QRCode(text: text, correction: correction) else {
                    XCTAssertGreaterThan(length, 1000, "\(length) bytes at \(correction) fit in version 40")
                    continue
                }
                XCTAssertEqual(code.size, 4 * code.version + 17)
                let (pixels, side) = render(code, scale: code.version > 20 ? 3 : 4)
                XCTAssertEqual(try read(pixels, width: side, height: side), text,
                               "\(length) bytes, version \(code.version), \(correction), mask \(code.mask)")
            }
        }
    }

    func testTheSmallestVersionIsChosen() {
        // Table 7: version 1 holds 17 bytes at L, 14 at M, 11 at Q, 7 at H.
        XCTAssertEqual(QRCode(bytes: Array(repeating: 65, count: 17), correction: .low)?.version, 1)
        XCTAssertEqual(QRCode(bytes: Array(repeating: 65, count: 18), correction: .low)?.version, 2)
        XCTAssertEqual(QRCode(bytes: Array(repeating: 65, count: 14), correction: .medium)?.version, 1)
        XCTAssertEqual(QRCode(bytes: Array(repeating: 65, count: 7), correction: .high)?.version, 1)
        XCTAssertEqual(QRCode(bytes: Array(repeating: 65, count: 8), correction: .high)?.version, 2)
        // Version 40 holds 2953 bytes at L, and no version more.
        XCTAssertEqual(QRCode(bytes: Array(repeating: 65, count: 2953), correction: .low)?.version, 40)
        XCTAssertNil(QRCode(bytes: Array(repeating: 65, count: 2954), correction: .low))
        XCTAssertNil(QRCode(bytes: Array(repeating: 65, count: 100_000), correction: .low))
    }

    func testFormatAndVersionInformationMatchTheStandardsTables() {
        // Annex C, Table C.1: level L with mask 0 is 111011111000100; M with 0 is the XOR
        // pattern itself. Annex D, Table D.1: version 7 is 000111110010010100.
        XCTAssertEqual((8 << 10 | QRCode.bchRemainder(8, generator: 0x537, degree: 10)) ^ 0x5412, 0b111_0111_1100_0100)
        XCTAssertEqual(QRCode.bchRemainder(0, generator: 0x537, degree: 10), 0)
        XCTAssertEqual(7 << 12 | QRCode.bchRemainder(7, generator: 0x1F25, degree: 12), 0b00_0111_1100_1001_0100)
        // Annex E: the alignment patterns' rows.
        XCTAssertEqual(QRCode.alignmentCentres(1), [])
        XCTAssertEqual(QRCode.alignmentCentres(2), [6, 18])
        XCTAssertEqual(QRCode.alignmentCentres(7), [6, 22, 38])
        XCTAssertEqual(QRCode.alignmentCentres(32), [6, 34, 60, 86, 112, 138])
        XCTAssertEqual(QRCode.alignmentCentres(40), [6, 30, 58, 86, 114, 142, 170])
        // Table 1: codewords of versions 1, 7 and 40.
        XCTAssertEqual(QRCode.totalCodewords(1), 26)
        XCTAssertEqual(QRCode.totalCodewords(7), 196)
        XCTAssertEqual(QRCode.totalCodewords(40), 3706)
    }

    func testReedSolomonMatchesTheStandardsExample() {
        // Annex I.3's "01234567" at 1-M: its 16 data codewords and 10 correction codewords.
        let data: [UInt8] = [0x10, 0x20, 0x0C, 0x56, 0x61, 0x80, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11]
        XCTAssertEqual(ReedSolomon.remainder(data, generator: ReedSolomon.generator(degree: 10)),
                       [0xA5, 0x24, 0xD4, 0xC1, 0xED, 0x36, 0xC7, 0x87, 0x2C, 0x55])
    }

    func testAWiFiCardOnAScreenReadsBack() throws {
        let text = "WIFI:T:WPA;S:onair-1a2b3c;;"
        let code = try XCTUnwrap(QRCode(text: text))
        let (width, height) = (1280, 800)
        var pixels = Array(repeating: UInt32(0x0040_4040), count: width * height)
        let card = ScreenCard(title: "Set up this camera", code: code,
                              lines: ["Wi-Fi: onair-1a2b3c", "Password: the operator's", "Then: 192.168.4.1:8080/setup"])
        let layout = ScreenCard.layout(width: width, height: height, inset: 8)
        XCTAssertEqual(layout.card, Box(x: 8 + 1264 - 505, y: 8, width: 505, height: 784))
        XCTAssertEqual(layout.picture.x + layout.picture.width, layout.card.x)
        pixels.withUnsafeMutableBytes {
            card.draw(on: Canvas(memory: $0.baseAddress!, pitch: width * 4, width: width, height: height), in: layout.card)
        }
        XCTAssertEqual(try read(pixels, width: width, height: height), text)
        XCTAssertEqual(pixels[0], 0x0040_4040, "nothing drawn outside the card")
        XCTAssertEqual(pixels[layout.card.y * width + layout.card.x], ScreenCard.paper)
        // A card on a small screen (800 × 480) still holds a readable code.
        var small = Array(repeating: UInt32(0), count: 800 * 480)
        small.withUnsafeMutableBytes {
            card.draw(on: Canvas(memory: $0.baseAddress!, pitch: 800 * 4, width: 800, height: 480),
                      in: ScreenCard.layout(width: 800, height: 480, inset: 8).card)
        }
        XCTAssertEqual(try read(small, width: 800, height: 480), text)
    }

    func testWordsAreClippedToTheCanvas() {
        var pixels = Array(repeating: UInt32(0), count: 40 * 20)
        pixels.withUnsafeMutableBytes {
            let canvas = Canvas(memory: $0.baseAddress!, pitch: 160, width: 40, height: 20)
            canvas.text("Hé\u{1}~", x: -4, y: -8, scale: 1, colour: 0xFFFFFF)
            canvas.text(String(repeating: "W", count: 1000), x: 30, y: 10, scale: 3, colour: 0xFFFFFF)
            canvas.fill(Box(x: 38, y: 18, width: 100, height: 100), 0x123456)
            canvas.fill(Box(x: 50, y: 50, width: -5, height: 3), 0x123456)
        }
        XCTAssertEqual(pixels[19 * 40 + 39], 0x123456)
        XCTAssertTrue(pixels.contains(0xFFFFFF))
        XCTAssertEqual(Canvas.textSize("Hé", scale: 2).width, 32, "one glyph for each character, not each byte")
    }
}
