import Basics
import Foundation
import XCTest
@testable import Appliance
import Devices
import Publishing
import HLS
import Codecs
import Threading

/// The status snapshot as /metrics and the console show it.
final class StatusSnapshotTests: XCTestCase {
    let snapshot = StatusSnapshotTests.sample()
    static func sample() -> StatusSnapshot { StatusSnapshot(state: "recording", stream: "20261202T164233Z-3f9a", uptimeSeconds: 3725.5, fps: 30, framesIn: 1800,
                                  segmentsStored: 30, segmentBytes: 11_250_000, liveBitsPerSecond: 1_520_000, droppedVideoFrames: 2,
                                  droppedAudioChunks: 0, streamsEnded: 1, recordings: 3, recordingBytes: 250_000_000,
                                  recordingNowBytes: 37_748_736, cameraFrames: nil, cameraDriverDropped: nil, cameraReopened: nil,
                                  lastError: "upload.failed url=http://origin/ reason=\"timeout\"",
                                  publish: .init(destination: "http://origin/", pendingSegments: 3, pendingBytes: 1_125_000,
                                                 oldestPendingSeconds: 6.2, streamsPublishing: 1, attempts: 40, failures: 7,
                                                 bytes: 10_125_000, lastError: "timeout"),
                                  clock: ClockReading(wallMs: 1_796_229_753_000, monotonic: 0, synchronized: true,
                                                      source: "systemd-timesyncd")) }

    func testConsoleLine() {
        XCTAssertEqual(snapshot.consoleLine(fpsActual: 29.97),
                       "onair: recording stream=20261202T164233Z-3f9a up=1h02m05s fps=30.0/30 temp=- clock=synced rate=1.52M seg=30/27 queue=3(6s) "
                       + "rec=36.0M dropped=2 err=upload.failed url=http://origin/ reason=\"timeout\"")
    }

    /// A quality ladder: which rungs are encoded now, on the console, /api/status and /metrics.
    func testTheLadderRungsInUseAreShown() throws {
        var hot = snapshot
        hot.ladder = (live: ["640x360@400k"], dropped: ["854x480@900k"])
        XCTAssertTrue(hot.consoleLine(fpsActual: 30).contains(" fps=30.0/30 rungs=1/2 temp=-"), hot.consoleLine(fpsActual: 30))
        let ladder = try XCTUnwrap(try XCTUnwrap(JSON.parse(hot.json))["ladder"])
        func names(_ key: String) -> [String]? { if case .array(let items)? = ladder[key] { return items.compactMap(\.string) }; return nil }
        XCTAssertEqual(names("live"), ["640x360@400k"])
        XCTAssertEqual(names("dropped"), ["854x480@900k"])
        XCTAssertTrue(hot.metrics.contains("\nonair_ladder_rungs_live 1\n"), hot.metrics)
        XCTAssertFalse(snapshot.metrics.contains("ladder_rungs") || snapshot.consoleLine(fpsActual: 30).contains("rungs="), "without a ladder: nothing said")
    }

    /// device.name on every surface: the console line, /api/status, and every sample's label.
    func testTheBoardIsNamedEverywhere() throws {
        var named = snapshot
        named.device = "cam-2.gym"
        XCTAssertTrue(named.consoleLine(fpsActual: 30).hasPrefix("onair: recording device=cam-2.gym stream=20261202T164233Z-3f9a "))
        XCTAssertEqual(try XCTUnwrap(JSON.parse(named.json))["device"]?.string, "cam-2.gym")
        let samples = named.metrics.split(separator: "\n").filter { !$0.hasPrefix("#") }
        XCTAssertEqual(samples.count, snapshot.metrics.split(separator: "\n").filter { !$0.hasPrefix("#") }.count)
        XCTAssertTrue(samples.allSatisfy { $0.contains("{device=\"cam-2.gym\"} ") }, "\(samples)")
        XCTAssertTrue(named.metrics.contains("\nonair_recording{device=\"cam-2.gym\"} 1\n"))
    }

    /// Where to point a browser: the .local name and the addresses, late on the console
    /// line (its first fields keep their places), and in /api/status.
    func testWhereToReachTheBoardIsSaid() throws {
        var reached = snapshot
        reached.device = "cam1"
        reached.reach = .init(localName: "cam1.local", addresses: ["192.168.1.23", "10.0.0.5", "10.1.0.5", "10.2.0.5"])
        let line = reached.consoleLine(fpsActual: 30)
        XCTAssertTrue(line.hasPrefix("onair: recording device=cam1 stream="), line)
        XCTAssertTrue(line.contains(" at=cam1.local,192.168.1.23,10.0.0.5,10.1.0.5 dropped="), "the name and three addresses: \(line)")
        let json = try XCTUnwrap(JSON.parse(reached.json))
        XCTAssertEqual(json["local_name"]?.string, "cam1.local")
        XCTAssertFalse(snapshot.consoleLine(fpsActual: 30).contains(" at="), "nothing known: nothing said")
    }

    /// With a V4L2 camera, what it lost is said: driver gaps, broken buffers, reopens.
    func testTheCamerasLossesAreCounted() throws {
        var camera = snapshot
        (camera.cameraFrames, camera.cameraDriverDropped, camera.cameraReopened, camera.cameraCorrupt) = (900, 4, 1, 27)
        let json = try XCTUnwrap(JSON.parse(camera.json))
        XCTAssertEqual([json["camera_frames"], json["camera_driver_dropped"], json["camera_reopened"], json["camera_corrupt"]].map { $0?.int },
                       [900, 4, 1, 27])
        for sample in ["onair_camera_frames_total 900", "onair_camera_driver_dropped_total 4", "onair_camera_reopened_total 1",
                       "onair_camera_corrupt_total 27"] {
            XCTAssertTrue(camera.metrics.contains("\n\(sample)\n"), sample)
        }
        XCTAssertFalse(snapshot.metrics.contains("onair_camera_"), "without a V4L2 camera: nothing said")
    }

    func testStatusSaysWhetherTheClockIsTrusted() throws {
        let json = try XCTUnwrap(JSON.parse(snapshot.json))
        XCTAssertEqual(json["clock"]?["synchronized"]?.bool, true)
        XCTAssertEqual(json["clock"]?["source"]?.string, "systemd-timesyncd")
        XCTAssertEqual(json["clock"]?["now"]?.string, "2026-12-02T16:42:33.000Z")
        var unsynced = snapshot
        unsynced.clock?.synchronized = false
        XCTAssertTrue(unsynced.consoleLine(fpsActual: 30).contains(" clock=unsynced "))
        XCTAssertTrue(unsynced.metrics.contains("\nonair_clock_synchronized 0\n"))
    }

    func testMetricsInPrometheusTextFormat() {
        let text = snapshot.metrics
        XCTAssertTrue(text.hasPrefix("# HELP onair_up_seconds Seconds since onair started.\n# TYPE onair_up_seconds gauge\nonair_up_seconds 3725.5\n"))
        for line in ["onair_recording 1", "onair_fps_target 30", "onair_frames_in_total 1800", "onair_segments_stored_total 30",
                     "onair_live_bits_per_second 1520000", "onair_dropped_video_frames_total 2", "onair_recordings_bytes 250000000",
                     "onair_publish_pending_segments 3", "onair_clock_synchronized 1", "onair_publish_oldest_pending_seconds 6.2", "onair_publish_failures_total 7"] {
            XCTAssertTrue(text.contains("\n" + line + "\n"), line)
        }
        XCTAssertFalse(text.contains("camera"), "no camera, no camera metrics")
        // Every sample has its HELP and TYPE, and names are onair_*.
        let samples = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        XCTAssertEqual(samples.count * 3, text.split(separator: "\n").count)
        XCTAssertTrue(samples.allSatisfy { $0.hasPrefix("onair_") })
    }
}

/// /status: the page and its plots.
final class StatusPageTests: XCTestCase {
    func testPlotsHoldTheLastTenMinutesScaledToTheirRange() {
        let history = History()
        for i in 0..<130 {
            history.add(.init(seconds: Double(i * 5), fps: i < 100 ? 30 : 24, temperatureC: nil,
                              bitsPerSecond: 1_500_000 + Double(i % 3) * 10_000, queue: i % 4))
        }
        let samples = history.all
        XCTAssertEqual(samples.count, 120, "ten minutes at one sample per 5 s")
        XCTAssertEqual(samples.first?.seconds, 50)
        let svg = StatusPage.svg(samples)
        XCTAssertTrue(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        XCTAssertEqual(svg.components(separatedBy: "<polyline").count - 1, 3, "no line where there is no sensor")
        XCTAssertTrue(svg.contains("frame rate: 24.0 fps"))
        XCTAssertTrue(svg.contains("temperature: no data"))
        XCTAssertTrue(svg.contains("upload queue: 1 segments"))
        let firstLine = svg.components(separatedBy: "points=\"")[1].components(separatedBy: "\"")[0]
        XCTAssertEqual(firstLine.split(separator: " ").count, 120)
        XCTAssertTrue(firstLine.hasPrefix("0.0,"), "the oldest sample at the left edge")
    }

    func testThePageEscapesWhatItShows() {
        let status = StatusSnapshot(state: "armed", stream: nil, uptimeSeconds: 3700, fps: 30, framesIn: 0, segmentsStored: 0,
                                    segmentBytes: 0, liveBitsPerSecond: 0, droppedVideoFrames: 0, droppedAudioChunks: 0,
                                    streamsEnded: 0, recordings: 0, recordingBytes: 0, recordingNowBytes: nil, cameraFrames: nil,
                                    cameraDriverDropped: nil, cameraReopened: nil, lastError: "<script>x</script>", publish: nil)
        let page = StatusPage.html(status)
        XCTAssertTrue(page.contains("<td>&lt;script&gt;x&lt;/script&gt;</td>"))
        XCTAssertTrue(page.contains("<td>1 h 1 min</td>"))
        XCTAssertTrue(page.contains("src=\"/status/plots.svg\""))
        XCTAssertFalse(page.contains("download"), "no stream, nothing to download")
    }

    func testThePageOffersTheStreamBeingRecordedAsOneFile() {
        let page = StatusPage.html(StatusSnapshotTests.sample())
        XCTAssertTrue(page.contains("<a href=\"/api/export?stream=20261202T164233Z-3f9a\">download this stream</a>"), page)
        XCTAssertTrue(page.contains("<a href=\"/api/export?stream=20261202T164233Z-3f9a&amp;last=600\">the last 10 minutes</a>"))
    }
}
