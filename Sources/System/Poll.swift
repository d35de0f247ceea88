#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// poll(2) over a few descriptors.
public enum Poll {
    public struct Events: OptionSet, Sendable {
        public let rawValue: Int16
        public init(rawValue: Int16) { self.rawValue = rawValue }
        public static let readable = Events(rawValue: Int16(POLLIN))
        public static let writable = Events(rawValue: Int16(POLLOUT))
        /// Said by the kernel only: an error, a hang-up, a descriptor that is not open.
        public static let error = Events(rawValue: Int16(POLLERR))
        public static let hangUp = Events(rawValue: Int16(POLLHUP))
        public static let invalid = Events(rawValue: Int16(POLLNVAL))
    }

    /// Waits at most `timeoutMs` (-1: for ever) until one of `descriptors` has one of its
    /// events; returns what each has (empty for those that have none). A signal ends the
    /// wait early with nothing ready, as a timeout does: callers loop on their own deadline.
    public static func wait(_ descriptors: [(FileDescriptor, Events)], timeoutMs: Int32) throws -> [Events] {
        var entries = descriptors.map { pollfd(fd: $0.0.rawValue, events: $0.1.rawValue, revents: 0) }
        let n = entries.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), timeoutMs) }
        if n < 0 {
            let error = Errno.current
            if error != .interrupted { throw error }
            return descriptors.map { _ in [] }
        }
        // The descriptors are held until here, so none was closed and reused mid-poll.
        withExtendedLifetime(descriptors) {}
        return entries.map { Events(rawValue: $0.revents) }
    }

    /// One descriptor: whether it became ready for `events` within `timeoutMs`.
    public static func wait(_ descriptor: FileDescriptor, for events: Events, timeoutMs: Int32) throws -> Events {
        try wait([(descriptor, events)], timeoutMs: timeoutMs)[0]
    }
}

/// pipe2(2) with O_CLOEXEC: the read end and the write end.
public func makePipe(nonBlocking: Bool = false) throws -> (read: FileDescriptor, write: FileDescriptor) {
    var ends: [Int32] = [0, 0]
    _ = try once { onair_pipe(&ends, nonBlocking ? 1 : 0) }
    return (FileDescriptor(adopting: ends[0]), FileDescriptor(adopting: ends[1]))
}

/// A memory mapping (mmap(2)) of a device's or file's buffer, unmapped once, by `unmap()`
/// or when the last reference goes.
public final class MemoryMap {
    public let address: UnsafeMutableRawPointer
    public let length: Int
    private var mapped = true

    /// A shared mapping of `length` bytes at `offset` of `descriptor`, readable, and
    /// writable when `writable`.
    public init(_ descriptor: FileDescriptor, length: Int, offset: Int64, writable: Bool) throws {
        let protection = PROT_READ | (writable ? PROT_WRITE : 0)
        guard let address = mmap(nil, length, protection, MAP_SHARED, descriptor.rawValue, off_t(offset)),
              address != MAP_FAILED else { throw Errno.current }
        self.address = address
        self.length = length
    }

    public func unmap() {
        guard mapped else { return }
        mapped = false
        munmap(address, length)
    }

    deinit { unmap() }
}
