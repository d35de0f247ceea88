import CLinux
import System

/// A V4L2 device node, single-planar capture with memory-mapped buffers
/// (Documentation/userspace-api/media/v4l/mmap.rst). Opened non-blocking: DQBUF says
/// EAGAIN instead of sleeping, and `waitForFrame` polls.
public final class LinuxVideoDevice: VideoDevice {
    public let path: String
    private let fd: FileDescriptor
    private var mappings: [MemoryMap] = []
    private static let capture = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    private static let mmapMemory = V4L2_MEMORY_MMAP.rawValue

    public init(path: String) throws {
        self.path = path
        do { fd = try FileDescriptor.open(path, .readWrite, options: .nonBlocking) } catch let error as Errno {
            throw VideoDeviceError(path: path, operation: "open", code: error)
        }
    }

    deinit { close() }

    private func call<T>(_ name: String, _ request: UInt, _ argument: inout T) throws {
        do { try fd.control(request, &argument) } catch let error as Errno {
            throw VideoDeviceError(path: path, operation: name, code: error)
        }
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
            do { try call("VIDIOC_ENUM_FMT", onair_VIDIOC_ENUM_FMT, &desc) } catch let error as VideoDeviceError where error.code == .invalid {
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
            do { try call("VIDIOC_ENUM_FRAMESIZES", onair_VIDIOC_ENUM_FRAMESIZES, &e) } catch let error as VideoDeviceError where error.code == .invalid {
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
            do { try call("VIDIOC_ENUM_FRAMEINTERVALS", onair_VIDIOC_ENUM_FRAMEINTERVALS, &e) } catch let error as VideoDeviceError where error.code == .invalid {
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
        let mapping: MemoryMap
        do { mapping = try MemoryMap(fd, length: length, offset: Int64(buffer.m.offset), writable: true) } catch let error as Errno {
            throw VideoDeviceError(path: path, operation: "mmap buffer \(index)", code: error)
        }
        mappings.append(mapping)
        return UnsafeRawBufferPointer(start: mapping.address, count: length)
    }

    public func exportBuffer(_ index: Int) throws -> FileDescriptor {
        var export = v4l2_exportbuffer()
        export.type = Self.capture
        export.index = UInt32(index)
        export.flags = onair_dmabuf_export_flags
        try call("VIDIOC_EXPBUF", onair_VIDIOC_EXPBUF, &export)
        return FileDescriptor(adopting: export.fd)
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
        do { try fd.control(onair_VIDIOC_DQBUF, &buffer) } catch let error as Errno {
            if error == .again { return nil }
            throw VideoDeviceError(path: path, operation: "VIDIOC_DQBUF", code: error)
        }
        let timestampMask: UInt32 = 0xE000, monotonic: UInt32 = 0x2000, errorFlag: UInt32 = 0x40
        let stamp = Int64(buffer.timestamp.tv_sec) * 1_000_000_000 + Int64(buffer.timestamp.tv_usec) * 1000
        return DequeuedBuffer(index: Int(buffer.index), bytesUsed: Int(buffer.bytesused),
                              monotonicTimestamp: buffer.flags & timestampMask == monotonic ? stamp : nil,
                              sequence: buffer.sequence, hasError: buffer.flags & errorFlag != 0)
    }

    public func waitForFrame(timeoutMilliseconds: Int) throws -> Bool {
        do {
            // POLLERR (an unplugged device) is reported by the DQBUF that follows.
            return try !Poll.wait(fd, for: .readable, timeoutMs: Int32(clamping: timeoutMilliseconds)).isEmpty
        } catch let error as Errno {
            throw VideoDeviceError(path: path, operation: "poll", code: error)
        }
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
        for mapping in mappings { mapping.unmap() }
        mappings = []
    }

    public func close() {
        unmapAll()
        fd.close()
    }
}
