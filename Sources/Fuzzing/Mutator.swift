import TestSupport

/// Makes hostile inputs from good ones: the mutations issue 13 found onair's readers
/// failing on, plus the generic ones (bit flips, truncations, splices). Deterministic for a
/// seed, so every case can be made again from its number.
public struct Mutator {
    /// SplitMix64 (TestSupport's, the tests' too): small, fast, and the same everywhere.
    private var random: SplitMix

    public init(seed: UInt64) { random = SplitMix(seed: seed &+ 0x9E37_79B9_7F4A_7C15) }

    public mutating func next() -> UInt64 { random.next() }

    public mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
    public mutating func chance(_ oneIn: Int) -> Bool { below(oneIn) == 0 }
    public mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }

    /// Size fields that overflow, underflow or point nowhere.
    public static let sizes: [UInt64] = [0, 1, 2, 7, 8, 15, 16, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF,
                                         1 << 32, 1 << 62, 1 << 63, (1 << 63) + 1, UInt64.max, UInt64.max - 7]
    /// Numbers a text format may hold and a reader must survive.
    public static let numbers = ["0", "-0", "-1", "1e308", "1e-308", "NaN", "nan", "inf", "-inf", "Infinity", "0x10",
                                 "99999999999999999999", "18446744073709551615", "18446744073709551616",
                                 "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1.",
                                 ".5", "", " ", "+5", "--5", "1,5", "٣", "１", "2.000000000000000000001"]

    // MARK: Bytes

    public mutating func mutateBytes(_ input: [UInt8], boxes: Bool) -> [UInt8] {
        var bytes = input
        for _ in 0...below(3) {
            switch below(boxes ? 9 : 7) {
            case 0 where !bytes.isEmpty:  // bit flip
                let i = below(bytes.count); bytes[i] ^= UInt8(1) << UInt8(below(8))
            case 1 where !bytes.isEmpty:  // byte set to an edge value
                bytes[below(bytes.count)] = pick([0, 1, 0x7F, 0x80, 0xFF])
            case 2:  // truncation
                bytes = Array(bytes.prefix(below(bytes.count + 1)))
            case 3 where !bytes.isEmpty:  // a slice repeated
                let a = below(bytes.count), b = min(bytes.count, a + 1 + below(64))
                bytes.insert(contentsOf: bytes[a..<b], at: below(bytes.count + 1))
            case 4 where !bytes.isEmpty:  // a slice removed
                let a = below(bytes.count), b = min(bytes.count, a + 1 + below(64))
                bytes.removeSubrange(a..<b)
            case 5:  // random bytes inserted
                bytes.insert(contentsOf: (0..<(1 + below(16))).map { _ in UInt8(truncatingIfNeeded: next()) }, at: below(bytes.count + 1))
            case 6 where bytes.count >= 4:  // a 32-bit field set to an edge
                let i = below(bytes.count - 3)
                let value = UInt32(truncatingIfNeeded: pick(Self.sizes))
                for k in 0..<4 { bytes[i + k] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(k))) }
            case 7:  // a box header's size (ISO/IEC 14496-12 §4.2) set to an edge
                bytes = mutateBoxSize(bytes)
            case 8:  // boxes nested deeper than any reader should go
                let depth = pick([17, 64, 1000, 20_000])
                var nested = [UInt8]()
                nested.reserveCapacity(depth * 8)
                let type = Array(pick(["moof", "traf", "moov", "trak", "mdia"]).utf8)
                for level in 0..<depth { nested += be32(UInt32(truncatingIfNeeded: 8 * (depth - level))) + type }
                bytes.insert(contentsOf: nested, at: pick([0, bytes.count]))
            default: break
            }
        }
        return bytes
    }

    /// Offsets of box headers: every place a plausible `size type` pair starts.
    static func boxHeaders(_ bytes: [UInt8]) -> [Int] {
        guard bytes.count >= 8 else { return [] }
        return (0...(bytes.count - 8)).filter { i in
            (4..<8).allSatisfy { bytes[i + $0] >= 0x61 && bytes[i + $0] <= 0x7A || bytes[i + $0] >= 0x30 && bytes[i + $0] <= 0x39 }
        }
    }

    mutating func mutateBoxSize(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        let headers = Self.boxHeaders(bytes)
        guard !headers.isEmpty else { return bytes }
        let at = pick(headers)
        let size = pick(Self.sizes)
        if chance(2) {
            // 32-bit size
            bytes.replaceSubrange(at..<(at + 4), with: be32(UInt32(truncatingIfNeeded: size)))
        } else {
            // size 1 and a 64-bit largesize after the type
            bytes.replaceSubrange(at..<(at + 4), with: be32(1))
            bytes.insert(contentsOf: (0..<8).map { UInt8(truncatingIfNeeded: size >> (56 - 8 * UInt64($0))) }, at: at + 8)
        }
        return bytes
    }

    // MARK: Text

    public mutating func mutateText(_ input: [UInt8]) -> [UInt8] {
        var lines = input.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        for _ in 0...below(3) {
            guard !lines.isEmpty else { lines = [[]]; continue }
            let i = below(lines.count)
            switch below(10) {
            case 0, 1:  // a number replaced by an extreme one
                lines[i] = replaceNumber(lines[i])
            case 2:  // invalid UTF-8 or a control byte
                lines[i].insert(contentsOf: pick([[0xFF], [0xC3, 0x28], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0x00], [0x1B], [0x0D], [0x7F]]),
                                at: below(lines[i].count + 1))
            case 3:  // a line repeated
                lines.insert(lines[i], at: below(lines.count + 1))
            case 4:  // a line removed
                lines.remove(at: i)
            case 5:  // CRLF, or a lone CR
                lines[i] += pick([[0x0D], [0x0D, 0x0D], [0x0D, 0x0A, 0x0D]])
            case 6:  // a very long line
                lines[i] += [UInt8](repeating: pick([0x41, 0x2C, 0x3D, 0x22, 0x2D]), count: pick([1000, 100_000]))
            case 7:  // two lines swapped
                lines.swapAt(i, below(lines.count))
            default:  // the generic byte mutations on one line
                lines[i] = mutateBytes(lines[i], boxes: false)
            }
        }
        return Array(lines.joined(separator: [0x0A]))
    }

    /// The first run of digits (or a value after `=` or `:`) replaced by an extreme number.
    mutating func replaceNumber(_ line: [UInt8]) -> [UInt8] {
        let number = Array(pick(Self.numbers).utf8)
        let digits = line.indices.filter { line[$0] >= 0x30 && line[$0] <= 0x39 }
        if let start = digits.isEmpty ? nil : pick(digits) {
            var end = start
            while end < line.count && (line[end] >= 0x30 && line[end] <= 0x39 || line[end] == 0x2E) { end += 1 }
            var copy = line
            copy.replaceSubrange(start..<end, with: number)
            return copy
        }
        if let eq = line.firstIndex(where: { $0 == 0x3D || $0 == 0x3A }) { return Array(line[...eq]) + number }
        return line + number
    }
}

func be32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
