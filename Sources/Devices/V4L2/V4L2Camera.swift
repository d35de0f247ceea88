import Logging
import Media
import System
import Threading

/// A V4L2 camera: finds the device, negotiates the format, streams from memory-mapped
/// buffers on a thread of its own and hands I420 frames to the sink, stamped with the
/// driver's CLOCK_MONOTONIC capture time. When the device goes away (unplugged, ENODEV,
/// EIO, or silent for `stallMilliseconds`) it says so once, keeps trying to reopen it with
/// backoff, and marks the first frame after its return as a discontinuity.
public final class V4L2Camera: @unchecked Sendable {  // `openDevice`, `listDevices`, `decoder`: called in open() and on the capture thread only
    /// MJPEG → I420 at the given size (libavcodec's decoder, from Codecs).
    public typealias Decoder = (UnsafeRawBufferPointer, Size) throws -> [UInt8]

    public struct Configuration: Sendable {
        /// nil: the first camera under /dev (`video.device = auto`).
        public var device: String?
        public var size: Size
        public var fps: Int
        public var buffers: Int
        public var stallMilliseconds = 3000
        public init(device: String?, size: Size, fps: Int, buffers: Int = 4) {
            self.device = device
            self.size = size
            self.fps = fps
            self.buffers = buffers
        }
    }

    /// What the camera was asked for and what it granted.
    public struct Opened: Sendable, Equatable {
        public var path: String
        public var card: String
        public var driver: String
        public var plan: FormatNegotiation.Plan
        public var granted: GrantedFormat
        /// The frame rate the driver took, if it says.
        public var fps: Double?
        public var buffers: Int
        /// Buffers exported as DMABUFs for zero-copy consumers.
        public var dmabufs: Int
    }

    public struct Statistics: Sendable, Equatable {
        public var frames = 0
        /// Frames the driver's sequence numbers say it dropped.
        public var driverDropped = 0
        /// Timestamps that were missing (not CLOCK_MONOTONIC) or went backwards, replaced.
        public var timestampsReplaced = 0
        public var corruptBuffers = 0
        public var reopened = 0
        /// Copies of picture data made per delivered frame (buffer → I420).
        public var copies = 0
        public var copiesPerFrame: Double { frames == 0 ? 0 : Double(copies) / Double(frames) }
    }

    public let configuration: Configuration
    private let openDevice: (String) throws -> VideoDevice
    private let listDevices: () -> [String]
    private let decoder: Decoder?
    private let clock: MediaClock
    private let log: Log
    private let corruptLines = RefusalLog(perMinute: 2)
    /// The open device and its buffers, what is lent of them, and the counts: shared by
    /// the capture thread, the consumer giving buffers back, and the status readers.
    private struct State {
        var device: VideoDevice?
        var mapped: [UnsafeRawBufferPointer] = []
        var exported: [FileDescriptor] = []
        var consumer: SharedBufferConsumer?
        /// Buffers lent to the consumer, by index, in this streaming session.
        var lent = Set<Int>()
        /// Counts streaming sessions: a buffer lent before a reopen is not the driver's any more.
        var generation = 0
        var stats = Statistics()
        var opened: Opened?
    }
    private let state = Locked(State())
    private let thread = StoppableThread()
    /// What open() found and was granted.
    public var opened: Opened? { state.withLock { $0.opened } }

    public init(_ configuration: Configuration, clock: MediaClock = MonotonicClock(), decoder: Decoder? = nil,
                openDevice: @escaping (String) throws -> VideoDevice = { try LinuxVideoDevice(path: $0) },
                listDevices: @escaping () -> [String] = { V4L2Camera.deviceNodes() }, log: Log) {
        self.configuration = configuration
        self.clock = clock
        self.decoder = decoder
        self.openDevice = openDevice
        self.listDevices = listDevices
        self.log = log
    }

    /// /dev/video0, /dev/video1, … in numeric order.
    public static func deviceNodes() -> [String] { Devices.deviceNodes(in: "/dev", prefix: "video") }

    public var statistics: Statistics { state.withLock { $0.stats } }

    /// Lends each captured buffer (as a DMABUF) to `consumer` after its picture has been
    /// copied out for the pipeline, while at least two stay with the driver: capture never
    /// waits for the consumer. Without exported DMABUFs nothing is offered.
    public func share(with consumer: SharedBufferConsumer) { state.withLock { $0.consumer = consumer } }

    /// Gives a lent buffer back to the driver (a buffer of an earlier streaming session
    /// is forgotten: its device was closed).
    public func release(_ buffer: SharedBuffer) {
        state.withLock { state in
            guard buffer.generation == state.generation, state.lent.remove(buffer.index) != nil, let device = state.device else { return }
            try? device.queueBuffer(buffer.index)
        }
    }

    /// Whether buffers can be lent at all: the driver exported one DMABUF per buffer.
    public var sharesBuffers: Bool { state.withLock { !$0.exported.isEmpty && $0.exported.count == ($0.opened?.buffers ?? -1) } }

    /// The buffer at `index` as a loan to the consumer, registered as lent; nil when there
    /// is no consumer, no DMABUF, or lending it would leave the driver fewer than two.
    private func lend(_ index: Int, format: GrantedFormat, frame: Int64) -> (SharedBufferConsumer, SharedBuffer)? {
        state.withLock { state in
            guard let consumer = state.consumer, state.exported.indices.contains(index), state.lent.count + 2 < state.exported.count else { return nil }
            state.lent.insert(index)
            return (consumer, SharedBuffer(index: index, generation: state.generation, fd: state.exported[index], format: format, frameIndex: frame))
        }
    }

    /// Opens and configures the camera, and starts streaming; frames flow once `start`
    /// gives them somewhere to go. Errors name the device and the call that failed.
    @discardableResult
    public func open() throws -> Opened {
        let result = try openAndStream()
        state.withLock { $0.opened = result }
        return result
    }

    /// The device to use: the configured one, or the first camera (capture + streaming,
    /// no codec or metadata node).
    func findDevice() throws -> (VideoDevice, VideoCapabilities) {
        if let path = configuration.device {
            let device = try openDevice(path)
            let caps = try device.capabilities()
            guard caps.isCamera else {
                device.close()
                throw CameraError.notACamera(path: path, card: caps.card, driver: caps.driver)
            }
            return (device, caps)
        }
        var seen: [String] = []
        for path in listDevices() {
            guard let device = try? openDevice(path) else { continue }
            if let caps = try? device.capabilities(), caps.isCamera { return (device, caps) }
            seen.append(path)
            device.close()
        }
        throw CameraError.noCamera(seen: seen)
    }

    private func openAndStream() throws -> Opened {
        let (device, caps) = try findDevice()
        do {
            let formats = try device.formats()
            guard let plan = try FormatNegotiation.plan(formats: formats, wanted: configuration.size, fps: configuration.fps,
                                                        sizes: { try device.frameSizes($0) },
                                                        intervals: { try device.frameIntervals($0, size: $1) }) else {
                throw CameraError.noUsableFormat(path: device.path, offered: formats)
            }
            if plan.format == .mjpeg && decoder == nil { throw CameraError.noDecoder(path: device.path) }
            let granted = try device.setFormat(plan.format, size: plan.size)
            guard granted.format == plan.format, granted.width % 2 == 0, granted.height % 2 == 0 else {
                throw CameraError.grantedOther(path: device.path, granted: granted, asked: plan.format, size: plan.size)
            }
            let interval = try? device.setFrameInterval(plan.interval ?? Fraction(1, configuration.fps))
            let count = try device.requestBuffers(configuration.buffers)
            guard count >= 2 else { throw CameraError.tooFewBuffers(path: device.path, count: count) }
            var maps: [UnsafeRawBufferPointer] = []
            var fds: [FileDescriptor] = []
            for index in 0..<count {
                maps.append(try device.mapBuffer(index))
                // Zero-copy hand-off (a KMS plane, a hardware encoder) needs DMABUFs; not
                // every driver can export them, and capture works either way.
                if let fd = try? device.exportBuffer(index) { fds.append(fd) }
            }
            for index in 0..<count { try device.queueBuffer(index) }
            try device.streamOn()
            state.withLock { state in
                state.device = device
                state.mapped = maps
                state.exported = fds
            }
            return Opened(path: device.path, card: caps.card, driver: caps.driver, plan: plan, granted: granted,
                          fps: interval.flatMap { $0 }.map(\.fps), buffers: count, dmabufs: fds.count)
        } catch {
            device.close()
            throw error
        }
    }

    private func teardown() {
        let (device, fds) = state.withLock { state -> (VideoDevice?, [FileDescriptor]) in
            defer {
                state.device = nil
                state.mapped = []
                state.exported = []
                state.lent = []
                state.generation += 1
            }
            return (state.device, state.exported)
        }
        for fd in fds { fd.close() }
        try? device?.streamOff()
        _ = try? device?.requestBuffers(0)
        device?.close()
    }

    /// Delivers frames to `sink` until `stop`.
    public func start(into sink: CaptureSink) {
        thread.start(name: "onair-camera") { [self] in run(sink) }
    }

    public func stop() {
        thread.stop()
        teardown()
    }

    private var isStopped: Bool { thread.isStopped }

    /// What the capture loop carries from one frame to the next.
    private struct Loop {
        var lastTimestamp: Int64?
        var lastSequence: UInt32?
        var lastFrameAt: Int64
        var lostAt: Int64?
        var backoff: Int64 = 250_000_000
        var nextAttempt: Int64 = 0
        var discontinuity = false
        var warnedTimestamps = false
        /// The camera came back in another format since it was lost, and that was said.
        var saidDifferent = false
    }

    private func run(_ sink: CaptureSink) {
        guard let format = opened?.granted else { return }
        var loop = Loop(lastFrameAt: clock.now())
        while !isStopped {
            guard let device = state.withLock({ $0.device }) else {
                reopen(format, &loop)
                continue
            }
            do {
                guard try device.waitForFrame(timeoutMilliseconds: 100) else {
                    if clock.now() - loop.lastFrameAt > Int64(configuration.stallMilliseconds) * 1_000_000 {
                        throw VideoDeviceError(path: device.path, operation: "no frame for \(configuration.stallMilliseconds) ms", code: .timedOut)
                    }
                    continue
                }
                guard let buffer = try device.dequeueBuffer() else { continue }
                loop.lastFrameAt = clock.now()
                var lentOut = false
                defer { if !lentOut { try? device.queueBuffer(buffer.index) } }
                guard let frame = frame(from: buffer, device: device, format: format, &loop) else { continue }
                sink.capture(frame)
                if let (consumer, loan) = lend(buffer.index, format: format, frame: frame.index) {
                    lentOut = consumer.offer(loan)
                    if !lentOut { state.withLock { _ = $0.lent.remove(buffer.index) } }
                }
            } catch {
                let lost = (error as? VideoDeviceError)?.isDeviceLost ?? false
                log.emit(.cameraLost, level: .error, [("device", device.path), ("error", "\(error)"), ("reopen", true), ("device_gone", lost)])
                loop.lostAt = clock.now()
                teardown()
                loop.nextAttempt = clock.now() + loop.backoff
            }
        }
    }

    /// Lost: tries again with backoff (250 ms doubling to 4 s), checking for stop. The
    /// camera must come back as it was opened; the next frame is a discontinuity.
    private func reopen(_ format: GrantedFormat, _ loop: inout Loop) {
        let now = clock.now()
        if now < loop.nextAttempt {
            clock.sleep(until: min(loop.nextAttempt, now + 50_000_000))
            return
        }
        do {
            let again = try openAndStream()
            guard again.granted == format else {
                teardown()
                throw CameraError.cameBackDifferent(path: again.path, granted: again.granted)
            }
            state.withLock { $0.stats.reopened += 1 }
            log.emit(.cameraReopened, level: .warn, [("device", again.path), ("after_ms", (now - (loop.lostAt ?? now)) / 1_000_000)])
            loop.discontinuity = true
            loop.lastTimestamp = nil
            loop.lastSequence = nil
            loop.lastFrameAt = clock.now()
            loop.backoff = 250_000_000
            loop.saidDifferent = false
        } catch {
            if case CameraError.cameBackDifferent = error, !loop.saidDifferent {
                loop.saidDifferent = true
                log.emit(.cameraCameBackDifferent, level: .error, [("problem", "\(error)"),
                    ("wanted", "\(format.format) \(format.width)x\(format.height)"), ("action", "tried again until it comes back as it was")])
            }
            loop.nextAttempt = now + loop.backoff
            loop.backoff = min(loop.backoff * 2, 4_000_000_000)
        }
    }

    /// A dequeued buffer as a frame: dropped sequence numbers counted, a corrupt buffer
    /// skipped, the capture time mended, the picture decoded or converted to I420.
    private func frame(from buffer: DequeuedBuffer, device: VideoDevice, format: GrantedFormat, _ loop: inout Loop) -> VideoFrame? {
        // The driver's 32-bit counter wraps; a step back (a driver that restarted its
        // count) is no loss, and no count it gives can trap here.
        if let last = loop.lastSequence, case let gap = buffer.sequence &- last &- 1, gap > 0, gap < 1 << 31 {
            state.withLock { $0.stats.driverDropped += Int(gap) }
        }
        loop.lastSequence = buffer.sequence
        if buffer.hasError {
            skipCorrupt(device: device, reason: "the driver flagged the buffer (V4L2_BUF_FLAG_ERROR)")
            return nil
        }
        let timestamp = captureTime(of: buffer, device: device, &loop)
        let data = state.withLock { $0.mapped.indices.contains(buffer.index) ? $0.mapped[buffer.index] : nil }
        guard let data else { return nil }
        let used = UnsafeRawBufferPointer(rebasing: data[0..<min(data.count, buffer.bytesUsed > 0 ? buffer.bytesUsed : data.count)])
        guard let planes = picture(used, format: format) else {
            skipCorrupt(device: device, reason: format.format == .mjpeg ? "a JPEG the decoder cannot read (truncated or corrupt)" : "a picture of the wrong size")
            return nil
        }
        let index = state.withLock { state -> Int in
            state.stats.copies += 1
            state.stats.frames += 1
            return state.stats.frames - 1
        }
        var frame = VideoFrame(width: format.width, height: format.height, planes: planes, captureTime: timestamp, index: Int64(index))
        frame.discontinuity = loop.discontinuity
        loop.discontinuity = false
        return frame
    }

    /// A picture skipped: counted, and said (at most two lines a minute, the rest counted
    /// in the next); the stream goes on with the next picture.
    private func skipCorrupt(device: VideoDevice, reason: String) {
        let count = state.withLock { state -> Int in state.stats.corruptBuffers += 1; return state.stats.corruptBuffers }
        corruptLines.emit(.cameraCorrupt, to: log, [("device", device.path), ("reason", reason), ("skipped", count)])
    }

    /// The driver's capture time, on the clock audio uses too; a missing or backwards one
    /// is replaced (and said once) so the pipeline's timeline holds.
    private func captureTime(of buffer: DequeuedBuffer, device: VideoDevice, _ loop: inout Loop) -> Int64 {
        var timestamp = buffer.monotonicTimestamp ?? loop.lastFrameAt
        var replaced = buffer.monotonicTimestamp == nil
        if let last = loop.lastTimestamp, timestamp <= last {
            timestamp = last + Int64(1_000_000_000 / max(1, configuration.fps))  // one frame on: the pictures are in order
            replaced = true
        }
        if replaced {
            state.withLock { $0.stats.timestampsReplaced += 1 }
            if !loop.warnedTimestamps {
                loop.warnedTimestamps = true
                log.emit(.cameraTimestamps, level: .warn, [("device", device.path),
                                                          ("problem", buffer.monotonicTimestamp == nil ? "not CLOCK_MONOTONIC" : "went backwards"),
                                                          ("using", "dequeue time")])
            }
        }
        loop.lastTimestamp = timestamp
        return timestamp
    }

    /// Each frame gets planes of its own, written once: reusing one array would make
    /// copy-on-write copy the previous picture first (the frame still holds it).
    private func picture(_ used: UnsafeRawBufferPointer, format: GrantedFormat) -> [UInt8]? {
        let pictureSize = VideoFrame.byteCount(width: format.width, height: format.height)
        if format.format == .mjpeg, let decoder {
            guard let decoded = try? decoder(used, Size(format.width, format.height)), decoded.count == pictureSize else { return nil }
            return decoded
        }
        var converted = false
        let planes = [UInt8](unsafeUninitializedCapacity: pictureSize) { buffer, count in
            converted = PixelConversion.toI420(used, format: format.format, width: format.width, height: format.height,
                                               stride: format.bytesPerLine, into: buffer)
            count = pictureSize
        }
        return converted ? planes : nil
    }
}
