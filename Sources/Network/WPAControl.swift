import System
#if canImport(Glibc)
import Glibc
#endif

/// A client of wpa_supplicant's control interface (wpa_supplicant's ctrl_iface_unix.c,
/// the protocol wpa_cli speaks): datagrams on the interface's Unix socket, a command each
/// and its reply; once attached, events come unsolicited, each starting "<level>". The
/// client's own socket is autobound (an abstract name the kernel picks, unix(7)), so
/// nothing is left in a directory when onair stops.
public final class WPAControl: Sendable {
    public let path: String
    let socket: FileDescriptor

    /// The largest reply or event read (wpa_cli's buffer is 4096; scan results may be
    /// longer and are cut there, never read past the buffer).
    static let maximumDatagram = 16_384

    public enum ControlError: Error, CustomStringConvertible {
        case unreachable(String)
        case noReply(String)
        public var description: String {
            switch self {
            case .unreachable(let why): return "wpa_supplicant's control socket: \(why)"
            case .noReply(let command): return "wpa_supplicant did not answer \(command)"
            }
        }
    }

    /// Connects to the socket at `path` (`/run/wpa_supplicant/wlan0`).
    public init(path: String) throws(ControlError) {
        self.path = path
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .unreachable("\(Errno.current)") }
        socket = FileDescriptor(adopting: fd)
        // Autobind: only the family, the kernel gives an abstract name.
        var local = sockaddr_un()
        local.sun_family = sa_family_t(AF_UNIX)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sa_family_t>.size)) }
        }
        guard bound == 0 else { throw .unreachable("\(Errno.current)") }
        var remote = sockaddr_un()
        remote.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: remote.sun_path) else { throw .unreachable("path too long") }
        withUnsafeMutableBytes(of: &remote.sun_path) { $0.copyBytes(from: bytes) }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw .unreachable("\(Errno.current)") }
    }

    public var descriptor: Int32 { socket.rawValue }

    /// Sends `command` and waits up to `timeoutMs` for its reply; events that come
    /// meanwhile go to `event`.
    public func request(_ command: String, timeoutMs: Int32 = 2000, event: (String) -> Void = { _ in }) throws(ControlError) -> String {
        let sent = command.withCString { Glibc.send(socket.rawValue, $0, strlen($0), 0) }
        guard sent >= 0 else { throw .unreachable("\(Errno.current)") }
        let deadline = KernelClock.monotonic() + Int64(timeoutMs) * 1_000_000
        while true {
            let left = (deadline - KernelClock.monotonic()) / 1_000_000
            guard left > 0 else { throw .noReply(command) }
            _ = try? Poll.wait(socket, for: .readable, timeoutMs: Int32(left))
            while let message = try receive() {
                if Self.isEvent(message) { event(message) } else { return message }
            }
        }
    }

    /// Asks for events (ATTACH); they come to `receive`.
    public func attach() throws(ControlError) {
        let reply = try request("ATTACH")
        guard reply.hasPrefix("OK") else { throw .unreachable("ATTACH answered \(reply.prefix(40))") }
    }

    /// One datagram waiting on the socket, or nil when none is.
    public func receive() throws(ControlError) -> String? {
        var buffer = [UInt8](repeating: 0, count: Self.maximumDatagram)
        let count = buffer.withUnsafeMutableBytes { Glibc.recv(socket.rawValue, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            let error = Errno.current
            if error == .again || error == .interrupted { return nil }
            throw .unreachable("\(error)")
        }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// An unsolicited event: "<N>TEXT" (N the message level).
    static func isEvent(_ message: String) -> Bool {
        guard message.first == "<", let close = message.firstIndex(of: ">") else { return false }
        let level = message[message.index(after: message.startIndex)..<close]
        return !level.isEmpty && level.count <= 2 && level.allSatisfy(\.isNumber)
    }

    /// The event's text without its level.
    public static func eventText(_ message: String) -> String {
        guard isEvent(message), let close = message.firstIndex(of: ">") else { return message }
        return String(message[message.index(after: close)...])
    }
}
