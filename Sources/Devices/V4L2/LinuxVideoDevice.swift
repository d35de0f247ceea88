import CLinux
#if canImport(Glibc)
import Glibc
#endif

func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

/// A V4L2 device node, single-planar capture with memory-mapped buffers
/// (Documentation/userspace-api/media/v4l/mmap.rst). Opened non-blocking: DQBUF says
/// EAGAIN instead of sleeping, and `waitForFrame` polls.
public final class LinuxVideoDevice: VideoDevice {
    public let path: String
    private var fd: Int32
    private var mappings: [UnsafeMutableRawBufferPointer] = []
    private static let capture = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    private static let mmapMemory = V4L2_MEMORY_MMAP.rawValue

    public init(path: String) throws {
        self.path = path
        fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw VideoDeviceError(path: path, operation: "open", code: errno) }
    }

    deinit { close() }

    private func call<T>(_ name: String, _ request: UInt, _ argument: inout T) throws {
        let fd = self.fd
        let result = withUnsafeMutableBytes(of: &argument) { onair_ioctl(fd, request, $0.baseAddress) }
        if result != 0 { throw VideoDeviceError(path: path, operation: name, code: result) }
    }

    private static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
    }

    public func capabilities() throws -> VideoCapabilities {
        var cap = v4l2_capability()
        try call("VIDIOC_QUERYCAP", onair_VIDIOC_QUERYCAP, &cap)
        let deviceCaps: UInt32 = 0x8000_0000  // V4L2_CAP_DEVICE_CAPS
        return VideoCapabilities(driver: Self.string(cap.driver), card: Self.string(cap.card),
                                 flags: cap.capabilities & deviceCaps != 0 ? cap.device_caps : cap.capabilities)
    }

    public func formats() throws -> [FourCC] {
        var result: [FourCC] = []
        for index in 0..<64 {
            var desc = v4l2_fmtdesc()
            desc.index = UInt32(index)
            desc.type = Self.capture
            do { try call("VIDIOC_ENUM_FMT", onair_VIDIOC_ENUM_FMT, &desc) } catch let error as VideoDeviceError where error.code == EINVAL {
                break  // the end of the list
            }
            result.append(FourCC(rawValue: desc.pixelformat))
        }
        return result
    }

    public func frameSizes(_ format: FourCC) throws -> FrameSizes? {
        var sizes: [Size] = []
        for index in 0..<256 {
            var e = v4l2_frmsizeenum()
            e.index = UInt32(index)
            e.pixel_format = format.rawValue
            do { try call("VIDIOC_ENUM_FRAMESIZES", onair_VIDIOC_ENUM_FRAMESIZES, &e) } catch let error as VideoDeviceError where error.code == EINVAL {
                break
            }
            if e.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                sizes.append(Size(Int(e.discrete.width), Int(e.discrete.height)))
            } else {
                let s = e.stepwise
                return .stepwise(min: Size(Int(s.min_width), Int(s.min_height)), max: Size(Int(s.max_width), Int(s.max_height)),
                                 step: Size(max(1, Int(s.step_width)), max(1, Int(s.step_height))))
            }
        }
        return sizes.isEmpty ? nil : .discrete(sizes)
    }

    public func frameIntervals(_ format: FourCC, size: Size) throws -> FrameIntervals? {
        var intervals: [Fraction] = []
        for index in 0..<256 {
            var e = v4l2_frmivalenum()
            e.index = UInt32(index)
            e.pixel_format = format.rawValue
            e.width = UInt32(size.width)
            e.height = UInt32(size.height)
            do { try call("VIDIOC_ENUM_FRAMEINTERVALS", onair_VIDIOC_ENUM_FRAMEINTERVALS, &e) } catch let error as VideoDeviceError where error.code == EINVAL {
                break
            }
            if e.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                intervals.append(Fraction(Int(e.discrete.numerator), Int(e.discrete.denominator)))
            } else {
                return .stepwise(min: Fraction(Int(e.stepwise.min.numerator), Int(e.stepwise.min.denominator)),
                                 max: Fraction(Int(e.stepwise.max.numerator), Int(e.stepwise.max.denominator)))
            }
        }
        return intervals.isEmpty ? nil : .discrete(intervals)
    }

    public func setFormat(_ format: FourCC, size: Size) throws -> GrantedFormat {
        var f = v4l2_format()
        f.type = Self.capture
        f.fmt.pix.width = UInt32(size.width)
        f.fmt.pix.height = UInt32(size.height)
        f.fmt.pix.pixelformat = format.rawValue
        f.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try call("VIDIOC_S_FMT", onair_VIDIOC_S_FMT, &f)
        return GrantedFormat(format: FourCC(rawValue: f.fmt.pix.pixelformat), width: Int(f.fmt.pix.width), height: Int(f.fmt.pix.height),
                             bytesPerLine: Int(f.fmt.pix.bytesperline), imageSize: Int(f.fmt.pix.sizeimage))
    }

    public func setFrameInterval(_ interval: Fraction) throws -> Fraction? {
        var parm = v4l2_streamparm()
        parm.type = Self.capture
        parm.parm.capture.timeperframe = v4l2_fract(numerator: UInt32(interval.numerator), denominator: UInt32(interval.denominator))
        try call("VIDIOC_S_PARM", onair_VIDIOC_S_PARM, &parm)
        let timePerFrame: UInt32 = 0x1000  // V4L2_CAP_TIMEPERFRAME
        guard parm.parm.capture.capability & timePerFrame != 0 else { return nil }
        let granted = parm.parm.capture.timeperframe
        return Fraction(Int(granted.numerator), Int(granted.denominator))
    }

    public func requestBuffers(_ count: Int) throws -> Int {
        if count == 0 { unmapAll() }
        var request = v4l2_requestbuffers()
        request.count = UInt32(count)
        request.type = Self.capture
        request.memory = Self.mmapMemory
        try call("VIDIOC_REQBUFS", onair_VIDIOC_REQBUFS, &request)
        return Int(request.count)
    }

    public func mapBuffer(_ index: Int) throws -> UnsafeRawBufferPointer {
        var buffer = v4l2_buffer()
        buffer.index = UInt32(index)
        buffer.type = Self.capture
        buffer.memory = Self.mmapMemory
        try call("VIDIOC_QUERYBUF", onair_VIDIOC_QUERYBUF, &buffer)
        let length = Int(buffer.length)
        guard let base = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(buffer.m.offset)), base != MAP_FAILED else {
            throw VideoDeviceError(path: path, operation: "mmap buffer \(index)", code: errno)
        }
        let mapping = UnsafeMutableRawBufferPointer(start: base, count: length)
        mappings.append(mapping)
        return UnsafeRawBufferPointer(mapping)
    }

    public func exportBuffer(_ index: Int) throws -> Int32 {
        var export = v4l2_exportbuffer()
        export.type = Self.capture
        export.index = UInt32(index)
        export.flags = UInt32(O_RDONLY | O_CLOEXEC)
        try call("VIDIOC_EXPBUF", onair_VIDIOC_EXPBUF, &export)
        return export.fd
    }

    public func queueBuffer(_ index: Int) throws {
        var buffer = v4l2_buffer()
        buffer.index = UInt32(index)
        buffer.type = Self.capture
        buffer.memory = Self.mmapMemory
        try call("VIDIOC_QBUF", onair_VIDIOC_QBUF, &buffer)
    }

    public func dequeueBuffer() throws -> DequeuedBuffer? {
        var buffer = v4l2_buffer()
        buffer.type = Self.capture
        buffer.memory = Self.mmapMemory
        let result = onair_ioctl(fd, onair_VIDIOC_DQBUF, &buffer)
        if result == EAGAIN { return nil }
        if result != 0 { throw VideoDeviceError(path: path, operation: "VIDIOC_DQBUF", code: result) }
        let timestampMask: UInt32 = 0xE000, monotonic: UInt32 = 0x2000, errorFlag: UInt32 = 0x40
        let stamp = Int64(buffer.timestamp.tv_sec) * 1_000_000_000 + Int64(buffer.timestamp.tv_usec) * 1000
        return DequeuedBuffer(index: Int(buffer.index), bytesUsed: Int(buffer.bytesused),
                              monotonicTimestamp: buffer.flags & timestampMask == monotonic ? stamp : nil,
                              sequence: buffer.sequence, hasError: buffer.flags & errorFlag != 0)
    }

    public func waitForFrame(timeoutMilliseconds: Int) throws -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let result = poll(&descriptor, 1, Int32(timeoutMilliseconds))
        if result < 0 {
            if errno == EINTR { return false }
            throw VideoDeviceError(path: path, operation: "poll", code: errno)
        }
        // POLLERR (an unplugged device) is reported by the DQBUF that follows.
        return result > 0
    }

    public func streamOn() throws {
        var type = Int32(Self.capture)
        try call("VIDIOC_STREAMON", onair_VIDIOC_STREAMON, &type)
    }

    public func streamOff() throws {
        var type = Int32(Self.capture)
        try call("VIDIOC_STREAMOFF", onair_VIDIOC_STREAMOFF, &type)
    }

    private func unmapAll() {
        for mapping in mappings { munmap(mapping.baseAddress, mapping.count) }
        mappings = []
    }

    public func close() {
        guard fd >= 0 else { return }
        unmapAll()
        Glibc.close(fd)
        fd = -1
    }
}
