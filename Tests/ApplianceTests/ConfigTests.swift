import Foundation
import XCTest
@testable import Appliance
import Devices
import Publishing
import HLS
import Codecs
import Spool
import Streaming
import System

final class ConfigTests: XCTestCase {
    func settings(_ text: String) throws -> Settings {
        var s = Settings()
        try ConfigFile.apply(try ConfigFile.parse(text, file: "onair.conf"), to: &s)
        return s
    }

    func testSectionsCommentsAndDottedKeys() throws {
        let s = try settings("""
            # onair.conf
            [video]
            quality = high
            fps = 25   # smooth enough
            rotation = 90
            encoder = x264
            ; audio
            [audio]
            enabled = off
            [hls]
            segment_seconds = 1.5
            """)
        XCTAssertEqual(s.quality, .high)
        XCTAssertEqual(s.fps, 25)
        XCTAssertEqual(s.rotation, .quarter)
        XCTAssertEqual(s.encoder, .x264)
        XCTAssertFalse(s.audioEnabled)
        XCTAssertEqual(s.segmentMilliseconds, 1500)
        XCTAssertEqual([s.encodedSize.width, s.encodedSize.height], [720, 1280], "rotated")
    }

    func testErrorsNameFileLineAndKey() {
        XCTAssertThrowsError(try settings("[video]\nfsp = 30\n")) {
            XCTAssertEqual("\($0)", "onair.conf:2: unknown key 'video.fsp'")
        }
        XCTAssertThrowsError(try settings("\n\n[video]\nfps = fast\n")) {
            XCTAssertEqual("\($0)", "onair.conf:4: video.fps: expected an integer in 1…240, got 'fast'")
        }
        XCTAssertThrowsError(try settings("[video\n")) { XCTAssertTrue("\($0)".hasPrefix("onair.conf:1:")) }
        XCTAssertThrowsError(try settings("video.fps\n")) { XCTAssertTrue("\($0)".hasPrefix("onair.conf:1:")) }
        XCTAssertThrowsError(try settings("video.width = 641\n")) { XCTAssertTrue("\($0)".contains("even")) }
        XCTAssertThrowsError(try settings("audio.sample_rate = 47000\n"))
    }

    /// `auto` and `off` are decided when the file is read: nothing later compares strings.
    func testDeviceSettingsBecomeChoicesAtParseTime() throws {
        let defaults = Settings()
        XCTAssertEqual([defaults.videoDevice, defaults.audioDevice], [.auto, .auto])
        XCTAssertEqual([defaults.consoleDevice, defaults.previewDevice, defaults.button.input, defaults.thermal.sensor], [.auto, .auto, .auto, .auto])
        let set = try settings("""
            [video]
            device = /dev/video2
            [audio]
            device = hw:1,0
            [console]
            device = off
            [preview]
            device = /dev/dri/card1
            [button]
            input = off
            [thermal]
            sensor = /sys/class/thermal/thermal_zone3/temp
            """)
        XCTAssertEqual(set.videoDevice, .named("/dev/video2"))
        XCTAssertEqual(set.audioDevice.name, "hw:1,0")
        XCTAssertNil(set.consoleDevice)
        XCTAssertEqual(set.previewDevice, .named("/dev/dri/card1"))
        XCTAssertNil(set.button.input)
        XCTAssertEqual(set.thermal.sensor?.name, "/sys/class/thermal/thermal_zone3/temp")
        XCTAssertEqual(try settings("[thermal]\nsensor = off").thermal.sensor, nil)
        XCTAssertEqual(DeviceChoice.auto.name, nil)
    }

    /// RTSP's port (any, off), its limits (auto: five per core, at least ten), and a port
    /// out of range named by its key.
    func testRTSPKeys() throws {
        XCTAssertEqual(Settings().rtspPort, 8554)
        XCTAssertEqual(Settings().rtspClients, max(10, 5 * ThisProcess.processorCount))
        let s = try settings("[rtsp]\nport = 0\nmax_clients = 3\nmax_clients_per_address = 2\n")
        XCTAssertEqual(s.rtspPort, 0)
        XCTAssertEqual(s.rtspClients, 3)
        XCTAssertEqual(s.rtspClientsPerAddress, 2)
        XCTAssertNil(try settings("rtsp.port = off\n").rtspPort)
        XCTAssertThrowsError(try settings("rtsp.port = 70000\n")) { XCTAssertEqual("\($0)", "onair.conf:1: rtsp.port: expected an integer in 0…65535, got '70000'") }
        XCTAssertThrowsError(try settings("rtsp.max_clients = 0\n")) { XCTAssertTrue("\($0)".hasPrefix("onair.conf:1: rtsp.max_clients:"), "\($0)") }
    }

    func testMinimumFreeForms() throws {
        XCTAssertEqual(try ConfigFile.minimumFree("auto"), .automatic)
        XCTAssertEqual(try ConfigFile.minimumFree("15%"), .percent(15))
        XCTAssertEqual(try ConfigFile.minimumFree("2G"), .bytes(2 << 30))
        XCTAssertEqual(try ConfigFile.minimumFree("500m"), .bytes(500 << 20))
        XCTAssertEqual(try ConfigFile.minimumFree("4096"), .bytes(4096))
        for bad in ["", "95%", "-1G", "lots", "1.5G"] { XCTAssertThrowsError(try ConfigFile.minimumFree(bad), bad) }
    }

    func testBitrateForms() throws {
        for text in ["1500000", "1500k", "1.5M", "1500K"] { XCTAssertEqual(try ConfigFile.bitrate(text), 1_500_000, text) }
        XCTAssertEqual(try ConfigFile.bitrate("900k"), 900_000)
        for bad in ["", "1.5", "abc", "1.5G", "-1M", "1e6", "1.0000005M"] { XCTAssertThrowsError(try ConfigFile.bitrate(bad), bad) }
    }

    /// video.ladder: `auto` adds the next preset below the configured picture, in its
    /// shape; explicit rungs are ordered by bit rate, the top one the live picture.
    func testLadderForms() throws {
        XCTAssertEqual(try settings("video.ladder = off").lowerRungs, [])
        XCTAssertEqual(try settings("video.ladder = auto").lowerRungs, [Rung(width: 854, height: 480, bitrate: 900_000)])
        XCTAssertEqual(try settings("video.ladder = auto\nvideo.quality = low").lowerRungs, [Rung(width: 640, height: 360, bitrate: 400_000)])
        XCTAssertEqual(try settings("video.ladder = auto\nvideo.width = 640\nvideo.height = 480\nvideo.bitrate = 1M").lowerRungs,
                       [Rung(width: 480, height: 360, bitrate: 400_000)], "a 4:3 picture keeps 4:3")
        XCTAssertEqual(try settings("video.ladder = auto\nvideo.width = 416\nvideo.height = 234\nvideo.bitrate = 145k").lowerRungs, [],
                       "nothing below the smallest preset")
        let explicit = try settings("video.ladder = 854x480@900k, 1920x1080@6M ,1280x720@2.5M")
        XCTAssertEqual([explicit.liveSize.width, explicit.liveSize.height, explicit.videoBitrate], [1920, 1080, 6_000_000])
        XCTAssertEqual(explicit.lowerRungs.map(\.description), ["1280x720@2.5M", "854x480@900k"])
        XCTAssertNil(explicit.ladderProblem)
        var rotated = try settings("video.ladder = auto\nvideo.rotation = 90")
        rotated.ladder = .auto
        XCTAssertEqual(rotated.liveProfile.lowerRungs, [Rung(width: 480, height: 854, bitrate: 900_000)], "rungs are turned with the picture")
        XCTAssertEqual(rotated.liveProfile.rungSettings.map { [$0.width, $0.height, $0.bitrate, $0.keyframeInterval] },
                       [[720, 1280, 1_500_000, 60], [480, 854, 900_000, 60]], "the same IDR interval in every rung")
        XCTAssertThrowsError(try settings("video.ladder = 1280x720")) { error in
            XCTAssertEqual("\(error)", "onair.conf:1: video.ladder: expected off, auto or rungs like 1280x720@2.5M,854x480@900k, got '1280x720'")
        }
    }

    func testQualityPresetsAndDerivedTiming() throws {
        XCTAssertEqual(try settings("video.quality = low").captureWidth, 854)
        let medium = Settings()
        XCTAssertEqual([medium.captureWidth, medium.captureHeight, medium.videoBitrate], [1280, 720, 1_500_000])
        XCTAssertEqual(medium.liveProfile.keyframeInterval, 60)
        XCTAssertEqual(medium.liveProfile.output.video.keyframeInterval, 60, "the encoder's IDR interval is the segment")
        XCTAssertEqual(medium.liveProfile.segmentTicks, 180_000)
        XCTAssertEqual(medium.liveProfile.targetDuration, 2)
        XCTAssertEqual(medium.recordingProfile.output.video.keyframeInterval, 60, "the recording: an IDR every 2 s")
        let odd = try settings("video.fps = 25\nhls.segment_seconds = 1.5\nvideo.bitrate = 3M\nrecord.enabled = off\naudio.enabled = off")
        XCTAssertEqual(odd.liveProfile.keyframeInterval, 38, "1.5 s at 25 fps rounds to whole frames")
        XCTAssertEqual(odd.liveProfile.targetDuration, 2)
        XCTAssertEqual(odd.liveProfile.output.video.bitrate, 3_000_000)
        XCTAssertEqual(odd.liveProfile.at(fps: 15).keyframeInterval, 23, "a lowered rate keeps the segment length")
        XCTAssertNil(odd.sessionProfile.recording)
        XCTAssertNil(odd.sessionProfile.live.output.audio)
    }

    /// Low-latency parts: whole frames at the stream's rate; 0 turns them off; a value
    /// that is no length of part is one line naming the key.
    func testDeviceName() throws {
        XCTAssertNil(Settings().deviceName, "auto until a run resolves it")
        XCTAssertEqual(try settings("device.name = cam-2.gym_A").deviceName, "cam-2.gym_A")
        XCTAssertNil(try settings("device.name = auto").deviceName)
        XCTAssertEqual(try settings("device.name = cam1").sessionProfile.device, "cam1")
        for bad in ["a/b", "two words", "\"\"", ".hidden", "-x", "..", "caf\u{e9}", String(repeating: "x", count: 64)] {
            XCTAssertThrowsError(try settings("device.name = \(bad)"), bad) {
                XCTAssertTrue("\($0)".contains("device.name: expected 1 to 63 letters"), "\($0)")
            }
        }
        XCTAssertNoThrow(try settings("device.name = " + String(repeating: "x", count: 63)))
    }

    /// device.name = auto: the hostname, or for a generic one (every board of an image is
    /// called onair) a name from the machine id, kept in the data directory so it survives
    /// the transient machine id a read-only root gets at every boot.
    func testAutomaticDeviceName() throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("onair-device-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: data) }
        XCTAssertEqual(DeviceName.automatic(hostname: "gym-camera", dataDirectory: data, machineID: { nil }), "gym-camera")
        XCTAssertFalse(FileManager.default.fileExists(atPath: data + "/device-id"), "nothing kept for a hostname")
        XCTAssertEqual(DeviceName.automatic(hostname: "onair", dataDirectory: data, machineID: { "3f9a2c77d1e84b0c9a1b2c3d4e5f6a7b\n" }), "onair-3f9a2c")
        XCTAssertEqual(DeviceName.automatic(hostname: "localhost", dataDirectory: data, machineID: { "0123456789abcdef0123456789abcdef" }),
                       "onair-3f9a2c", "the first boot's machine id, kept")
        XCTAssertEqual(DeviceName.automatic(hostname: "bad host", dataDirectory: data, machineID: { nil }), "onair-3f9a2c")
        let other = data + "/other"
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        let random = DeviceName.automatic(hostname: nil, dataDirectory: other, machineID: { "uninitialized" })
        XCTAssertTrue(random.hasPrefix("onair-") && random.count == 12, random)
        XCTAssertEqual(DeviceName.automatic(hostname: nil, dataDirectory: other, machineID: { nil }), random)
    }

    func testPartSeconds() throws {
        XCTAssertEqual(Settings().liveProfile.partTiming?.ticks, 18_750, "6 frames at 30 fps, raised to fit 5 at 24 fps on the ladder")
        XCTAssertEqual(try settings("thermal.sensor = off").liveProfile.partTiming?.ticks, 18_000, "6 frames at 30 fps, no ladder")
        XCTAssertEqual(try settings("video.fps = 25\nthermal.fps_steps = 25,20,15,10").liveProfile.partTiming?.ticks, 18_000,
                       "5 frames at 25 fps, also right at 20, 15, 10")
        XCTAssertEqual(try settings("hls.part_seconds = 0.333").liveProfile.partTiming?.ticks, 30_000, "10 frames at 30 fps")
        XCTAssertEqual(try settings("hls.part_seconds = 0.5").liveProfile.at(fps: 24).partTiming?.ticks, 45_000, "12 frames at 24 fps")
        XCTAssertNil(try settings("hls.part_seconds = 0").liveProfile.partTiming)
        for bad in ["0.05", "3", "-1", "fast", "0.3333333"] {
            XCTAssertThrowsError(try settings("hls.part_seconds = \(bad)"), bad) {
                XCTAssertTrue("\($0)".contains("hls.part_seconds"), "\($0)")
            }
        }
    }
}

/// Every board's defaults (board/*/onair.conf, installed in its image) are valid settings.
final class BoardConfigTests: XCTestCase {
    func testEveryBoardsDefaultsParse() throws {
        let boards = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../board").standardized
        let names = try FileManager.default.contentsOfDirectory(atPath: boards.path).filter { !$0.hasSuffix(".md") }.sorted()
        XCTAssertEqual(names, ["qemu-x86_64", "rpi4", "rpi5", "x86-vaapi"])
        for name in names {
            let path = boards.appendingPathComponent(name).appendingPathComponent("onair.conf").path
            var settings = Settings()
            XCTAssertNoThrow(try ConfigFile.apply(try ConfigFile.parse(try String(contentsOfFile: path, encoding: .utf8), file: path), to: &settings),
                             name)
        }
        var qemu = Settings()
        let path = boards.appendingPathComponent("qemu-x86_64/onair.conf").path
        try ConfigFile.apply(try ConfigFile.parse(try String(contentsOfFile: path, encoding: .utf8), file: path), to: &qemu)
        XCTAssertEqual(qemu.softwarePreset, "ultrafast")
        XCTAssertEqual(qemu.button.keys, [57], "KEY_SPACE")
        try ConfigFile.apply(try ConfigFile.parse("[preview]\nmode = 640x480\n", file: "x.conf"), to: &qemu)
        XCTAssertEqual(qemu.previewMode, DRMDisplay.Mode(width: 640, height: 480, refresh: 0))
        XCTAssertThrowsError(try ConfigFile.apply(try ConfigFile.parse("[preview]\nmode = big\n", file: "x.conf"), to: &qemu)) {
            XCTAssertEqual("\($0)", "x.conf:2: preview.mode: expected auto, WIDTHxHEIGHT or WIDTHxHEIGHT@HZ such as 1920x1080@60, got 'big'")
        }
    }
}
