import Files
import Foundation
import Layout
import MP4
import Publishing
import Recording
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Issue 13: a recording on a card that fills up degrades and never stops the session.
final class FullDiskTests: XCTestCase {
    func testSpaceRetryEvictsWhileEvictionFreesSomething() throws {
        final class Counter: @unchecked Sendable { var value = 0 }
        let full = FileError(path: "x", operation: "write", code: .noSpace)
        let evictions = Counter()
        var attempts = 0
        let value = try SpaceRetry.run({ evictions.value += 1; return true }) { () throws -> Int in
            attempts += 1
            if attempts < 3 { throw full }
            return 7
        }
        XCTAssertEqual(value, 7)
        XCTAssertEqual(evictions.value, 2)
        attempts = 0
        XCTAssertThrowsError(try SpaceRetry.run({ false }) { () throws -> Int in attempts += 1; throw full })
        XCTAssertEqual(attempts, 1, "nothing freed: the error, at once")
        XCTAssertThrowsError(try SpaceRetry.run({ true }) { () throws -> Int in throw FileError(path: "x", operation: "write", code: .ioError) })
    }

    /// On a 4 MiB tmpfs (CI runs as root): no room for the reservation, then no room for a
    /// fragment: the fragment is left out, the file stays readable, and it goes on once
    /// space is freed.
    func testARecordingPausesOnAFullDiskAndStaysReadable() throws {
        guard getuid() == 0 else { throw XCTSkip("mounting a tmpfs needs root (CI runs as root)") }
        let mount = FileManager.default.temporaryDirectory.appendingPathComponent("onair-rec-full-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        let mounted = Process()
        mounted.executableURL = URL(fileURLWithPath: "/bin/mount")
        mounted.arguments = ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mount]
        try mounted.run()
        mounted.waitUntilExit()
        guard mounted.terminationStatus == 0 else { throw XCTSkip("cannot mount a tmpfs here") }
        defer {
            let unmount = Process()
            unmount.executableURL = URL(fileURLWithPath: "/bin/umount")
            unmount.arguments = [mount]
            try? unmount.run()
            unmount.waitUntilExit()
            try? FileManager.default.removeItem(atPath: mount)
        }
        let recording = FakeRecording(seconds: 6)
        let filler = mount + "/filler"
        final class Room: @unchecked Sendable { var freed = false; var asked = 0 }
        let room = Room()
        let file = try RecordingFile(layout: StreamLayout(root: mount), id: "r", initSegment: recording.initSegment, preallocateBytes: 64 << 20,
                                     makeRoom: { room.asked += 1; return false })
        try file.append(recording.fragments[0])
        XCTAssertTrue(file.reservationOff, "64 MiB do not fit: no reservation, and the recording goes on")
        XCTAssertEqual(file.fragments, 1)
        // Fill the disk to the last byte.
        FileManager.default.createFile(atPath: filler, contents: nil)
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: filler))
        while (try? handle.write(contentsOf: Data(repeating: 1, count: 64 << 10))) != nil {}
        try? handle.write(contentsOf: Data(repeating: 1, count: 1))
        try handle.close()
        try file.append(recording.fragments[1])
        XCTAssertTrue(file.paused)
        XCTAssertEqual(file.fragmentsDropped, 1)
        XCTAssertGreaterThan(room.asked, 0, "eviction was asked first")
        try FileManager.default.removeItem(atPath: filler)
        for fragment in recording.fragments[2...] { try file.append(fragment) }
        XCTAssertFalse(file.paused, "space again: recording again")
        let result = try XCTUnwrap(try file.finish())
        XCTAssertEqual(result.fragments, recording.fragments.count - 1, "every fragment but the one left out, and nothing torn")
    }
}
