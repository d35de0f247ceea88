import System

/// A V4L2 pixel format code (`v4l2_fourcc`: four ASCII bytes, little-endian).
public struct FourCC: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ code: String) {
        let bytes = Array(code.utf8)
        precondition(bytes.count == 4, "four characters: \(code)")
        rawValue = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    }
    public var description: String {
        String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (8 * $0)) }, as: UTF8.self)
    }
    public static let nv12 = FourCC("NV12")
    public static let yu12 = FourCC("YU12")
    public static let yuyv = FourCC("YUYV")
    public static let uyvy = FourCC("UYVY")
    public static let mjpeg = FourCC("MJPG")
}

/// What VIDIOC_QUERYCAP says, reduced to what choosing a camera needs.
public struct VideoCapabilities: Sendable, Equatable {
    public var driver: String
    public var card: String
    /// `device_caps` when the driver sets V4L2_CAP_DEVICE_CAPS, else `capabilities`.
    public var flags: UInt32

    public init(driver: String, card: String, flags: UInt32) {
        self.driver = driver
        self.card = card
        self.flags = flags
    }

    // videodev2.h V4L2_CAP_*.
    public static let videoCapture: UInt32 = 0x0000_0001
    public static let videoM2M: UInt32 = 0x0000_8000
    public static let videoM2MMultiplane: UInt32 = 0x0000_4000
    public static let metaCapture: UInt32 = 0x0080_0000
    public static let streaming: UInt32 = 0x0400_0000

    /// A camera: single-planar capture with streaming I/O, and not a codec (M2M) or a
    /// metadata node.
    public var isCamera: Bool {
        flags & Self.videoCapture != 0 && flags & Self.streaming != 0
            && flags & (Self.videoM2M | Self.videoM2MMultiplane | Self.metaCapture) == 0
    }
}

/// VIDIOC_ENUM_FRAMESIZES.
public enum FrameSizes: Sendable, Equatable {
    case discrete([Size])
    /// Continuous is stepwise with step 1.
    case stepwise(min: Size, max: Size, step: Size)
}

public struct Size: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public init(_ width: Int, _ height: Int) {
        self.width = width
        self.height = height
    }
    public var description: String { "\(width)x\(height)" }
}

/// A frame interval in seconds (numerator / denominator): 1/30 is 30 fps.
public struct Fraction: Sendable, Equatable, CustomStringConvertible {
    public var numerator: Int
    public var denominator: Int
    public init(_ numerator: Int, _ denominator: Int) {
        self.numerator = numerator
        self.denominator = denominator
    }
    public var fps: Double { numerator == 0 ? 0 : Double(denominator) / Double(numerator) }
    public var description: String { "\(numerator)/\(denominator)" }
}

/// VIDIOC_ENUM_FRAMEINTERVALS.
public enum FrameIntervals: Sendable, Equatable {
    case discrete([Fraction])
    case stepwise(min: Fraction, max: Fraction)
}

/// What VIDIOC_S_FMT granted.
public struct GrantedFormat: Sendable, Equatable {
    public var format: FourCC
    public var width: Int
    public var height: Int
    public var bytesPerLine: Int
    public var imageSize: Int
    public init(format: FourCC, width: Int, height: Int, bytesPerLine: Int, imageSize: Int) {
        self.format = format
        self.width = width
        self.height = height
        self.bytesPerLine = bytesPerLine
        self.imageSize = imageSize
    }
}

/// A filled buffer from VIDIOC_DQBUF.
public struct DequeuedBuffer: Sendable, Equatable {
    public var index: Int
    public var bytesUsed: Int
    /// CLOCK_MONOTONIC ns of the frame's capture, when the driver stamps it so
    /// (V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC); nil when its timestamps mean something else.
    public var monotonicTimestamp: Int64?
    public var sequence: UInt32
    /// V4L2_BUF_FLAG_ERROR: the data may be corrupt.
    public var hasError: Bool
    public init(index: Int, bytesUsed: Int, monotonicTimestamp: Int64?, sequence: UInt32, hasError: Bool = false) {
        self.index = index
        self.bytesUsed = bytesUsed
        self.monotonicTimestamp = monotonicTimestamp
        self.sequence = sequence
        self.hasError = hasError
    }
}

/// A failed V4L2 call, said the way `strace` would: the request, the device, errno.
public struct VideoDeviceError: Error, CustomStringConvertible, Equatable {
    public var path: String
    public var operation: String
    public var code: Errno
    public init(path: String, operation: String, code: Errno) {
        self.path = path
        self.operation = operation
        self.code = code
    }
    public var description: String { "\(path): \(operation): \(code)" }
    /// The device is gone or broken (unplugged, driver error): worth reopening.
    public var isDeviceLost: Bool { [.noDevice, .ioError, .noSuchDeviceOrAddress].contains(code) }
}

/// The V4L2 calls a camera makes, one method per ioctl (plus mmap and poll). The Linux
/// implementation issues them; tests use a fake that keeps the same contract.
public protocol VideoDevice: AnyObject {
    var path: String { get }
    func capabilities() throws -> VideoCapabilities
    /// VIDIOC_ENUM_FMT for single-planar capture.
    func formats() throws -> [FourCC]
    /// nil: the driver does not enumerate sizes (S_FMT will adjust).
    func frameSizes(_ format: FourCC) throws -> FrameSizes?
    func frameIntervals(_ format: FourCC, size: Size) throws -> FrameIntervals?
    func setFormat(_ format: FourCC, size: Size) throws -> GrantedFormat
    /// VIDIOC_S_PARM timeperframe; nil when the driver cannot set it.
    func setFrameInterval(_ interval: Fraction) throws -> Fraction?
    /// VIDIOC_REQBUFS (MMAP); returns how many the driver allocated. 0 frees them.
    func requestBuffers(_ count: Int) throws -> Int
    /// VIDIOC_QUERYBUF + mmap(2); valid until `requestBuffers(0)` or `close`.
    func mapBuffer(_ index: Int) throws -> UnsafeRawBufferPointer
    /// VIDIOC_EXPBUF: a DMABUF fd for the buffer, for zero-copy consumers.
    func exportBuffer(_ index: Int) throws -> FileDescriptor
    func queueBuffer(_ index: Int) throws
    /// nil when no buffer is ready (EAGAIN).
    func dequeueBuffer() throws -> DequeuedBuffer?
    /// poll(2) for a filled buffer.
    func waitForFrame(timeoutMilliseconds: Int) throws -> Bool
    func streamOn() throws
    func streamOff() throws
    func close()
}
