import Files
import HLS
#if canImport(Glibc)
import Glibc
#endif

/// `onair validate DIR`: the stream checker on a stored stream, reading each file with a
/// bound so hostile input cannot make it hang or exhaust memory.
extension Runner {
    static func validate(_ directory: String) -> Int32 {
        guard FileSystem.exists(directory + "/index.m3u8") else {
            printError("onair: validate: \(directory)/index.m3u8 does not exist")
            return 2
        }
        let findings = StreamChecker.check { path in try readBounded(directory + "/" + path, limit: validateFileLimit) }
        for finding in findings { print(finding) }
        let errors = findings.filter { $0.severity == .error }.count
        print("\(directory): \(errors) errors, \(findings.count - errors) warnings")
        return errors == 0 ? 0 : 1
    }

    /// The largest file `onair validate` reads: a playlist of a million segments, or a
    /// 2-second segment at 1 Gbit/s, is well under it; a sparse 4 GB file is not read.
    static let validateFileLimit = 256 << 20

    struct FileTooLarge: Error, CustomStringConvertible {
        var size: Int64, limit: Int
        var description: String { "\(size) bytes, over the \(limit >> 20) MiB limit" }
    }

    /// A regular file's bytes, nil if there is none, or an error if it is over `limit`.
    static func readBounded(_ path: String, limit: Int) throws -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        guard info.st_size <= limit else { throw FileTooLarge(size: Int64(info.st_size), limit: limit) }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            done += n
        }
        return Array(bytes[..<done])
    }
}
