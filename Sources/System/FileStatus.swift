#if canImport(Glibc)
import Glibc
#endif

/// What stat(2) says of a file: its kind, size and modification time.
public struct FileStatus: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case regular, directory, symbolicLink, fifo, characterDevice, blockDevice, socket, other

        /// How a refusal names it ("a FIFO, not a regular file").
        public var article: String {
            switch self {
            case .regular: return "a regular file"
            case .directory: return "a directory"
            case .symbolicLink: return "a symbolic link"
            case .fifo: return "a FIFO"
            case .characterDevice, .blockDevice: return "a device"
            case .socket: return "a socket"
            case .other: return "a special file"
            }
        }
    }

    public var kind: Kind
    public var size: Int64
    /// st_mtim: seconds and nanoseconds since the epoch.
    public var modifiedSeconds: Int
    public var modifiedNanoseconds: Int
    /// st_dev and st_ino: the file's identity, whatever its name.
    public var device: UInt64
    public var inode: UInt64
    /// st_rdev: the device a device node is for.
    public var deviceNumber: UInt64
    /// st_nlink: how many names the file has.
    public var links: Int

    /// Both are names of one file (the same device and inode).
    public func isSameFile(as other: FileStatus) -> Bool { device == other.device && inode == other.inode }

    init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symbolicLink
        case S_IFIFO: kind = .fifo
        case S_IFCHR: kind = .characterDevice
        case S_IFBLK: kind = .blockDevice
        case S_IFSOCK: kind = .socket
        default: kind = .other
        }
        size = Int64(info.st_size)
        modifiedSeconds = info.st_mtim.tv_sec
        modifiedNanoseconds = info.st_mtim.tv_nsec
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        deviceNumber = UInt64(info.st_rdev)
        links = Int(info.st_nlink)
    }
}

/// What statvfs(3) says of a file system, in bytes.
public struct FileSystemStatus: Sendable, Equatable {
    /// Free to an unprivileged writer (f_bavail).
    public var available: Int64
    public var total: Int64
}
