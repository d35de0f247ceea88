import CLinux
import Logging
import System
import Threading

/// Drops the chatter of a mechanical contact: an edge within `period` of the last one
/// accepted, or one that repeats the state, is not a press or a release.
public struct Debouncer: Sendable {
    public let period: Int64
    private var last: ButtonEdge?
    public init(periodNanoseconds: Int64) { period = periodNanoseconds }
    public mutating func accept(_ edge: ButtonEdge) -> Bool {
        if let last, last.pressed == edge.pressed || edge.time - last.time < period { return false }
        last = edge
        return true
    }
}

/// `gpiochipN:LINE` (or `/path:LINE`): the chip opened, the line's offset, and a name for
/// messages.
enum GPIOChip {
    static func open(_ line: String, key: String) throws -> (fd: FileDescriptor, offset: UInt32, description: String) {
        let (chip, offset) = try parse(line, key: key)
        do { return (try FileDescriptor.open(chip, .readWrite), offset, "\(chip):\(offset)") } catch let error as Errno {
            throw DeviceError.setting(key: key, value: chip, reason: reason(opening: chip, error))
        }
    }

    /// The chip's path and the line's offset; a value not of that form is a setting error.
    static func parse(_ line: String, key: String) throws -> (chip: String, offset: UInt32) {
        let parts = line.split(separator: ":")
        guard parts.count == 2, let offset = UInt32(parts[1]) else { throw DeviceError.setting(key: key, value: line, reason: "expected gpiochipN:LINE") }
        return (parts[0].hasPrefix("/") ? String(parts[0]) : "/dev/\(parts[0])", offset)
    }

    static func reason(opening chip: String, _ error: Errno) -> String {
        switch error {
        case .noEntry: return "no such GPIO chip (gpiodetect lists the board's)"
        case .permissionDenied, .notPermitted: return "no permission to open the chip (\(error))"
        default: return "\(error)"
        }
    }

    /// Why a line request failed: for EBUSY, who holds the line (its consumer, as the
    /// kernel reports it: a driver such as gpio-keys, or another program).
    static func reason(requesting offset: UInt32, on chip: FileDescriptor, _ error: Errno) -> String {
        var used: Int32 = 0
        var consumer = [CChar](repeating: 0, count: 40)
        let info = onair_gpio_line_holder(chip.rawValue, offset, &used, &consumer, Int32(consumer.count))
        if info == Errno.invalid.rawValue { return "the chip has no line \(offset)" }
        if error == .inappropriateControl { return "not a GPIO chip" }
        if error == .busy {
            let holder = String(decoding: consumer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return "busy: held by " + (info == 0 && used == 1 && !holder.isEmpty ? holder : "another request")
        }
        return "GPIO_V2_GET_LINE_IOCTL: \(error)"
    }
}

/// A button on a GPIO line, through the character device uAPI v2: edge events on both
/// edges with the kernel's debounce; when the chip cannot debounce, onair does.
public final class GPIOButton: Sendable {
    public let description: String
    private let lineFD: FileDescriptor
    /// The reading thread's own copy filters the edges.
    private let debouncer: Debouncer
    /// The line read as pressed when it was taken: held down, or floating on a chip that
    /// ignores the bias asked for (QEMU's PL061; gpiolib says nothing when a chip cannot
    /// bias). Presses count only after it has been seen released, so a floating line is
    /// never a press.
    public let startedPressed: Bool
    private let thread = StoppableThread()

    /// `line`: `gpiochipN:OFFSET`. `bias`: pull-up, pull-down or none.
    public init(line: String, activeLow: Bool, bias: String, debounceMilliseconds: Int) throws {
        let (chipFD, offset, name) = try GPIOChip.open(line, key: "button.gpio")
        description = name
        defer { chipFD.close() }
        let biasCode: Int32 = ["none": 3, "pull-up": 1, "pull-down": 2][bias] ?? 0
        func request(debounceMicroseconds: UInt32) throws -> FileDescriptor {
            try FileDescriptor.receiving { onair_gpio_request_input(chipFD.rawValue, offset, activeLow ? 1 : 0, biasCode, debounceMicroseconds, "onair", $0) }
        }
        var software = false
        do {
            do { lineFD = try request(debounceMicroseconds: UInt32(debounceMilliseconds * 1000)) } catch let error as Errno {
                // A chip that cannot debounce says EINVAL: then onair debounces.
                guard error == .invalid && debounceMilliseconds > 0 else { throw error }
                lineFD = try request(debounceMicroseconds: 0)
                software = true
            }
        } catch let error as Errno {
            throw DeviceError.setting(key: "button.gpio", value: description, reason: GPIOChip.reason(requesting: offset, on: chipFD, error))
        }
        // The kernel's debounce already filtered; onair's own only when it could not.
        debouncer = Debouncer(periodNanoseconds: software ? Int64(debounceMilliseconds) * 1_000_000 : 0)
        startedPressed = onair_gpio_get(lineFD.rawValue) == 1
    }

    public func start(_ handler: @escaping @Sendable (ButtonEdge) -> Void) {
        thread.start(name: "onair-gpio") { [self] in
            var buffer = [UInt8](repeating: 0, count: Int(onair_gpio_event_size) * 16)
            var debouncer = self.debouncer
            var released = !startedPressed
            while !thread.isStopped {
                guard let ready = try? Poll.wait(lineFD, for: .readable, timeoutMs: 200), !ready.isEmpty else { continue }
                let n: Int
                do { n = try buffer.withUnsafeMutableBytes { try lineFD.read(into: $0) } } catch let error as Errno where error == .again {
                    continue
                } catch { return }
                guard n > 0 else { return }
                let edges = buffer.withUnsafeBytes { ButtonEvents.gpio(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                for edge in edges where debouncer.accept(edge) {
                    if !released { released = !edge.pressed; continue }
                    handler(edge)
                }
            }
        }
    }

    public func stop() { thread.stop() }
}

/// Record keys on evdev devices: a named one, or (`auto`) every device that reports one
/// of the keys, looked for again every two seconds so a keyboard plugged in later works
/// (and a named one that is missing or unreadable is said, through `availability`, and
/// taken when it can be).
public final class EvdevButtons: Sendable {
    public let keys: Set<UInt16>
    private let device: String?
    private let thread = StoppableThread()
    private let clock: MediaClock
    private let log: Log
    private let availability: @Sendable (_ problem: String?) -> Void

    /// `device`: a path, or nil for every keyboard-like device. `availability` hears why
    /// a named device cannot be opened, and nil once it is.
    public init(device: String?, keys: Set<UInt16>, clock: MediaClock = MonotonicClock(), log: Log,
                availability: @escaping @Sendable (_ problem: String?) -> Void = { _ in }) {
        self.device = device
        self.keys = keys
        self.clock = clock
        self.log = log
        self.availability = availability
    }

    public func start(_ handler: @escaping @Sendable (ButtonEdge) -> Void) {
        thread.start(name: "onair-evdev") { [self] in run(handler) }
    }

    public func stop() { thread.stop() }

    private func candidates() -> [String] {
        if let device { return [device] }
        return deviceNodes(in: "/dev/input", prefix: "event")
    }

    private func run(_ handler: @escaping @Sendable (ButtonEdge) -> Void) {
        var open: [String: FileDescriptor] = [:]
        var nextScan: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: Int(onair_input_event_size) * 64)
        while !thread.isStopped {
            if clock.now() >= nextScan {
                for path in candidates() where open[path] == nil {
                    let fd: FileDescriptor
                    do { fd = try FileDescriptor.open(path, .readOnly, options: .nonBlocking) } catch {
                        if device != nil { availability(error as? Errno == .noEntry ? "no such device" : "\(error)") }
                        continue
                    }
                    if device != nil { availability(nil) }
                    // A named device is taken as it is; among all, only those with the keys.
                    if device == nil && !keys.contains(where: { onair_evdev_has_key(fd.rawValue, UInt32($0)) == 1 }) { continue }
                    open[path] = fd
                    log.emit(.buttonInput, level: .info, [("device", path), ("keys", keys.sorted().map(String.init).joined(separator: ","))])
                }
                nextScan = clock.now() + 2_000_000_000
            }
            let watched = Array(open)
            guard !watched.isEmpty else { clock.sleep(until: clock.now() + 200_000_000); continue }
            guard let ready = try? Poll.wait(watched.map { ($0.value, .readable) }, timeoutMs: 200) else { continue }
            for ((path, fd), events) in zip(watched, ready) where !events.isEmpty {
                let n: Int
                do { n = try buffer.withUnsafeMutableBytes { try fd.read(into: $0) } } catch let error as Errno where error == .again {
                    continue
                } catch { n = 0 }
                if n == 0 {
                    // Unplugged (ENODEV) or a writer gone: let it go; a rescan finds it again.
                    open[path] = nil
                    continue
                }
                let now = clock.now()
                let events = buffer.withUnsafeBytes { ButtonEvents.evdev(UnsafeRawBufferPointer(rebasing: $0[0..<n]), keys: keys) }
                for event in events { handler(ButtonEdge(pressed: event.pressed, time: now)) }
            }
        }
    }
}
