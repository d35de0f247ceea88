/// A QR Code symbol (ISO/IEC 18004:2015, Model 2) holding bytes (byte mode, §7.4.5): the
/// smallest version 1…40 that holds them at the error-correction level asked for, the mask
/// of least penalty (§7.8.3). What the setup network's card on the attached screen shows
/// (a phone's camera joins the network from it). Pure: no I/O.
public struct QRCode: Sendable, Equatable {
    /// §7.5.1: the share of the symbol that may be lost and still read (7, 15, 25, 30 %).
    public enum Correction: Int, Sendable, CaseIterable {
        case low, medium, quartile, high
        /// The two bits of the format information (§7.9.1, Table 12).
        var formatBits: Int { [1, 0, 3, 2][rawValue] }
    }

    public let version: Int
    public let correction: Correction
    public let mask: Int
    /// Modules per side: 4 × version + 17 (§6.3.1).
    public let size: Int
    /// Row by row, true for a dark module.
    public private(set) var modules: [Bool]

    /// Whether the module at column `x`, row `y` is dark (outside the symbol: light, the
    /// quiet zone of §6.3.8).
    public subscript(x: Int, y: Int) -> Bool {
        x >= 0 && y >= 0 && x < size && y < size && modules[y * size + x]
    }

    /// The symbol for `bytes`, or nil when no version holds them at `correction` (at most
    /// 2953 bytes, at low).
    public init?(bytes: [UInt8], correction: Correction = .medium) {
        guard let version = (1...40).first(where: { Self.dataBits(bytes.count, version: $0) <= Self.dataCapacity($0, correction) * 8 }) else {
            return nil
        }
        self.version = version
        self.correction = correction
        size = 4 * version + 17
        modules = Array(repeating: false, count: size * size)
        var function = Array(repeating: false, count: size * size)
        Self.drawFunctionPatterns(version: version, size: size, modules: &modules, function: &function)
        let codewords = Self.interleaved(Self.dataCodewords(bytes, version: version, correction: correction), version: version, correction: correction)
        Self.place(codewords, size: size, modules: &modules, function: function)
        // §7.8.3: each of the eight masks is tried, the one of least penalty kept.
        var best = (mask: 0, penalty: Int.max, modules: modules)
        for mask in 0..<8 {
            var masked = modules
            Self.apply(mask: mask, size: size, modules: &masked, function: function)
            Self.drawFormat(correction: correction, mask: mask, size: size, modules: &masked)
            let penalty = Self.penalty(masked, size: size)
            if penalty < best.penalty { best = (mask, penalty, masked) }
        }
        mask = best.mask
        modules = best.modules
    }

    public init?(text: String, correction: Correction = .medium) {
        self.init(bytes: Array(text.utf8), correction: correction)
    }

    // MARK: Capacity (§7.4, Table 7 and Table 9)

    /// Bits of a byte-mode segment of `count` bytes: mode, count (8 bits to version 9,
    /// 16 from 10: Table 3), the bytes.
    static func dataBits(_ count: Int, version: Int) -> Int {
        let countBits = version < 10 ? 8 : 16
        guard count < 1 << countBits else { return Int.max }
        return 4 + countBits + 8 * count
    }

    /// Table 9: error-correction codewords per block, and blocks, by level and version.
    static let correctionPerBlock: [[Int]] = [
        [7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
        [10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28],
        [13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
        [17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
    ]
    static let blocks: [[Int]] = [
        [1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],
        [1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49],
        [1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68],
        [1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81],
    ]

    /// Codewords of the symbol (data and error correction): its modules outside the
    /// function patterns, in whole bytes (the remainder bits stay light: §7.7.3).
    static func totalCodewords(_ version: Int) -> Int {
        let size = 4 * version + 17
        var modules = Array(repeating: false, count: size * size), function = modules
        drawFunctionPatterns(version: version, size: size, modules: &modules, function: &function)
        return function.lazy.filter { !$0 }.count / 8
    }

    static func dataCapacity(_ version: Int, _ correction: Correction) -> Int {
        totalCodewords(version) - correctionPerBlock[correction.rawValue][version - 1] * blocks[correction.rawValue][version - 1]
    }

    // MARK: Data and error correction (§7.4.9, §7.5, §7.6)

    /// The data codewords: the segment, the terminator, padding to a byte, then the pad
    /// codewords 0xEC 0x11 in turn to the capacity.
    static func dataCodewords(_ bytes: [UInt8], version: Int, correction: Correction) -> [UInt8] {
        let capacity = dataCapacity(version, correction) * 8
        var bits = BitWriter()
        bits.append(0b0100, 4)
        bits.append(bytes.count, version < 10 ? 8 : 16)
        for byte in bytes { bits.append(Int(byte), 8) }
        bits.append(0, min(4, capacity - bits.count))
        bits.append(0, (8 - bits.count % 8) % 8)
        var codewords = bits.bytes
        while codewords.count * 8 < capacity { codewords.append(codewords.count % 2 == bits.bytes.count % 2 ? 0xEC : 0x11) }
        return codewords
    }

    /// §7.6: the data split into blocks (the shorter first), each block's Reed-Solomon
    /// codewords, then the blocks read across: data column by column, then correction.
    static func interleaved(_ data: [UInt8], version: Int, correction: Correction) -> [UInt8] {
        let count = blocks[correction.rawValue][version - 1]
        let correctionLength = correctionPerBlock[correction.rawValue][version - 1]
        let shortLength = data.count / count
        let longBlocks = data.count % count
        var dataBlocks: [[UInt8]] = [], correctionBlocks: [[UInt8]] = []
        var start = 0
        let generator = ReedSolomon.generator(degree: correctionLength)
        for index in 0..<count {
            let length = shortLength + (index >= count - longBlocks ? 1 : 0)
            let block = Array(data[start..<start + length])
            start += length
            dataBlocks.append(block)
            correctionBlocks.append(ReedSolomon.remainder(block, generator: generator))
        }
        var out: [UInt8] = []
        for column in 0...shortLength {
            for block in dataBlocks where column < block.count { out.append(block[column]) }
        }
        for column in 0..<correctionLength {
            for block in correctionBlocks { out.append(block[column]) }
        }
        return out
    }

    // MARK: Function patterns (§6.3)

    static func drawFunctionPatterns(version: Int, size: Int, modules: inout [Bool], function: inout [Bool]) {
        func set(_ x: Int, _ y: Int, _ dark: Bool) {
            modules[y * size + x] = dark
            function[y * size + x] = true
        }
        // §6.3.5: the timing patterns along row and column 6.
        for i in 0..<size {
            set(6, i, i % 2 == 0)
            set(i, 6, i % 2 == 0)
        }
        // §6.3.3, §6.3.4: the three finder patterns with their light separators.
        for (cx, cy) in [(3, 3), (size - 4, 3), (3, size - 4)] {
            for dy in -4...4 {
                for dx in -4...4 where (0..<size).contains(cx + dx) && (0..<size).contains(cy + dy) {
                    let ring = max(abs(dx), abs(dy))
                    set(cx + dx, cy + dy, ring != 2 && ring != 4)
                }
            }
        }
        // §6.3.6: alignment patterns, everywhere on Annex E's grid but the finders' corners.
        let centres = alignmentCentres(version)
        for (i, cy) in centres.enumerated() {
            for (j, cx) in centres.enumerated() {
                let corner = (i == 0 && j == 0) || (i == 0 && j == centres.count - 1) || (i == centres.count - 1 && j == 0)
                guard !corner else { continue }
                for dy in -2...2 {
                    for dx in -2...2 { set(cx + dx, cy + dy, max(abs(dx), abs(dy)) != 1) }
                }
            }
        }
        // §7.9: the format information's places (drawn with each mask), the dark module.
        for i in 0..<9 {
            set(8, i, false)
            set(i, 8, false)
        }
        for i in 0..<8 {
            set(size - 1 - i, 8, false)
            set(8, size - 1 - i, false)
        }
        set(8, size - 8, true)
        // §7.10: the version information, from version 7: 18 bits, BCH(18, 6).
        if version >= 7 {
            let bits = version << 12 | bchRemainder(version, generator: 0x1F25, degree: 12)
            for i in 0..<18 {
                let dark = bits >> i & 1 == 1
                set(size - 11 + i % 3, i / 3, dark)
                set(i / 3, size - 11 + i % 3, dark)
            }
        }
    }

    /// Annex E, Table E.1: the rows (and columns) of the alignment patterns' centres: 6,
    /// the last at size − 7, the rest evenly spaced by an even step between.
    static func alignmentCentres(_ version: Int) -> [Int] {
        guard version > 1 else { return [] }
        let count = version / 7 + 2
        let last = 4 * version + 10
        let step = version == 32 ? 26 : (version * 4 + count * 2 + 1) / (count * 2 - 2) * 2
        return [6] + (0..<count - 1).reversed().map { last - $0 * step }
    }

    /// §7.9.1: the 15 bits of the level and mask, BCH(15, 5), XORed with 101010000010010.
    static func drawFormat(correction: Correction, mask: Int, size: Int, modules: inout [Bool]) {
        let data = correction.formatBits << 3 | mask
        let bits = (data << 10 | bchRemainder(data, generator: 0x537, degree: 10)) ^ 0x5412
        func bit(_ i: Int) -> Bool { bits >> i & 1 == 1 }
        // Around the top-left finder: bits 0–7 down column 8, 8–14 leftwards along row 8.
        for i in 0..<6 { modules[i * size + 8] = bit(i) }
        modules[7 * size + 8] = bit(6)
        modules[8 * size + 8] = bit(7)
        modules[8 * size + 7] = bit(8)
        for i in 9..<15 { modules[8 * size + 14 - i] = bit(i) }
        // The copy: bits 0–7 along row 8 from the right, 8–14 up column 8 from the bottom.
        for i in 0..<8 { modules[8 * size + size - 1 - i] = bit(i) }
        for i in 8..<15 { modules[(size - 15 + i) * size + 8] = bit(i) }
    }

    static func bchRemainder(_ data: Int, generator: Int, degree: Int) -> Int {
        var value = data << degree
        for shift in stride(from: bitLength(value) - 1, through: degree, by: -1) where value >> shift & 1 == 1 {
            value ^= generator << (shift - degree)
        }
        return value
    }

    private static func bitLength(_ value: Int) -> Int { Int.bitWidth - value.leadingZeroBitCount }

    // MARK: Placement and masking (§7.7.3, §7.8)

    /// The codewords' bits, most significant first, up and down two-module columns from
    /// the right, the timing column skipped.
    static func place(_ codewords: [UInt8], size: Int, modules: inout [Bool], function: [Bool]) {
        var index = 0
        let total = codewords.count * 8
        for right in stride(from: size - 1, through: 1, by: -2).map({ $0 <= 6 ? $0 - 1 : $0 }) {
            // Pairs counted from the right edge turn at each pair, the first going up.
            let upward = (right > 6 ? size - 1 - right : size - 2 - right) / 2 % 2 == 0
            for step in 0..<size {
                let y = upward ? size - 1 - step : step
                for x in [right, right - 1] where !function[y * size + x] && index < total {
                    modules[y * size + x] = codewords[index >> 3] >> (7 - index & 7) & 1 == 1
                    index += 1
                }
            }
        }
    }

    /// §7.8.2, Table 10: a module is inverted where the mask's condition holds.
    static func apply(mask: Int, size: Int, modules: inout [Bool], function: [Bool]) {
        for y in 0..<size {
            for x in 0..<size where !function[y * size + x] {
                let invert: Bool
                switch mask {
                case 0: invert = (x + y) % 2 == 0
                case 1: invert = y % 2 == 0
                case 2: invert = x % 3 == 0
                case 3: invert = (x + y) % 3 == 0
                case 4: invert = (y / 2 + x / 3) % 2 == 0
                case 5: invert = x * y % 2 + x * y % 3 == 0
                case 6: invert = (x * y % 2 + x * y % 3) % 2 == 0
                default: invert = ((x + y) % 2 + x * y % 3) % 2 == 0
                }
                if invert { modules[y * size + x].toggle() }
            }
        }
    }

    /// §7.8.3.1, Table 11: runs of five or more alike (3 + the excess), 2 × 2 blocks alike
    /// (3 each), the finder's 1:1:3:1:1 with four light modules beside it (40 each), and
    /// 10 for each 5 % the dark share is away from half.
    static func penalty(_ modules: [Bool], size: Int) -> Int {
        var total = 0
        for line in 0..<2 {
            for a in 0..<size {
                var run = 0, previous = false, window = 0
                for b in 0..<size {
                    let dark = line == 0 ? modules[a * size + b] : modules[b * size + a]
                    if b > 0 && dark == previous { run += 1 } else { run = 1 }
                    if run == 5 { total += 3 } else if run > 5 { total += 1 }
                    previous = dark
                    window = (window << 1 | (dark ? 1 : 0)) & 0x7FF
                    if b >= 10 && (window == 0b000_0101_1101 || window == 0b101_1101_0000) { total += 40 }
                }
            }
        }
        for y in 0..<size - 1 {
            for x in 0..<size - 1 {
                let here = modules[y * size + x]
                if modules[y * size + x + 1] == here && modules[(y + 1) * size + x] == here && modules[(y + 1) * size + x + 1] == here { total += 3 }
            }
        }
        let dark = modules.lazy.filter { $0 }.count
        let squares = size * size
        // The smallest k with the dark share within (50 ± 5(k + 1)) %.
        total += 10 * (abs(dark * 20 - squares * 10) / squares)
        return total
    }
}

/// Bits written most significant first, into whole bytes.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, _ width: Int) {
        guard width > 0 else { return }
        for shift in stride(from: width - 1, through: 0, by: -1) {
            if count % 8 == 0 { bytes.append(0) }
            if value >> shift & 1 == 1 { bytes[bytes.count - 1] |= 0x80 >> UInt8(count % 8) }
            count += 1
        }
    }
}

/// Reed-Solomon over GF(2⁸) with the field polynomial x⁸ + x⁴ + x³ + x² + 1 (0x11D) and
/// the generator ∏(x − αⁱ), i = 0 … degree − 1 (§7.5.2, Annex A).
enum ReedSolomon {
    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        var result = 0, x = Int(a)
        for bit in 0..<8 where Int(b) >> bit & 1 == 1 { result ^= x << bit }
        for shift in stride(from: 14, through: 8, by: -1) where result >> shift & 1 == 1 { result ^= 0x11D << (shift - 8) }
        return UInt8(result)
    }

    /// The generator's coefficients, highest power first, its leading 1 left out.
    static func generator(degree: Int) -> [UInt8] {
        var polynomial: [UInt8] = [1]
        var root: UInt8 = 1
        for _ in 0..<degree {
            // × (x − root): the polynomial one power up, plus root × it (− is + in GF(2⁸)).
            var next = polynomial + [0]
            for (j, coefficient) in polynomial.enumerated() { next[j + 1] ^= multiply(coefficient, root) }
            polynomial = next
            root = multiply(root, 2)
        }
        return Array(polynomial.dropFirst())
    }

    /// The remainder of data(x) · x^degree divided by the generator: the block's correction codewords.
    static func remainder(_ data: [UInt8], generator: [UInt8]) -> [UInt8] {
        var remainder = Array(repeating: UInt8(0), count: generator.count)
        for byte in data {
            let factor = byte ^ remainder.removeFirst()
            remainder.append(0)
            for (i, coefficient) in generator.enumerated() { remainder[i] ^= multiply(coefficient, factor) }
        }
        return remainder
    }
}
