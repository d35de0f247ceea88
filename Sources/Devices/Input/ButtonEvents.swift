import CLinux

/// A button going down or up, with when (CLOCK_MONOTONIC ns).
public struct ButtonEdge: Sendable, Equatable {
    public var pressed: Bool
    public var time: Int64
    public init(pressed: Bool, time: Int64) {
        self.pressed = pressed
        self.time = time
    }
}

/// Decoding what the kernel hands out for a button, from raw bytes so recorded streams
/// test it: GPIO uAPI v2 line events and evdev input events.
public enum ButtonEvents {
    /// struct gpio_v2_line_event (48 bytes): timestamp_ns, id (1 rising, 2 falling: the
    /// line going active/inactive, active-low already applied), offset, seqno, line_seqno.
    public static func gpio(_ bytes: UnsafeRawBufferPointer) -> [ButtonEdge] {
        let size = Int(onair_gpio_event_size)
        return stride(from: 0, to: bytes.count - size + 1, by: size).compactMap { offset in
            let time = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            let id = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            guard id == 1 || id == 2 else { return nil }
            return ButtonEdge(pressed: id == 1, time: Int64(bitPattern: time))
        }
    }

    /// struct input_event: timeval, type, code, value. EV_KEY (1) presses (1) and releases
    /// (0) of the wanted codes; autorepeat (2) and everything else is ignored. evdev stamps
    /// CLOCK_REALTIME by default, so the time is taken by the caller at read.
    public static func evdev(_ bytes: UnsafeRawBufferPointer, keys: Set<UInt16>) -> [(code: UInt16, pressed: Bool)] {
        let size = Int(onair_input_event_size)
        let timeval = size - 8
        return stride(from: 0, to: bytes.count - size + 1, by: size).compactMap { offset in
            let type = bytes.loadUnaligned(fromByteOffset: offset + timeval, as: UInt16.self)
            let code = bytes.loadUnaligned(fromByteOffset: offset + timeval + 2, as: UInt16.self)
            let value = bytes.loadUnaligned(fromByteOffset: offset + timeval + 4, as: Int32.self)
            guard type == 1, keys.contains(code), value == 0 || value == 1 else { return nil }
            return (code, value == 1)
        }
    }

    /// Key names from <linux/input-event-codes.h> a record button is likely to be.
    public static let keyCodes: [String: UInt16] = [
        "KEY_RECORD": 167, "KEY_SPACE": 57, "KEY_ENTER": 28, "KEY_PLAYPAUSE": 164, "KEY_CAMERA": 212,
        "KEY_PLAY": 207, "KEY_STOP": 128, "KEY_F1": 59, "KEY_F2": 60, "KEY_R": 19, "KEY_VOLUMEUP": 115, "KEY_OK": 352,
        "BTN_0": 256, "BTN_LEFT": 272
    ]

    /// `KEY_RECORD,KEY_SPACE` or numeric codes.
    public static func parseKeys(_ text: String) -> Set<UInt16>? {
        var codes: Set<UInt16> = []
        for part in text.split(separator: ",") {
            let name = part.filter { $0 != " " && $0 != "\t" }
            if name.isEmpty { continue }
            guard let code = keyCodes[name.uppercased()] ?? UInt16(name) else { return nil }
            codes.insert(code)
        }
        return codes.isEmpty ? nil : codes
    }
}
