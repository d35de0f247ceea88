import Foundation
import System
import XCTest

final class FileDescriptorTests: XCTestCase {
    var directory = ""
    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onair-system-\(UUID().uuidString)").path
        try Path.makeDirectory(directory)
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    func testWritesReadsAndReadsAtAnOffset() throws {
        let fd = try FileDescriptor.open(directory + "/a", .readWrite, options: [.create, .exclusive])
        try fd.writeAll(Array("hello world".utf8))
        try Array("W".utf8).withUnsafeBytes { try fd.writeAll($0, at: 6) }
        try fd.sync()
        var five = [UInt8](repeating: 0, count: 5)
        try five.withUnsafeMutableBytes { try fd.readAll(at: 6, into: $0) }
        XCTAssertEqual(String(decoding: five, as: UTF8.self), "World")
        XCTAssertEqual(try fd.status().size, 11)
        XCTAssertEqual(try fd.status().kind, .regular)
        var past = [UInt8](repeating: 0, count: 4)
        XCTAssertThrowsError(try past.withUnsafeMutableBytes { try fd.readAll(at: 9, into: $0) }) {
            XCTAssertEqual($0 as? Errno, .ioError)
        }
        try fd.seek(to: 0)
        var all = [UInt8](repeating: 0, count: 64)
        XCTAssertEqual(try all.withUnsafeMutableBytes { try fd.read(into: $0) }, 11)
    }

    func testErrorsAreNamedErrnos() {
        XCTAssertThrowsError(try FileDescriptor.open(directory + "/missing", .readOnly)) { XCTAssertEqual($0 as? Errno, .noEntry) }
        XCTAssertThrowsError(try FileDescriptor.open(directory, .readOnly, options: [.create, .exclusive])) {
            XCTAssertEqual($0 as? Errno, .exists)
        }
        XCTAssertThrowsError(try Path.rename(directory + "/missing", to: directory + "/b")) { XCTAssertEqual($0 as? Errno, .noEntry) }
        XCTAssertEqual(Errno.noEntry.description, "No such file or directory")
        XCTAssertTrue(Errno.quota.isNoSpace && Errno.noSpace.isNoSpace && !Errno.ioError.isNoSpace)
    }

    /// Closing once is what keeps a reused number safe: after `close()`, the same number
    /// given to a new file must survive the first object's end.
    func testClosesOnceSoAReusedNumberIsNotClosedUnderItsNewOwner() throws {
        var first: FileDescriptor? = try FileDescriptor.open(directory + "/one", .writeOnly, options: .create)
        let number = first!.rawValue
        first!.close()
        let second = try FileDescriptor.open(directory + "/two", .writeOnly, options: .create)
        XCTAssertEqual(second.rawValue, number, "the kernel gives the lowest free number")
        first!.close()
        first = nil
        XCTAssertNoThrow(try second.writeAll(Array("still open".utf8)))
        XCTAssertEqual(try Path.status(directory + "/two").size, 10)
    }

    func testADescriptorClosesWhenItsLastReferenceGoes() throws {
        var fd: FileDescriptor? = try FileDescriptor.open(directory + "/one", .writeOnly, options: .create)
        let number = fd!.rawValue
        fd = nil
        let next = try FileDescriptor.open(directory + "/two", .writeOnly, options: .create)
        XCTAssertEqual(next.rawValue, number)
    }

    func testReleasedDescriptorsAreNotClosed() throws {
        let fd = try FileDescriptor.open(directory + "/one", .writeOnly, options: .create)
        let raw = fd.release()
        fd.close()
        let adopted = FileDescriptor(adopting: raw)
        XCTAssertNoThrow(try adopted.writeAll([1, 2, 3]))
    }

    func testStatusTellsKindsApart() throws {
        XCTAssertEqual(try Path.status(directory).kind, .directory)
        XCTAssertEqual(mkfifo(directory + "/fifo", 0o600), 0)
        XCTAssertEqual(try Path.status(directory + "/fifo").kind, .fifo)
        XCTAssertEqual(try Path.status("/dev/null").kind, .characterDevice)
        XCTAssertEqual(symlink(directory + "/fifo", directory + "/link"), 0)
        XCTAssertEqual(try Path.status(directory + "/link", followLinks: false).kind, .symbolicLink)
        XCTAssertEqual(try Path.linkTarget(directory + "/link"), directory + "/fifo")
        XCTAssertThrowsError(try FileDescriptor.open(directory + "/link", .readOnly, options: [.nonBlocking, .noFollow])) {
            XCTAssertEqual($0 as? Errno, .loop)
        }
        // A FIFO without a writer: a non-blocking open does not wait for one.
        XCTAssertEqual(try FileDescriptor.open(directory + "/fifo", .readOnly, options: .nonBlocking).status().kind, .fifo)
    }

    func testPathCalls() throws {
        try FileDescriptor.open(directory + "/a", .writeOnly, options: .create).writeAll([1])
        try Path.link(directory + "/a", as: directory + "/b")
        XCTAssertThrowsError(try Path.link(directory + "/a", as: directory + "/b")) { XCTAssertEqual($0 as? Errno, .exists) }
        XCTAssertEqual(try Path.status(directory + "/a").inode, try Path.status(directory + "/b").inode)
        try Path.rename(directory + "/b", to: directory + "/c")
        try Path.makeDirectory(directory + "/d")
        XCTAssertEqual(try Path.names(in: directory).sorted(), ["a", "c", "d"])
        XCTAssertThrowsError(try Path.names(in: directory + "/a")) { XCTAssertEqual($0 as? Errno, .notDirectory) }
        try Path.unlink(directory + "/c")
        try Path.removeIfPresent(directory + "/c")
        try Path.removeDirectory(directory + "/d")
        XCTAssertEqual(try Path.names(in: directory), ["a"])
        XCTAssertEqual(try Path.resolved(directory + "/./a"), try Path.resolved(directory) + "/a")
        let space = try Path.fileSystemStatus(directory)
        XCTAssertTrue(space.total > 0 && space.available <= space.total)
    }

    func testAnAnonymousFileHasNoName() throws {
        let fd = try FileDescriptor.anonymous(in: directory)
        try fd.writeAll(Array("scratch".utf8))
        XCTAssertEqual(try Path.names(in: directory), [])
        XCTAssertEqual(try fd.status().size, 7)
    }

    func testPipesAndPoll() throws {
        let (reader, writer) = try makePipe(nonBlocking: true)
        XCTAssertEqual(try Poll.wait(reader, for: .readable, timeoutMs: 0), [])
        var byte: [UInt8] = [0]
        XCTAssertThrowsError(try byte.withUnsafeMutableBytes { try reader.read(into: $0) }) { XCTAssertEqual($0 as? Errno, .again) }
        try writer.writeAll([42])
        XCTAssertEqual(try Poll.wait([(reader, .readable), (writer, .writable)], timeoutMs: -1), [.readable, .writable])
        XCTAssertEqual(try byte.withUnsafeMutableBytes { try reader.read(into: $0) }, 1)
        XCTAssertEqual(byte, [42])
        writer.close()
        XCTAssertTrue(try Poll.wait(reader, for: .readable, timeoutMs: -1).contains(.hangUp))
    }

    func testMemoryMapsAFile() throws {
        let fd = try FileDescriptor.open(directory + "/map", .readWrite, options: .create)
        try fd.truncate(to: 4096)
        let map = try MemoryMap(fd, length: 4096, offset: 0, writable: true)
        map.address.storeBytes(of: 0x41, as: UInt8.self)
        map.unmap()
        var first: [UInt8] = [0]
        try first.withUnsafeMutableBytes { try fd.readAll(at: 0, into: $0) }
        XCTAssertEqual(first, [0x41])
    }

    func testTheShellAndTheEnvironment() {
        XCTAssertEqual(ThisProcess.runShell("exit 3"), 3)
        XCTAssertEqual(ThisProcess.runShell("true"), 0)
        XCTAssertNil(ThisProcess.runShell("kill -9 $$"))
        XCTAssertEqual(Environment.variables["PATH"], ThisProcess.environment("PATH"))
        setenv("ONAIR_SYSTEM_TEST", "a=b", 1)
        XCTAssertEqual(Environment.variables["ONAIR_SYSTEM_TEST"], "a=b", "only the first = separates")
        XCTAssertTrue(ThisProcess.send(nil, to: ThisProcess.id))
        XCTAssertGreaterThanOrEqual(ThisProcess.processorCount, 1)
    }

    /// A program's output and errors line by line as they come, and its exit status.
    func testAProgramsLinesAndStatus() {
        var lines: [String] = []
        let status = ThisProcess.run(["sh", "-c", "echo one; echo two >&2; printf '  5%% step\\r 10%% next\\n'; printf tail; exit 3"]) { lines.append($0) }
        XCTAssertEqual(status, 3)
        XCTAssertEqual(lines, ["one", "two", "  5% step", " 10% next", "tail"], "CR ends a line too (progress redrawn in place)")
        XCTAssertNil(ThisProcess.run(["/nonexistent/program"]) { _ in }, "a program that cannot start")
        XCTAssertNil(ThisProcess.run(["sh", "-c", "kill -9 $$"]) { _ in }, "a program killed")
    }
}
