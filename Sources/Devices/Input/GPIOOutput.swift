import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// One GPIO output line (a tally light) through the uAPI v2.
public final class GPIOOutput: Sendable {
    public let description: String
    private let lineFD: Int32

    /// `line`: `gpiochipN:OFFSET`; starts off.
    public init(line: String, activeLow: Bool) throws {
        let (chipFD, offset, name) = try GPIOChip.open(line, key: "tally.gpio")
        description = name
        defer { close(chipFD) }
        var fd: Int32 = -1
        let result = onair_gpio_request_output(chipFD, offset, activeLow ? 1 : 0, 0, "onair-tally", &fd)
        guard result == 0 else { throw DeviceError("tally.gpio \(description): GPIO_V2_GET_LINE_IOCTL: \(errorText(result))") }
        lineFD = fd
    }

    deinit {
        _ = onair_gpio_set(lineFD, 0)
        close(lineFD)
    }

    public func set(_ on: Bool) { _ = onair_gpio_set(lineFD, on ? 1 : 0) }
}
