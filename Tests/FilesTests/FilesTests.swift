import Files
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest

final class AtomicFileTests: XCTestCase {
    var directory = ""
    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onair-atomic-\(UUID().uuidString)").path
        try AtomicFile.makeDirectories(directory + "/a/b")
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    func testWritesReplacesAndLeavesNoTemporaryFile() throws {
        let path = directory + "/a/b/playlist.m3u8"
        try AtomicFile.write(Array("one".utf8), to: path)
        try AtomicFile.write(Array("two".utf8), to: path)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "two")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/a/b"), ["playlist.m3u8"])
    }

    func testAFailedWriteNamesThePathAndLeavesNothing() {
        XCTAssertThrowsError(try AtomicFile.write([1], to: directory + "/missing/x.m4s")) { error in
            XCTAssertTrue("\(error)".contains(directory + "/missing/.x.m4s.tmp"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/missing"))
    }
}

/// The POSIX file helpers, checked against what Foundation's FileManager says of the same
/// files (the tests may use Foundation; onair does not).
final class FileSystemTests: XCTestCase {
    var directory = ""
    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onair-files-\(UUID().uuidString)").path
        try AtomicFile.makeDirectories(directory + "/a/b")
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    /// Issue 29: a file is read only as what it must be, within a bound, at no cost that
    /// grows with what is there instead.
    func testOnlyRegularFilesWithinTheirBoundAreRead() throws {
        let fifo = directory + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o644), 0)
        XCTAssertThrowsError(try FileSystem.readRegular(fifo, limit: 100)) { XCTAssertEqual($0 as? FileSystem.Refusal, .notRegular("a FIFO")) }
        XCTAssertNil(FileSystem.read(fifo), "refused, never blocked on")
        let link = directory + "/zero"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/dev/zero")
        XCTAssertThrowsError(try FileSystem.readRegular(link, limit: 100)) { XCTAssertEqual($0 as? FileSystem.Refusal, .notRegular("a device")) }
        XCTAssertThrowsError(try FileSystem.readRegular(link, limit: 100, followLinks: false)) {
            XCTAssertEqual($0 as? FileSystem.Refusal, .notRegular("a symbolic link"))
        }
        XCTAssertThrowsError(try FileSystem.readRegular(directory + "/a", limit: 100)) { XCTAssertEqual($0 as? FileSystem.Refusal, .notRegular("a directory")) }
        XCTAssertThrowsError(try FileSystem.readRegular(directory + "/none", limit: 100)) { XCTAssertEqual($0 as? FileSystem.Refusal, .missing) }
        let sparse = directory + "/sparse"
        XCTAssertTrue(FileManager.default.createFile(atPath: sparse, contents: nil))
        XCTAssertEqual(truncate(sparse, 4 << 30), 0)
        XCTAssertThrowsError(try FileSystem.readRegular(sparse, limit: 64 << 20)) {
            XCTAssertEqual("\($0)", "larger than 64 MiB")
        }
        try AtomicFile.write([1, 2, 3], to: directory + "/small")
        XCTAssertEqual(try FileSystem.readRegular(directory + "/small", limit: 3), [1, 2, 3])
        XCTAssertThrowsError(try FileSystem.readRegular(directory + "/small", limit: 2))
        // /proc files say size 0: read to their end, within the bound.
        XCTAssertTrue(try FileSystem.readRegular("/proc/self/status", limit: 1 << 20).count > 0)
    }

    func testReadsWholeFilesLargerThanOneChunk() throws {
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try FileSystem.write(bytes, to: directory + "/big")
        XCTAssertEqual(FileSystem.read(directory + "/big"), bytes)
        XCTAssertEqual(FileManager.default.contents(atPath: directory + "/big").map(Array.init), bytes)
        try FileSystem.write(Array("short".utf8), to: directory + "/big")
        XCTAssertEqual(FileSystem.readText(directory + "/big"), "short", "a second write truncates")
        XCTAssertEqual(FileSystem.read(directory + "/empty-missing"), nil)
        XCTAssertEqual(FileSystem.read(directory + "/a"), nil, "a directory is not a file")
        try FileSystem.write([], to: directory + "/empty")
        XCTAssertEqual(FileSystem.read(directory + "/empty"), [])
    }

    func testListsNamesAndFilesBelow() throws {
        try FileSystem.write([1], to: directory + "/a/one")
        try FileSystem.write([2], to: directory + "/a/b/two")
        try FileSystem.write([3], to: directory + "/.hidden")
        symlink(directory + "/a", directory + "/link")
        XCTAssertEqual(FileSystem.names(in: directory)?.sorted(), [".hidden", "a", "link"])
        XCTAssertEqual(FileSystem.names(in: directory)?.sorted(),
                       try FileManager.default.contentsOfDirectory(atPath: directory).sorted())
        XCTAssertNil(FileSystem.names(in: directory + "/missing"))
        XCTAssertEqual(FileSystem.filesBelow(directory).sorted(), [".hidden", "a/b/two", "a/one", "link"],
                       "a link is listed, not followed")
        XCTAssertTrue(FileSystem.isDirectory(directory + "/a"))
        XCTAssertFalse(FileSystem.isDirectory(directory + "/a/one"))
        XCTAssertTrue(FileSystem.exists(directory + "/a/one"))
        XCTAssertFalse(FileSystem.exists(directory + "/a/none"))
    }

    func testRemovesTreesButNotWhatLinksLeadTo() throws {
        let outside = directory + "-outside"
        try AtomicFile.makeDirectories(outside)
        defer { try? FileManager.default.removeItem(atPath: outside) }
        try FileSystem.write([1], to: outside + "/keep")
        try FileSystem.write([2], to: directory + "/a/b/two")
        symlink(outside, directory + "/a/link")
        try FileSystem.remove(directory + "/a")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/a"))
        XCTAssertEqual(FileSystem.read(outside + "/keep"), [1], "the link was removed, not followed")
        XCTAssertNoThrow(try FileSystem.remove(directory + "/a"), "nothing there is not an error")
        try FileSystem.write([1], to: directory + "/file")
        try FileSystem.remove(directory + "/file")
        XCTAssertFalse(FileSystem.exists(directory + "/file"))
    }

    func testAFailedWriteNamesThePath() {
        XCTAssertThrowsError(try FileSystem.write([1], to: directory + "/missing/x")) { error in
            XCTAssertTrue("\(error)".contains(directory + "/missing/x"), "\(error)")
        }
    }
}
