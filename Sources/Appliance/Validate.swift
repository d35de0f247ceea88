import Files
import HLS
import Layout

/// `onair validate DIR`: the stream checker on a stored stream, reading each file with a
/// bound so hostile input cannot make it hang or exhaust memory.
extension Runner {
    static func validate(_ directory: String) -> Int32 {
        let index = directory + "/" + StreamLayout.index
        guard FileSystem.exists(index) else {
            printError("onair: validate: \(index) does not exist")
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

    /// A regular file's bytes, nil if there is none; anything else (a FIFO, a device, a
    /// file over `limit`) is an error the checker reports against the file.
    static func readBounded(_ path: String, limit: Int) throws -> [UInt8]? {
        do { return try FileSystem.readRegular(path, limit: limit) } catch FileSystem.Refusal.missing { return nil }
    }
}
