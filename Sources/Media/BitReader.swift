/// Reads bits MSB-first, with Exp-Golomb codes (ITU-T H.264 §9.1).
public struct BitReader {
    private let bytes: [UInt8]
    private var position = 0  // in bits

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var bitsLeft: Int { bytes.count * 8 - position }

    public mutating func bit() throws -> UInt32 {
        guard position < bytes.count * 8 else { throw MediaError.truncated("bit stream") }
        let byte = bytes[position >> 3]
        let value = (byte >> (7 - UInt8(position & 7))) & 1
        position += 1
        return UInt32(value)
    }

    public mutating func bits(_ count: Int) throws -> UInt32 {
        precondition(count <= 32)
        var value: UInt32 = 0
        for _ in 0..<count { value = (value << 1) | (try bit()) }
        return value
    }

    public mutating func skip(_ count: Int) throws {
        guard position + count <= bytes.count * 8 else { throw MediaError.truncated("bit stream") }
        position += count
    }

    /// ue(v)
    public mutating func unsignedGolomb() throws -> UInt32 {
        var zeros = 0
        while try bit() == 0 {
            zeros += 1
            if zeros > 31 { throw MediaError.invalid("Exp-Golomb code longer than 32 bits") }
        }
        if zeros == 0 { return 0 }
        return (UInt32(1) << UInt32(zeros)) - 1 + (try bits(zeros))
    }

    /// se(v)
    public mutating func signedGolomb() throws -> Int32 {
        let k = try unsignedGolomb()
        let magnitude = Int32((k + 1) / 2)
        return k % 2 == 1 ? magnitude : -magnitude
    }
}

public enum MediaError: Error, Equatable, CustomStringConvertible {
    case truncated(String)
    case invalid(String)

    public var description: String {
        switch self {
        case .truncated(let what): return "truncated \(what)"
        case .invalid(let why): return why
        }
    }
}
