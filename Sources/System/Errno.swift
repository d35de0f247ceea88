#if canImport(Glibc)
import Glibc
#endif

/// A system call's error number (errno(3)), as a value: thrown by every wrapper in this
/// module, compared by name (`error == .noSpace`), printed as strerror(3) says it. The C
/// `errno` is read in one place, `Errno.current`, right after the call that set it.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's errno, the one read of it in onair: at once after a failed
    /// call (this module's wrappers, or a C library that reports through errno, as
    /// libmicrohttpd's start does).
    public static var current: Errno { Errno(rawValue: errno) }

    public var description: String { String(cString: strerror(rawValue)) }

    // The numbers onair tells apart (Linux's, asm-generic/errno-base.h and errno.h).
    public static let notPermitted = Errno(rawValue: EPERM)
    public static let noEntry = Errno(rawValue: ENOENT)
    public static let interrupted = Errno(rawValue: EINTR)
    public static let ioError = Errno(rawValue: EIO)
    public static let badDescriptor = Errno(rawValue: EBADF)
    public static let again = Errno(rawValue: EAGAIN)
    public static let noMemory = Errno(rawValue: ENOMEM)
    public static let permissionDenied = Errno(rawValue: EACCES)
    public static let busy = Errno(rawValue: EBUSY)
    public static let exists = Errno(rawValue: EEXIST)
    public static let crossDevice = Errno(rawValue: EXDEV)
    public static let noDevice = Errno(rawValue: ENODEV)
    public static let notDirectory = Errno(rawValue: ENOTDIR)
    public static let isDirectory = Errno(rawValue: EISDIR)
    public static let invalid = Errno(rawValue: EINVAL)
    /// ENOTTY: an ioctl the device does not know (a file that is not the device asked for).
    public static let inappropriateControl = Errno(rawValue: ENOTTY)
    public static let tooBig = Errno(rawValue: EFBIG)
    public static let noSpace = Errno(rawValue: ENOSPC)
    public static let readOnlyFileSystem = Errno(rawValue: EROFS)
    public static let tooManyLinks = Errno(rawValue: EMLINK)
    public static let brokenPipe = Errno(rawValue: EPIPE)
    public static let loop = Errno(rawValue: ELOOP)
    public static let notSupported = Errno(rawValue: EOPNOTSUPP)
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    public static let quota = Errno(rawValue: EDQUOT)
    public static let streamPipe = Errno(rawValue: ESTRPIPE)
    public static let noSuchDeviceOrAddress = Errno(rawValue: ENXIO)
    public static let notTTY = Errno(rawValue: ENOTTY)
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    public static let addressNotAvailable = Errno(rawValue: EADDRNOTAVAIL)
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    public static let noBufferSpace = Errno(rawValue: ENOBUFS)

    /// The file system (or the user's quota) is full.
    public var isNoSpace: Bool { self == .noSpace || self == .quota }
}

/// Runs a call that returns -1 and sets errno on failure, again while it was interrupted
/// by a signal (EINTR); any other failure is thrown as its `Errno`.
@inline(__always)
func retrying<T: BinaryInteger>(_ call: () -> T) throws -> T {
    while true {
        let result = call()
        if result >= 0 { return result }
        let error = Errno.current
        if error != .interrupted { throw error }
    }
}

/// The same for a call that is not retried (close(2), rename(2): EINTR means done or
/// not, and a second try could act on something else).
@inline(__always)
func once<T: BinaryInteger>(_ call: () -> T) throws -> T {
    let result = call()
    if result < 0 { throw Errno.current }
    return result
}
