/// Big-endian byte writer with nested ISO-BMFF boxes (ISO/IEC 14496-12 §4.2): a box's
/// 32-bit size is reserved first and patched when its body is done.
public struct ByteWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xFF)) }
    public mutating func u24(_ v: UInt32) {
        bytes.append(UInt8((v >> 16) & 0xFF)); bytes.append(UInt8((v >> 8) & 0xFF)); bytes.append(UInt8(v & 0xFF))
    }
    public mutating func u32(_ v: UInt32) {
        bytes.append(UInt8(v >> 24)); bytes.append(UInt8((v >> 16) & 0xFF))
        bytes.append(UInt8((v >> 8) & 0xFF)); bytes.append(UInt8(v & 0xFF))
    }
    public mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    public mutating func u64(_ v: UInt64) { u32(UInt32(v >> 32)); u32(UInt32(v & 0xFFFF_FFFF)) }
    public mutating func fourCC(_ code: String) {
        let utf8 = Array(code.utf8)
        precondition(utf8.count == 4, "four-character code expected: \(code)")
        bytes.append(contentsOf: utf8)
    }
    public mutating func append<C: Collection>(_ data: C) where C.Element == UInt8 { bytes.append(contentsOf: data) }
    public mutating func zeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }

    /// A box: size(32) + type + body.
    public mutating func box(_ type: String, _ body: (inout ByteWriter) -> Void) {
        let start = bytes.count
        u32(0)
        fourCC(type)
        body(&self)
        patch32(at: start, UInt32(bytes.count - start))
    }

    /// A full box: a box whose body starts with version(8) + flags(24), §4.2.
    public mutating func fullBox(_ type: String, version: UInt8, flags: UInt32, _ body: (inout ByteWriter) -> Void) {
        box(type) { w in
            w.u8(version)
            w.u24(flags)
            body(&w)
        }
    }

    public mutating func patch32(at offset: Int, _ v: UInt32) {
        bytes[offset] = UInt8(v >> 24); bytes[offset + 1] = UInt8((v >> 16) & 0xFF)
        bytes[offset + 2] = UInt8((v >> 8) & 0xFF); bytes[offset + 3] = UInt8(v & 0xFF)
    }

    /// The unity transformation matrix of mvhd/tkhd, §8.2.2.
    mutating func unityMatrix() {
        for v: UInt32 in [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000] { u32(v) }
    }
}
