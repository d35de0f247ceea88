/// Which KMS plane shows the camera, in which pixel format, and whether the camera's own
/// buffers can be scanned out as they are. Pure: it reads a table of what the driver
/// offers (as DRM_IOCTL_MODE_GETPLANE and the plane's "type" property tell it), so it is
/// tested against tables recorded from real drivers.
public struct DisplayPlane: Sendable, Equatable {
    /// The "type" property (drm_mode.h DRM_PLANE_TYPE_*).
    public enum Kind: UInt64, Sendable, Equatable {
        case overlay = 0, primary = 1, cursor = 2
    }
    public var id: UInt32
    public var kind: Kind
    /// Bit n: the plane can be used on the CRTC at index n of the resources.
    public var possibleCRTCs: UInt32
    /// DRM fourcc codes (drm_fourcc.h), which for the YUV layouts a camera gives are the
    /// same four characters as V4L2's: NV12, YU12 (DRM's YUV420), YUYV, UYVY.
    public var formats: [FourCC]
    /// The plane the CRTC scans out now (a primary plane already in use is the one to keep).
    public var crtcID: UInt32 = 0

    public init(id: UInt32, kind: Kind, possibleCRTCs: UInt32, formats: [FourCC], crtcID: UInt32 = 0) {
        self.id = id
        self.kind = kind
        self.possibleCRTCs = possibleCRTCs
        self.formats = formats
        self.crtcID = crtcID
    }

    public func canShow(on crtcIndex: Int) -> Bool { crtcIndex < 32 && possibleCRTCs & (1 << UInt32(crtcIndex)) != 0 }
}

extension FourCC {
    /// DRM_FORMAT_XRGB8888 ('XR24'): what every primary plane takes.
    public static let xrgb8888 = FourCC("XR24")
}

public struct PlanePlan: Sendable, Equatable, CustomStringConvertible {
    public enum Picture: Sendable, Equatable {
        /// Frames converted to XRGB8888 (libswscale) and letterboxed into the primary plane.
        case converted
        /// An overlay plane in a YUV format scales and converts: the picture is copied into
        /// its buffers (from the pipeline's I420) without any conversion on the CPU.
        case copied(FourCC)
        /// The camera's DMABUFs are the overlay's framebuffers: no copy at all.
        case imported(FourCC)
    }
    public var primary: UInt32
    /// nil: the picture goes on the primary plane.
    public var overlay: UInt32?
    public var picture: Picture
    /// Why no better layout was taken (nil when the best one was).
    public var reason: String?

    public var description: String {
        switch picture {
        case .converted: return "primary XR24 (converted)"
        case .copied(let format): return "overlay \(format) (copied)"
        case .imported(let format): return "overlay \(format) (camera DMABUF, zero copy)"
        }
    }

    /// Formats a copy from I420 can fill, best first: YU12 is three plain row copies, NV12
    /// interleaves the chroma, YUYV/UYVY pack it.
    static let copyFormats: [FourCC] = [.yu12, .nv12, .yuyv, .uyvy]

    /// The layout for showing a camera whose buffers are `camera` (nil: no shareable
    /// DMABUFs, the synthetic camera) on the CRTC at `crtcIndex`. Best first: an overlay
    /// that takes the camera's buffers as they are; an overlay in a YUV format the frames
    /// are copied into; the primary plane in XRGB8888. nil: no primary plane for that CRTC
    /// (then the legacy SetCrtc path, which needs none named).
    public static func choose(planes: [DisplayPlane], crtcIndex: Int, crtcID: UInt32, camera: FourCC?) -> PlanePlan? {
        let usable = planes.filter { $0.canShow(on: crtcIndex) }
        let primaries = usable.filter { $0.kind == .primary }
        guard let primary = primaries.first(where: { $0.crtcID == crtcID }) ?? primaries.first else { return nil }
        let overlays = usable.filter { $0.kind == .overlay }
        if let camera, let plane = overlays.first(where: { $0.formats.contains(camera) }) {
            return PlanePlan(primary: primary.id, overlay: plane.id, picture: .imported(camera))
        }
        for format in copyFormats {
            if let plane = overlays.first(where: { $0.formats.contains(format) }) {
                let reason = camera.map { "no overlay takes the camera's \($0)" } ?? "the camera's buffers cannot be shared (no DMABUF)"
                return PlanePlan(primary: primary.id, overlay: plane.id, picture: .copied(format), reason: reason)
            }
        }
        return PlanePlan(primary: primary.id, overlay: nil, picture: .converted,
                         reason: overlays.isEmpty ? "no overlay plane on this CRTC" : "no overlay takes a YUV format")
    }
}

/// Where the planes of a YUV picture lie in one buffer of `pitch` bytes per luma row (DRM
/// AddFB2's pitches and offsets; V4L2's single-planar layouts are the same). nil for a
/// format that is not one of these.
public func yuvLayout(_ format: FourCC, pitch: Int, height: Int) -> (pitches: [Int], offsets: [Int])? {
    switch format {
    case .nv12: return ([pitch, pitch], [0, pitch * height])
    case .yu12: return ([pitch, pitch / 2, pitch / 2], [0, pitch * height, pitch * height + pitch / 2 * height / 2])
    case .yuyv, .uyvy: return ([pitch], [0])
    default: return nil
    }
}

/// Bytes per pixel in the first plane, and the buffer height in those rows, of a dumb
/// buffer that holds a whole picture in `format` (DRM_IOCTL_MODE_CREATE_DUMB only knows
/// one plane of `bpp`-bit pixels: a 4:2:0 picture is 1.5 times the luma rows of 8 bits).
public func dumbBufferShape(_ format: FourCC, height: Int) -> (bitsPerPixel: Int, rows: Int)? {
    switch format {
    case .nv12, .yu12: return (8, height * 3 / 2)
    case .yuyv, .uyvy: return (16, height)
    case .xrgb8888: return (32, height)
    default: return nil
    }
}
