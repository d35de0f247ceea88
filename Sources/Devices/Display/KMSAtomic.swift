import CDRM
import System

/// Atomic modesetting (drm_mode.h DRM_IOCTL_MODE_ATOMIC through libdrm): every change is a
/// set of (object, property, value) triples that the kernel applies together at a vblank,
/// or tests without applying. Properties are found by name, as the KMS uAPI documents
/// them ("FB_ID", "CRTC_ID", "SRC_X", "MODE_ID", "ACTIVE", …).
struct KMSProperties {
    private var ids: [String: UInt32] = [:]

    init(fd: FileDescriptor, object: UInt32, type: UInt32) {
        Self.each(fd: fd, object: object, type: type) { name, id, _ in ids[name] = id }
    }

    /// The current value of a property by name (the plane "type", say).
    static func value(fd: FileDescriptor, object: UInt32, type: UInt32, name wanted: String) -> UInt64? {
        var found: UInt64?
        each(fd: fd, object: object, type: type) { name, _, value in if name == wanted { found = value } }
        return found
    }

    /// Every property of an object: its name, id and current value.
    private static func each(fd: FileDescriptor, object: UInt32, type: UInt32, _ body: (String, UInt32, UInt64) -> Void) {
        guard let list = drmModeObjectGetProperties(fd.rawValue, object, type) else { return }
        defer { drmModeFreeObjectProperties(list) }
        for i in 0..<Int(list.pointee.count_props) {
            guard let property = drmModeGetProperty(fd.rawValue, list.pointee.props[i]) else { continue }
            let name = withUnsafeBytes(of: property.pointee.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            body(name, property.pointee.prop_id, list.pointee.prop_values[i])
            drmModeFreeProperty(property)
        }
    }

    subscript(name: String) -> UInt32? { ids[name] }
}

/// One atomic request being put together.
final class AtomicRequest {
    private let request: OpaquePointer
    private(set) var missing: [String] = []

    init?() {
        guard let request = drmModeAtomicAlloc() else { return nil }
        self.request = request
    }

    deinit { drmModeAtomicFree(request) }

    func set(_ object: UInt32, _ properties: KMSProperties, _ name: String, _ value: UInt64) {
        guard let property = properties[name] else {
            missing.append(name)
            return
        }
        _ = drmModeAtomicAddProperty(request, object, property, value)
    }

    /// A plane showing `framebuffer` (0: the plane off) from the source rectangle in whole
    /// pixels (the kernel takes 16.16 fixed point) onto the CRTC rectangle.
    func plane(_ plane: UInt32, _ properties: KMSProperties, crtc: UInt32, framebuffer: UInt32,
               source: (width: Int, height: Int), onto box: (x: Int, y: Int, width: Int, height: Int)) {
        set(plane, properties, "FB_ID", UInt64(framebuffer))
        set(plane, properties, "CRTC_ID", UInt64(framebuffer == 0 ? 0 : crtc))
        guard framebuffer != 0 else { return }
        set(plane, properties, "SRC_X", 0)
        set(plane, properties, "SRC_Y", 0)
        set(plane, properties, "SRC_W", UInt64(source.width) << 16)
        set(plane, properties, "SRC_H", UInt64(source.height) << 16)
        set(plane, properties, "CRTC_X", UInt64(box.x))
        set(plane, properties, "CRTC_Y", UInt64(box.y))
        set(plane, properties, "CRTC_W", UInt64(box.width))
        set(plane, properties, "CRTC_H", UInt64(box.height))
    }

    /// 0 or a negative errno. `test`: check only (DRM_MODE_ATOMIC_TEST_ONLY); `modeset`:
    /// a full mode change may happen; `event`: a non-blocking flip that sends a page-flip
    /// event to it when the new picture is on the screen (else the call blocks until then).
    func commit(fd: FileDescriptor, test: Bool = false, modeset: Bool = false, event: UnsafeMutableRawPointer? = nil) -> Int32 {
        guard missing.isEmpty else { return -EINVAL }
        var flags = UInt32(0)
        if test { flags |= UInt32(DRM_MODE_ATOMIC_TEST_ONLY) }
        if modeset { flags |= UInt32(DRM_MODE_ATOMIC_ALLOW_MODESET) }
        if event != nil && !test { flags |= UInt32(DRM_MODE_ATOMIC_NONBLOCK) | UInt32(DRM_MODE_PAGE_FLIP_EVENT) }
        let data = test ? nil : event
        let result = drmModeAtomicCommit(fd.rawValue, request, flags, data)
        return result == 0 ? 0 : (result < 0 && result != -1 ? result : -Errno.current.rawValue)
    }
}
