import Devices
import Foundation
import TestSupport
import Threading
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `GET /api/snapshot.jpg` from a real onair: a JPEG ffmpeg reads, of the stream's size
/// and orientation, whose picture is the camera's (the synthetic frame index band reads
/// back in full range).
final class SnapshotTests: XCTestCase {
    /// The snapshot, once there is one (503 with Retry-After until the first frame).
    func snapshot(port: UInt16) throws -> HTTPResponse {
        var reply = try HTTPClient.request(port: port, "/api/snapshot.jpg")
        for _ in 0..<100 where reply.status == 503 {
            XCTAssertEqual(reply.header("Retry-After"), "1")
            usleep(100_000)
            reply = try HTTPClient.request(port: port, "/api/snapshot.jpg")
        }
        return reply
    }

    func testTheNewestPictureAsAJPEGAnyDecoderReads() throws {
        let (onair, port, out) = try serveSynthetic("snapshot", ["video.width=640", "video.height=360"])
        defer { onair.signal(SIGTERM); onair.wait() }
        let reply = try snapshot(port: port)
        XCTAssertEqual(reply.status, 200)
        XCTAssertEqual(reply.header("Content-Type"), "image/jpeg")
        XCTAssertEqual(reply.header("Cache-Control"), "no-cache")
        let file = out + "/snapshot.jpg"
        try Data(reply.body).write(to: URL(fileURLWithPath: file))
        let probed = try runTool("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,width,height,pix_fmt", "-of", "csv=p=0", file])
        XCTAssertEqual(String(decoding: probed.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), "mjpeg,640,360,yuvj420p")
        let gray = try runBinaryTool("/usr/bin/ffmpeg", ["-v", "error", "-i", file, "-f", "rawvideo", "-pix_fmt", "gray", "-"], output: out + "/snapshot.gray")
        XCTAssertEqual(gray.status, 0, gray.stderr)
        let luma = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out + "/snapshot.gray")))
        XCTAssertEqual(luma.count, 640 * 360)
        XCTAssertNotNil(luma.withUnsafeBufferPointer { SyntheticPattern.decodeIndex(luma: $0, width: 640, height: 360) }, "the frame index band reads")
        XCTAssertLessThan(luma.min() ?? 255, 8, "video black is JPEG black (full range)")
        // Many viewers at once (a fleet page of posters): every one gets a picture.
        let replies = Locked<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let status = (try? HTTPClient.request(port: port, "/api/snapshot.jpg").status) ?? 0
            replies.withLock { $0.append(status) }
        }
        XCTAssertEqual(replies.withLock { $0 }, Array(repeating: 200, count: 8))

        // The viewer shows it as the live stream's poster until the stream plays.
        let browser = try Chromium()
        try browser.open("http://127.0.0.1:\(port)/")
        let poster = try browser.settled("document.getElementById('video').poster || null")
        XCTAssertTrue(poster.hasPrefix("http://127.0.0.1:\(port)/api/snapshot.jpg?at="), poster)
    }

    /// Turned as the stream is (`video.rotation`), so the poster matches the video.
    func testTheSnapshotIsTurnedAsTheStreamIs() throws {
        let (onair, port, out) = try serveSynthetic("snapshot-rotated", ["video.width=640", "video.height=360", "video.rotation=90"])
        defer { onair.signal(SIGTERM); onair.wait() }
        let file = out + "/snapshot.jpg"
        try Data(try snapshot(port: port).body).write(to: URL(fileURLWithPath: file))
        let probed = try runTool("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", file])
        XCTAssertEqual(String(decoding: probed.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), "360,640")
    }
}
