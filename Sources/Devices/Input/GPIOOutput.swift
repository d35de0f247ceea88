import CLinux
import System

/// One GPIO output line (a tally light) through the uAPI v2.
public final class GPIOOutput: Sendable {
    public let description: String
    private let lineFD: FileDescriptor

    /// `line`: `gpiochipN:OFFSET`; starts off.
    public init(line: String, activeLow: Bool) throws {
        let (chipFD, offset, name) = try GPIOChip.open(line, key: "tally.gpio")
        description = name
        defer { chipFD.close() }
        do {
            lineFD = try FileDescriptor.receiving { onair_gpio_request_output(chipFD.rawValue, offset, activeLow ? 1 : 0, 0, "onair-tally", $0) }
        } catch let error as Errno {
            throw DeviceError.setting(key: "tally.gpio", value: description, reason: GPIOChip.reason(requesting: offset, on: chipFD, error))
        }
    }

    deinit {
        _ = onair_gpio_set(lineFD.rawValue, 0)
    }

    public func set(_ on: Bool) { _ = onair_gpio_set(lineFD.rawValue, on ? 1 : 0) }
}
