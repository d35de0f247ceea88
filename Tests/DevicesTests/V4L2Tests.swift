@testable import Devices
import Foundation
import Logging
import Media
import System
import TestSupport
import Threading
import XCTest

/// A V4L2 device that keeps the kernel's contract (Documentation/userspace-api/media/v4l):
/// REQBUFS before QUERYBUF/QBUF, QBUF only of a buffer the application holds, DQBUF only
/// while streaming and EAGAIN when nothing is filled, every call ENODEV once unplugged.
/// The test plays the sensor: `deliver` fills the oldest queued buffer.
final class FakeVideoDevice: VideoDevice, Sendable {
    struct Mode: Sendable {
        var formats: [FourCC: (sizes: FrameSizes?, intervals: FrameIntervals?)]
        var capabilities = VideoCapabilities(driver: "fake", card: "Fake Camera",
                                             flags: VideoCapabilities.videoCapture | VideoCapabilities.streaming)
        var grantsFrameInterval = true
        var canExport = true
        var maximumBuffers = 8
    }

    /// What the driver holds, under one condition: the camera's thread and the test's
    /// (the sensor) both change it and wait for each other.
    struct Driver {
        var granted: GrantedFormat?
        var storage: [UnsafeMutableRawBufferPointer] = []
        var queued: [Int] = []
        var filled: [DequeuedBuffer] = []
        var streaming = false
        /// The camera waits for a frame with none filled: it is done with the ones before.
        var idle = false
        var unplugged = false
        var closed = false
        var violations: [String] = []
        var calls: [String] = []

        mutating func enter(_ call: String, _ path: String) throws {
            calls.append(call)
            if closed { violations.append("\(call) after close") }
            if unplugged { throw VideoDeviceError(path: path, operation: call, code: .noDevice) }
        }

        mutating func violation(_ text: String, _ call: String, _ path: String) -> VideoDeviceError {
            violations.append(text)
            return VideoDeviceError(path: path, operation: call, code: .invalid)
        }
    }

    let path: String
    let mode: Mode
    private let driver = Condition(Driver())
    var unplugged: Bool { driver.withLock { $0.unplugged } }
    var closed: Bool { driver.withLock { $0.closed } }
    var violations: [String] { driver.withLock { $0.violations } }
    var calls: [String] { driver.withLock { $0.calls } }

    init(path: String, mode: Mode) {
        self.path = path
        self.mode = mode
    }

    deinit { driver.withLock { for buffer in $0.storage { buffer.deallocate() } } }

    /// A call as the driver takes it: counted, refused once unplugged.
    private func call<T>(_ name: String, _ body: (inout Driver) throws -> T) throws -> T {
        try driver.withLock { (state: inout Driver) throws -> T in
            try state.enter(name, path)
            return try body(&state)
        }
    }

    func capabilities() throws -> VideoCapabilities { try call("QUERYCAP") { _ in mode.capabilities } }
    func formats() throws -> [FourCC] {
        try call("ENUM_FMT") { _ in
            let others = mode.formats.keys.filter { !FormatNegotiation.preference.contains($0) }.sorted { $0.rawValue < $1.rawValue }
            return FormatNegotiation.preference.filter { mode.formats[$0] != nil } + others
        }
    }
    func frameSizes(_ format: FourCC) throws -> FrameSizes? { try call("ENUM_FRAMESIZES") { _ in mode.formats[format]?.sizes } }
    func frameIntervals(_ format: FourCC, size: Size) throws -> FrameIntervals? {
        try call("ENUM_FRAMEINTERVALS") { _ in mode.formats[format]?.intervals }
    }

    func setFormat(_ format: FourCC, size: Size) throws -> GrantedFormat {
        try call("S_FMT") { [path] state in
            if state.streaming || !state.storage.isEmpty { throw VideoDeviceError(path: path, operation: "S_FMT", code: .busy) }
            // Like a driver, the stride is padded to 64 bytes.
            let stride = format == .yuyv || format == .uyvy ? (2 * size.width + 63) / 64 * 64 : (size.width + 63) / 64 * 64
            let image = format == .yuyv || format == .uyvy ? stride * size.height : stride * size.height * 3 / 2
            let granted = GrantedFormat(format: format, width: size.width, height: size.height, bytesPerLine: stride, imageSize: image)
            state.granted = granted
            return granted
        }
    }

    func setFrameInterval(_ interval: Fraction) throws -> Fraction? {
        try call("S_PARM") { _ in mode.grantsFrameInterval ? interval : nil }
    }

    func requestBuffers(_ count: Int) throws -> Int {
        try call("REQBUFS") { [path, mode] state in
            if state.streaming { throw VideoDeviceError(path: path, operation: "REQBUFS", code: .busy) }
            guard let granted = state.granted else { throw state.violation("REQBUFS before S_FMT", "REQBUFS", path) }
            let n = min(count, mode.maximumBuffers)
            for buffer in state.storage { buffer.deallocate() }
            state.storage = (0..<n).map { _ in
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: granted.imageSize, alignment: 64)
                buffer.initializeMemory(as: UInt8.self, repeating: 0)
                return buffer
            }
            state.queued = []
            state.filled = []
            return n
        }
    }

    func mapBuffer(_ index: Int) throws -> UnsafeRawBufferPointer {
        try call("QUERYBUF") { [path] state in
            guard state.storage.indices.contains(index) else {
                throw state.violation("QUERYBUF \(index) of \(state.storage.count)", "QUERYBUF", path)
            }
            return UnsafeRawBufferPointer(state.storage[index])
        }
    }

    func exportBuffer(_ index: Int) throws -> FileDescriptor {
        try call("EXPBUF") { [path, mode] _ in
            guard mode.canExport else { throw VideoDeviceError(path: path, operation: "EXPBUF", code: .notTTY) }
            return try FileDescriptor.open("/dev/null", .readOnly)
        }
    }

    func queueBuffer(_ index: Int) throws {
        try call("QBUF") { [path] state in
            guard state.storage.indices.contains(index) else { throw state.violation("QBUF \(index) of \(state.storage.count)", "QBUF", path) }
            guard !state.queued.contains(index), !state.filled.contains(where: { $0.index == index }) else {
                throw state.violation("QBUF \(index) while the driver owns it", "QBUF", path)
            }
            state.queued.append(index)
        }
        driver.broadcast()
    }

    func dequeueBuffer() throws -> DequeuedBuffer? {
        try call("DQBUF") { [path] state in
            guard state.streaming else { throw state.violation("DQBUF while not streaming", "DQBUF", path) }
            return state.filled.isEmpty ? nil : state.filled.removeFirst()
        }
    }

    func waitForFrame(timeoutMilliseconds: Int) throws -> Bool {
        driver.withLock { $0.idle = true }
        driver.broadcast()
        let deadline = monotonicNanoseconds() + Int64(timeoutMilliseconds) * 1_000_000
        let ready = driver.withLock(until: deadline) { state in state.filled.isEmpty && !state.unplugged ? nil : true } ?? false
        driver.withLock { $0.idle = false }
        return ready  // POLLERR when unplugged
    }

    func streamOn() throws {
        try call("STREAMON") { $0.streaming = true }
        driver.broadcast()
    }
    /// Buffers queued or filled: the ones the driver holds.
    var ownedByDriver: Int { driver.withLock { $0.queued.count + $0.filled.count } }

    func streamOff() throws {
        try call("STREAMOFF") { state in
            state.streaming = false
            state.queued = []
            state.filled = []
        }
    }
    func close() { driver.withLock { $0.closed = true; $0.streaming = false } }

    /// The sensor: fills the oldest queued buffer with `fill` (given the stride and size).
    /// False when the application holds every buffer (the frame is lost, as in a driver).
    @discardableResult
    func deliver(timestamp: Int64?, sequence: UInt32, fill: (UnsafeMutableRawBufferPointer, GrantedFormat) -> Void) -> Bool {
        let delivered = driver.withLock { state -> Bool in
            guard state.streaming, let granted = state.granted, !state.queued.isEmpty else { return false }
            let index = state.queued.removeFirst()
            fill(state.storage[index], granted)
            state.filled.append(DequeuedBuffer(index: index, bytesUsed: granted.imageSize, monotonicTimestamp: timestamp, sequence: sequence))
            return true
        }
        driver.broadcast()
        return delivered
    }

    func unplug() {
        driver.withLock { $0.unplugged = true }
        driver.broadcast()
    }

    /// Delivers a frame as soon as the camera has queued a buffer for it (at most 10 s).
    func deliverWhenQueued(timestamp: Int64?, sequence: UInt32, fill: (UnsafeMutableRawBufferPointer, GrantedFormat) -> Void) -> Bool {
        _ = driver.withLock(until: monotonicNanoseconds() + 10_000_000_000) { $0.streaming && !$0.queued.isEmpty ? true : nil }
        return deliver(timestamp: timestamp, sequence: sequence, fill: fill)
    }

    /// Waits (at most 10 s) until the camera has taken every delivered frame and waits for
    /// the next: what it does with a frame (the sink, a loan) is done by then.
    func waitUntilIdle() {
        _ = driver.withLock(until: monotonicNanoseconds() + 10_000_000_000) { $0.idle && $0.filled.isEmpty ? true : nil }
    }
}

/// Collects frames; `wait(for:)` returns once that many have come.
final class FrameSink: CaptureSink, Sendable {
    private let taken = Condition<[VideoFrame]>([])
    var frames: [VideoFrame] { taken.withLock { $0 } }
    func capture(_ frame: VideoFrame) {
        taken.withLock { $0.append(frame) }
        taken.broadcast()
    }
    func capture(_ chunk: AudioChunk) {}
    func wait(for count: Int, seconds: Double = 10) -> [VideoFrame] {
        let deadline = monotonicNanoseconds() + Int64(seconds * 1e9)
        return taken.withLock(until: deadline, waitingFor: { $0.count >= count ? $0 : nil }) ?? frames
    }
}

final class LogRecorder: Sendable {
    private let entries = Locked<[(String, [String: String])]>([])
    var log: Log {
        .silent { [entries] event, _, fields in
            entries.withLock { $0.append((event.name, Dictionary(fields.map { ($0.0, "\($0.1)") }, uniquingKeysWith: { a, _ in a }))) }
        }
    }
    var events: [String] { entries.withLock { $0.map(\.0) } }
    func fields(_ event: String) -> [String: String]? { entries.withLock { $0.first { $0.0 == event }?.1 } }
}

final class FormatNegotiationTests: XCTestCase {
    let hd = Size(1280, 720)

    func testPlanarFirstWhenEverythingCanDoIt() {
        let formats: [FourCC] = [.mjpeg, .yuyv, .yu12, .nv12]
        let plan = FormatNegotiation.plan(formats: formats, wanted: hd, fps: 30,
                                          sizes: { _ in .discrete([Size(640, 480), Size(1280, 720)]) },
                                          intervals: { _, _ in .discrete([Fraction(1, 30), Fraction(1, 15)]) })
        XCTAssertEqual(plan, .init(format: .nv12, size: hd, interval: Fraction(1, 30)))
    }

    /// A typical USB webcam: raw YUYV manages 720p only at 10 fps, MJPEG at 30.
    func testTheRateMattersMoreThanTheFormat() {
        let plan = FormatNegotiation.plan(formats: [.yuyv, .mjpeg], wanted: hd, fps: 30,
                                          sizes: { _ in .discrete([Size(640, 480), Size(1280, 720)]) },
                                          intervals: { format, _ in format == .yuyv ? .discrete([Fraction(1, 10)]) : .discrete([Fraction(1, 30)]) })
        XCTAssertEqual(plan?.format, .mjpeg)
        XCTAssertEqual(plan?.interval, Fraction(1, 30))
    }

    func testNearestSizeAndRate() {
        let sizes: FrameSizes = .discrete([Size(640, 480), Size(1280, 960), Size(1920, 1080)])
        let plan = FormatNegotiation.plan(formats: [.yuyv], wanted: hd, fps: 25, sizes: { _ in sizes },
                                          intervals: { _, _ in .discrete([Fraction(1, 60), Fraction(1, 30), Fraction(1, 15)]) })
        XCTAssertEqual(plan?.size, Size(1280, 960), "the nearest area")
        XCTAssertEqual(plan?.interval, Fraction(1, 30), "the slowest rate that is not slower than asked")
        let slow = FormatNegotiation.plan(formats: [.yuyv], wanted: hd, fps: 60, sizes: { _ in sizes },
                                          intervals: { _, _ in .discrete([Fraction(1, 30), Fraction(1, 15)]) })
        XCTAssertEqual(slow?.interval, Fraction(1, 30), "else the fastest")
    }

    func testStepwiseSizesAndIntervals() {
        let plan = FormatNegotiation.plan(formats: [.yu12], wanted: Size(1281, 721), fps: 30,
                                          sizes: { _ in .stepwise(min: Size(16, 16), max: Size(1920, 1080), step: Size(16, 8)) },
                                          intervals: { _, _ in .stepwise(min: Fraction(1, 60), max: Fraction(1, 1)) })
        XCTAssertEqual(plan?.size, Size(1280, 720))
        XCTAssertEqual(plan?.interval, Fraction(1, 30))
        let unlisted = FormatNegotiation.plan(formats: [.yu12], wanted: hd, fps: 30, sizes: { _ in nil }, intervals: { _, _ in nil })
        XCTAssertEqual(unlisted, .init(format: .yu12, size: hd, interval: nil), "S_FMT will adjust")
    }

    func testNothingUsable() {
        XCTAssertNil(FormatNegotiation.plan(formats: [FourCC("RGB3"), FourCC("GREY")], wanted: hd, fps: 30,
                                            sizes: { _ in nil }, intervals: { _, _ in nil }))
    }
}

final class PixelConversionTests: XCTestCase {
    func testYUYVWithPaddedStride() {
        // 4×2 pixels, stride 12: Y0 U Y1 V per pixel pair; the two rows' chroma averaged.
        let row0: [UInt8] = [10, 100, 11, 200, 12, 101, 13, 201, 0xEE, 0xEE, 0xEE, 0xEE]
        let row1: [UInt8] = [20, 110, 21, 210, 22, 111, 23, 211, 0xEE, 0xEE, 0xEE, 0xEE]
        var planes = [UInt8](repeating: 0, count: 12)
        XCTAssertTrue((row0 + row1).withUnsafeBytes {
            PixelConversion.toI420($0, format: .yuyv, width: 4, height: 2, stride: 12, into: &planes)
        })
        XCTAssertEqual(planes, [10, 11, 12, 13, 20, 21, 22, 23, 105, 106, 205, 206])
    }

    func testUYVY() {
        let rows: [UInt8] = [100, 10, 200, 11, 102, 20, 202, 21]
        var planes = [UInt8](repeating: 0, count: 6)
        XCTAssertTrue(rows.withUnsafeBytes { PixelConversion.toI420($0, format: .uyvy, width: 2, height: 2, stride: 4, into: &planes) })
        XCTAssertEqual(planes, [10, 11, 20, 21, 101, 201])
    }

    func testNV12AndYU12() {
        // 2×2 pictures with stride 4 (two bytes of padding per line).
        let nv12: [UInt8] = [1, 2, 0, 0, 3, 4, 0, 0, 50, 60, 0, 0]
        var planes = [UInt8](repeating: 0, count: 6)
        XCTAssertTrue(nv12.withUnsafeBytes { PixelConversion.toI420($0, format: .nv12, width: 2, height: 2, stride: 4, into: &planes) })
        XCTAssertEqual(planes, [1, 2, 3, 4, 50, 60])
        let yu12: [UInt8] = [1, 2, 0, 0, 3, 4, 0, 0, 50, 0, 60, 0]
        XCTAssertTrue(yu12.withUnsafeBytes { PixelConversion.toI420($0, format: .yu12, width: 2, height: 2, stride: 4, into: &planes) })
        XCTAssertEqual(planes, [1, 2, 3, 4, 50, 60])
        XCTAssertFalse(yu12.prefix(6).withUnsafeBytes { PixelConversion.toI420($0, format: .yu12, width: 2, height: 2, stride: 4, into: &planes) },
                       "a short buffer is refused, not read past")
    }
}

final class V4L2CameraTests: XCTestCase {
    let camera = FakeVideoDevice.Mode(formats: [.yuyv: (.discrete([Size(64, 48), Size(320, 240)]), .discrete([Fraction(1, 30)])),
                                                .mjpeg: (.discrete([Size(320, 240)]), .discrete([Fraction(1, 30)]))])

    /// A YUYV picture whose luma is `value` everywhere.
    static func flat(_ value: UInt8) -> (UnsafeMutableRawBufferPointer, GrantedFormat) -> Void {
        { buffer, format in
            for row in 0..<format.height {
                for x in 0..<format.width {
                    buffer[row * format.bytesPerLine + 2 * x] = value
                    buffer[row * format.bytesPerLine + 2 * x + 1] = 128
                }
            }
        }
    }

    func testAutoSkipsCodecAndMetadataNodesAndNegotiates() throws {
        var m2m = camera
        m2m.capabilities.flags = VideoCapabilities.videoM2M | VideoCapabilities.streaming
        var meta = camera
        meta.capabilities.flags = VideoCapabilities.metaCapture | VideoCapabilities.streaming
        let devices = ["/dev/video0": m2m, "/dev/video1": meta, "/dev/video2": camera]
        var made: [FakeVideoDevice] = []
        let logs = LogRecorder()
        let v4l2 = V4L2Camera(.init(device: nil, size: Size(320, 240), fps: 30),
                              openDevice: { path in
                                  let device = FakeVideoDevice(path: path, mode: devices[path]!)
                                  made.append(device)
                                  return device
                              },
                              listDevices: { devices.keys.sorted() }, log: logs.log)
        let opened = try v4l2.open()
        XCTAssertEqual(opened.path, "/dev/video2")
        XCTAssertEqual(opened.plan.format, .yuyv, "raw beats MJPEG at the same size and rate")
        XCTAssertEqual(opened.granted.width, 320)
        XCTAssertEqual(opened.granted.bytesPerLine, 640)
        XCTAssertEqual(opened.fps, 30)
        XCTAssertEqual(opened.buffers, 4)
        XCTAssertEqual(opened.dmabufs, 4)
        XCTAssertTrue(made[0].closed && made[1].closed, "the nodes that are not cameras are closed again")
        XCTAssertEqual(made[2].calls.filter { $0 == "QBUF" }.count, 4, "every buffer queued before STREAMON")
        v4l2.stop()
        XCTAssertTrue(made[2].closed)
        XCTAssertEqual(made[2].violations, [])
    }

    /// A webcam that sends JPEGs the decoder cannot read (truncated, corrupt): each is
    /// skipped and counted, said at most twice a minute, and the pictures after it come.
    func testUnreadableJPEGsAreSkippedCountedAndSaid() throws {
        let mjpegOnly = FakeVideoDevice.Mode(formats: [.mjpeg: (.discrete([Size(64, 48)]), .discrete([Fraction(1, 30)]))])
        var device: FakeVideoDevice?
        let logs = LogRecorder()
        let v4l2 = V4L2Camera(.init(device: "/dev/video0", size: Size(64, 48), fps: 30),
                              decoder: { jpeg, size in
                                  // The test's "JPEG": a good one starts with SOI, a bad one does not.
                                  guard jpeg.first == 0xFF else { throw CameraError.noDecoder(path: "corrupt") }
                                  return [UInt8](repeating: 16, count: VideoFrame.byteCount(width: size.width, height: size.height))
                              },
                              openDevice: { path in
                                  let made = FakeVideoDevice(path: path, mode: mjpegOnly)
                                  device = made
                                  return made
                              }, log: logs.log)
        _ = try v4l2.open()
        let sink = FrameSink()
        v4l2.start(into: sink)
        let fake = try XCTUnwrap(device)
        for (n, good) in [true, false, false, false, true].enumerated() {
            XCTAssertTrue(fake.deliverWhenQueued(timestamp: 1_000_000_000 + Int64(n) * 33_333_333, sequence: UInt32(n)) { buffer, _ in
                buffer[0] = good ? 0xFF : 0x00
            })
            fake.waitUntilIdle()
        }
        XCTAssertEqual(sink.wait(for: 2).count, 2, "the good pictures came, the bad ones did not")
        v4l2.stop()
        XCTAssertEqual(v4l2.statistics.corruptBuffers, 3)
        XCTAssertEqual(logs.events.filter { $0 == "camera.corrupt" }.count, 2, "at most two lines a minute")
        XCTAssertEqual(logs.fields("camera.corrupt")?["reason"], "a JPEG the decoder cannot read (truncated or corrupt)")
    }

    func testANamedDeviceThatIsNotACameraIsOneClearError() {
        var m2m = camera
        m2m.capabilities = VideoCapabilities(driver: "bcm2835-codec", card: "bcm2835-codec-encode",
                                             flags: VideoCapabilities.videoM2M | VideoCapabilities.streaming)
        let v4l2 = V4L2Camera(.init(device: "/dev/video11", size: Size(320, 240), fps: 30),
                              openDevice: { FakeVideoDevice(path: $0, mode: m2m) }, log: .silent())
        XCTAssertThrowsError(try v4l2.open()) { error in
            XCTAssertEqual("\(error)", "/dev/video11 (bcm2835-codec-encode, bcm2835-codec) is not a video capture device with streaming I/O")
            XCTAssertEqual(error as? CameraError, .notACamera(path: "/dev/video11", card: "bcm2835-codec-encode", driver: "bcm2835-codec"))
        }
        let none = V4L2Camera(.init(device: nil, size: Size(320, 240), fps: 30), listDevices: { [] }, log: .silent())
        XCTAssertThrowsError(try none.open()) {
            XCTAssertEqual("\($0)", "no V4L2 device under /dev")
            XCTAssertEqual($0 as? CameraError, .noCamera(seen: []))
        }
        // A camera with none of the formats onair reads says which it has.
        var odd = camera
        odd.formats = [FourCC("RGB3"): (sizes: nil, intervals: nil)]
        let rgb = V4L2Camera(.init(device: "/dev/video0", size: Size(320, 240), fps: 30),
                             openDevice: { FakeVideoDevice(path: $0, mode: odd) }, log: .silent())
        XCTAssertThrowsError(try rgb.open()) {
            XCTAssertEqual($0 as? CameraError, .noUsableFormat(path: "/dev/video0", offered: [FourCC("RGB3")]))
        }
    }

    /// Frames carry the driver's timestamps and come out as I420; buffers go back to the
    /// driver; dropped sequence numbers and bad timestamps are counted and mended.
    func testStreamingTimestampsAndSequenceGaps() throws {
        var device: FakeVideoDevice?
        let logs = LogRecorder()
        let v4l2 = V4L2Camera(.init(device: "/dev/video0", size: Size(64, 48), fps: 30),
                              openDevice: { path in
                                  let made = FakeVideoDevice(path: path, mode: self.camera)
                                  device = made
                                  return made
                              }, log: logs.log)
        try v4l2.open()
        let sink = FrameSink()
        v4l2.start(into: sink)
        let fake = try XCTUnwrap(device)
        let base: Int64 = 7_000_000_000
        let stamps: [(Int64?, UInt32)] = [(base, 0), (base + 33_333_333, 1), (base + 100_000_000, 4), // 2 dropped by the driver
                                          (base + 90_000_000, 5),                                       // backwards
                                          (base + 166_666_666, 6),
                                          // a driver that restarts its count high is no loss, nor a trap;
                                          // its wrap past 2^32 is one frame lost (0)
                                          (base + 200_000_000, UInt32.max - 1), (base + 233_333_333, UInt32.max),
                                          (base + 300_000_000, 1)]
        for (n, (stamp, sequence)) in stamps.enumerated() {
            XCTAssertTrue(fake.deliverWhenQueued(timestamp: stamp, sequence: sequence, fill: Self.flat(UInt8(16 + n))))
            _ = sink.wait(for: n + 1)
        }
        let frames = sink.wait(for: stamps.count)
        v4l2.stop()
        XCTAssertEqual(frames.map(\.index), (0..<stamps.count).map(Int64.init))
        XCTAssertEqual(frames.map(\.captureTime)[0...2], [base, base + 33_333_333, base + 100_000_000])
        XCTAssertGreaterThan(frames[3].captureTime, frames[2].captureTime, "a backwards timestamp is replaced")
        XCTAssertEqual(frames[4].captureTime, base + 166_666_666)
        XCTAssertEqual(frames.map { $0.planes[0] }, (0..<stamps.count).map { UInt8(16 + $0) }, "luma from the YUYV buffer")
        XCTAssertEqual(frames[0].planes.count, 64 * 48 * 3 / 2)
        let stats = v4l2.statistics
        XCTAssertEqual(stats.driverDropped, 3, "2 in a gap, 1 at the wrap")
        XCTAssertEqual(stats.timestampsReplaced, 1)
        XCTAssertEqual(stats.copiesPerFrame, 1.0, "one copy per frame: buffer → I420")
        XCTAssertEqual(logs.events.filter { $0 == "camera.timestamps" }.count, 1, "said once")
        XCTAssertEqual(fake.violations, [])
    }

    /// Unplugged mid-stream: said once, reopened with backoff when the device is back,
    /// and the first frame after is marked as a discontinuity. A camera that comes back
    /// offering another format is said once and not taken until it is as it was.
    func testUnplugThenReplugReopensAndMarksTheDiscontinuity() throws {
        struct Devices {
            var current: FakeVideoDevice?
            var present = true
            var different = false
            var opens = 0
        }
        let devices = Locked(Devices())
        let logs = LogRecorder()
        let mode = camera
        let other = FakeVideoDevice.Mode(formats: [.yuyv: (.discrete([Size(320, 240)]), .discrete([Fraction(1, 30)]))])
        let clock = SteppedClock()
        let v4l2 = V4L2Camera(.init(device: "/dev/video0", size: Size(64, 48), fps: 30), clock: clock,
                              openDevice: { path in
                                  try devices.withLock { (devices: inout Devices) throws -> FakeVideoDevice in
                                      devices.opens += 1
                                      guard devices.present else { throw VideoDeviceError(path: path, operation: "open", code: .noEntry) }
                                      if devices.different { return FakeVideoDevice(path: path, mode: other) }
                                      let made = FakeVideoDevice(path: path, mode: mode)
                                      devices.current = made
                                      return made
                                  }
                              }, log: logs.log)
        try v4l2.open()
        let sink = FrameSink()
        v4l2.start(into: sink)
        let first = try XCTUnwrap(devices.withLock { $0.current })
        first.deliver(timestamp: 1_000_000_000, sequence: 0, fill: Self.flat(50))
        _ = sink.wait(for: 1)
        devices.withLock { $0.present = false }
        first.unplug()
        // While it is away, reopening fails for a while (with backoff, not a busy loop):
        // 0.8 s of the camera's clock, a step at a time.
        for _ in 0..<16 {
            XCTAssertTrue(clock.waitForSleep(), "the camera waits between attempts")
            clock.advance(by: 50_000_000)
        }
        let attemptsWhileAway = devices.withLock { $0.opens }
        XCTAssertLessThan(attemptsWhileAway, 6, "backoff between attempts")
        XCTAssertGreaterThan(attemptsWhileAway, 1, "it did try again")
        // Back as another camera (320x240 only): said once, not taken, tried again.
        devices.withLock { $0.present = true; $0.different = true }
        let tries = devices.withLock { $0.opens }
        for _ in 0..<400 where devices.withLock({ $0.opens }) < tries + 3 {
            clock.waitForSleep(seconds: 1)
            clock.advance(by: 50_000_000)
        }
        XCTAssertEqual(logs.events.filter { $0 == "camera.came_back_different" }.count, 1, "said once: \(logs.events)")
        XCTAssertTrue(logs.fields("camera.came_back_different")?["problem"]?.contains("320x240") == true)
        devices.withLock { $0.different = false }
        var second: FakeVideoDevice?
        for _ in 0..<200 {
            second = devices.withLock { $0.current !== first ? $0.current : nil }
            if second != nil { break }
            // Asleep again (not back yet), or (after a second) opened: either way, on.
            clock.waitForSleep(seconds: 1)
            clock.advance(by: 50_000_000)
        }
        let back = try XCTUnwrap(second, "reopened")
        XCTAssertTrue(back.deliverWhenQueued(timestamp: 9_000_000_000, sequence: 0, fill: Self.flat(60)))
        back.deliver(timestamp: 9_033_333_333, sequence: 1, fill: Self.flat(61))
        let frames = sink.wait(for: 3)
        v4l2.stop()
        XCTAssertEqual(frames.map(\.discontinuity), [false, true, false])
        XCTAssertEqual(frames.map { $0.planes[0] }, [50, 60, 61])
        XCTAssertEqual(logs.events.filter { $0 == "camera.lost" }.count, 1, "said once")
        XCTAssertEqual(logs.fields("camera.lost")?["device_gone"], "true")
        XCTAssertEqual(logs.events.filter { $0 == "camera.reopened" }.count, 1)
        XCTAssertEqual(v4l2.statistics.reopened, 1)
        XCTAssertEqual(first.violations, [])
        XCTAssertEqual(back.violations, [])
    }

    /// Zero copy: buffers are lent (as DMABUFs) after their picture was copied for the
    /// pipeline, never so many that the driver holds fewer than two, and go back to the
    /// driver only when the consumer gives them back (a loan from before a stop is ignored).
    func testBuffersAreLentAndComeBackOnlyWhenReleased() throws {
        final class Keeper: SharedBufferConsumer, Sendable {
            let state = Locked((kept: [SharedBuffer](), accept: true))
            var kept: [SharedBuffer] { state.withLock { $0.kept } }
            func setAccepting(_ accept: Bool) { state.withLock { $0.accept = accept } }
            func offer(_ buffer: SharedBuffer) -> Bool {
                state.withLock { state in
                    if state.accept { state.kept.append(buffer) }
                    return state.accept
                }
            }
        }
        var device: FakeVideoDevice?
        let v4l2 = V4L2Camera(.init(device: "/dev/video0", size: Size(64, 48), fps: 30),
                              openDevice: { path in
                                  let made = FakeVideoDevice(path: path, mode: self.camera)
                                  device = made
                                  return made
                              }, log: .silent())
        let opened = try v4l2.open()
        XCTAssertEqual(opened.buffers, 4)
        XCTAssertTrue(v4l2.sharesBuffers)
        let keeper = Keeper()
        v4l2.share(with: keeper)
        let sink = FrameSink()
        v4l2.start(into: sink)
        let fake = try XCTUnwrap(device)
        func deliver(_ n: Int) {
            XCTAssertTrue(fake.deliverWhenQueued(timestamp: 1_000_000_000 + Int64(n) * 33_333_333, sequence: UInt32(n), fill: Self.flat(UInt8(16 + n))))
            _ = sink.wait(for: n + 1)
            fake.waitUntilIdle()  // the offer follows the frame
        }
        for n in 0..<3 { deliver(n) }
        XCTAssertEqual(keeper.kept.map(\.frameIndex), [0, 1], "the third stays with the driver: two lent of four")
        XCTAssertEqual(fake.ownedByDriver, 2)
        let first = keeper.kept[0]
        XCTAssertEqual(first.format.format, .yuyv)
        XCTAssertGreaterThanOrEqual(first.fd.rawValue, 0)
        v4l2.release(first)
        XCTAssertEqual(fake.ownedByDriver, 3, "back to the driver")
        v4l2.release(first)
        XCTAssertEqual(fake.ownedByDriver, 3, "a second release of the same loan does nothing")
        keeper.setAccepting(false)
        deliver(3)
        XCTAssertEqual(fake.ownedByDriver, 3, "refused: queued again at once")
        keeper.setAccepting(true)
        deliver(4)
        XCTAssertEqual(keeper.kept.map(\.frameIndex), [0, 1, 4])
        let late = keeper.kept[1]
        v4l2.stop()
        v4l2.release(late)
        XCTAssertEqual(sink.wait(for: 5).count, 5, "every frame still reached the pipeline")
        XCTAssertEqual(v4l2.statistics.copiesPerFrame, 1.0)
        XCTAssertEqual(fake.violations, [], "no buffer queued twice, nothing after close")
    }
}
