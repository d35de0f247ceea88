import CDRM
#if canImport(Glibc)
import Glibc
#endif

/// The attached screen through DRM/KMS (libdrm), the legacy way every driver has: the
/// connector's preferred mode on its CRTC, two XRGB8888 dumb buffers, page flips paced by
/// vblank. Opening takes the display (DRM master); closing gives back what was there.
public final class DRMDisplay: @unchecked Sendable {
    public struct Mode: Sendable, Equatable, CustomStringConvertible {
        public var width: Int
        public var height: Int
        public var refresh: Int
        public var description: String { "\(width)x\(height)@\(refresh)" }
    }
    struct Buffer {
        var handle: UInt32
        var framebuffer: UInt32
        var pitch: Int
        var size: Int
        var memory: UnsafeMutableRawPointer
    }

    public let path: String
    public let connectorName: String
    public let mode: Mode
    private let fd: Int32
    private let crtcID: UInt32
    private var connectorID: UInt32
    private var saved: UnsafeMutablePointer<drmModeCrtc>?
    private var buffers: [Buffer] = []
    private var back = 1
    private let flipDone = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    /// Set once the display is taken; a failed init leaves nothing for deinit to undo.
    private var ready = false

    /// `device`: a card node, or nil for the first card with a connected connector (nil
    /// when there is none: the appliance runs headless).
    public static func open(_ device: String?) throws -> DRMDisplay? {
        if let device { return try DRMDisplay(path: device) }
        for card in deviceNodes(in: "/dev/dri", prefix: "card") { if let display = try? DRMDisplay(path: card) { return display } }
        return nil
    }

    init(path: String) throws {
        self.path = path
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw DeviceError("preview.device \(path): \(String(cString: strerror(errno)))") }
        self.fd = fd
        var ok = false
        defer { if !ok { Glibc.close(fd) } }
        guard let resources = drmModeGetResources(fd) else {
            throw DeviceError("preview.device \(path): not a KMS display (\(String(cString: strerror(errno))))")
        }
        defer { drmModeFreeResources(resources) }
        var found: (connector: UInt32, mode: drmModeModeInfo, crtc: UInt32, name: String)?
        for i in 0..<Int(resources.pointee.count_connectors) {
            guard found == nil, let connector = drmModeGetConnector(fd, resources.pointee.connectors[i]) else { continue }
            defer { drmModeFreeConnector(connector) }
            guard onair_drm_connected(connector) != 0, connector.pointee.count_modes > 0 else { continue }
            // The preferred mode, else the first (drivers list the best first).
            let modes = (0..<Int(connector.pointee.count_modes)).map { connector.pointee.modes[$0] }
            let mode = modes.first { $0.type & UInt32(DRM_MODE_TYPE_PREFERRED) != 0 } ?? modes[0]
            var crtc: UInt32 = 0
            if connector.pointee.encoder_id != 0, let encoder = drmModeGetEncoder(fd, connector.pointee.encoder_id) {
                crtc = encoder.pointee.crtc_id
                drmModeFreeEncoder(encoder)
            }
            if crtc == 0, connector.pointee.count_encoders > 0, let encoder = drmModeGetEncoder(fd, connector.pointee.encoders[0]) {
                // No CRTC yet: the first one this encoder can drive.
                for c in 0..<Int(resources.pointee.count_crtcs) where encoder.pointee.possible_crtcs & (1 << c) != 0 {
                    crtc = resources.pointee.crtcs[c]
                    break
                }
                drmModeFreeEncoder(encoder)
            }
            let type = String(cString: drmModeGetConnectorTypeName(connector.pointee.connector_type))
            if crtc != 0 { found = (connector.pointee.connector_id, mode, crtc, "\(type)-\(connector.pointee.connector_type_id)") }
        }
        guard let found else { throw DeviceError("preview.device \(path): no connected display") }
        connectorID = found.connector
        crtcID = found.crtc
        connectorName = found.name
        mode = Mode(width: Int(found.mode.hdisplay), height: Int(found.mode.vdisplay), refresh: Int(found.mode.vrefresh))
        saved = drmModeGetCrtc(fd, crtcID)
        _ = drmSetMaster(fd)  // may already be master; SetCrtc says if not
        for _ in 0..<2 { buffers.append(try makeBuffer()) }
        var connector = connectorID
        var modeInfo = found.mode
        let result = drmModeSetCrtc(fd, crtcID, buffers[0].framebuffer, 0, 0, &connector, 1, &modeInfo)
        guard result == 0 else {
            release()
            throw DeviceError("preview.device \(path): setting \(mode) on \(connectorName): \(String(cString: strerror(-result)))")
        }
        flipDone.pointee = 1
        ok = true
        ready = true
    }

    private func makeBuffer() throws -> Buffer {
        var handle: UInt32 = 0, pitch: UInt32 = 0, size: UInt64 = 0
        let created = onair_drm_create_dumb(fd, UInt32(mode.width), UInt32(mode.height), 32, &handle, &pitch, &size)
        guard created == 0 else { throw DeviceError("preview.device \(path): dumb buffer: \(String(cString: strerror(created)))") }
        var framebuffer: UInt32 = 0
        var handles: (UInt32, UInt32, UInt32, UInt32) = (handle, 0, 0, 0)
        var pitches: (UInt32, UInt32, UInt32, UInt32) = (pitch, 0, 0, 0)
        var offsets: (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
        let added = withUnsafePointer(to: &handles) { h in withUnsafePointer(to: &pitches) { p in withUnsafePointer(to: &offsets) { o in
            h.withMemoryRebound(to: UInt32.self, capacity: 4) { h in p.withMemoryRebound(to: UInt32.self, capacity: 4) { p in
                o.withMemoryRebound(to: UInt32.self, capacity: 4) { o in
                    drmModeAddFB2(fd, UInt32(mode.width), UInt32(mode.height), onair_drm_format_xrgb8888(), h, p, o, &framebuffer, 0)
                } } } } } }
        guard added == 0 else {
            onair_drm_destroy_dumb(fd, handle)
            throw DeviceError("preview.device \(path): AddFB2 XRGB8888: \(String(cString: strerror(-added)))")
        }
        var offset: UInt64 = 0
        guard onair_drm_map_dumb(fd, handle, &offset) == 0,
              let memory = mmap(nil, Int(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset)), memory != MAP_FAILED else {
            throw DeviceError("preview.device \(path): mapping a dumb buffer: \(String(cString: strerror(errno)))")
        }
        memset(memory, 0, Int(size))  // black
        return Buffer(handle: handle, framebuffer: framebuffer, pitch: Int(pitch), size: Int(size), memory: memory)
    }

    /// Draws into the back buffer and flips to it at the next vblank, waiting up to a
    /// frame for the flip before (a flip still pending means this picture is dropped:
    /// false). True once the flip that shows it has completed.
    public func show(_ draw: (UnsafeMutableRawPointer, _ pitch: Int, _ width: Int, _ height: Int) -> Void) -> Bool {
        if flipDone.pointee == 0 && !waitForFlip(milliseconds: 50) { return false }
        let buffer = buffers[back]
        draw(buffer.memory, buffer.pitch, mode.width, mode.height)
        flipDone.pointee = 0
        guard drmModePageFlip(fd, crtcID, buffer.framebuffer, onair_drm_page_flip_event(), flipDone) == 0 else {
            flipDone.pointee = 1
            return false
        }
        back = 1 - back
        return waitForFlip(milliseconds: 100)
    }

    private func waitForFlip(milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, milliseconds) > 0 { _ = onair_drm_handle_events(fd, flipDone) }
        return flipDone.pointee != 0
    }

    private func release() {
        if let saved {
            // Give the screen back as it was (the console, a splash).
            var connector = connectorID
            var mode = saved.pointee.mode
            _ = drmModeSetCrtc(fd, saved.pointee.crtc_id, saved.pointee.buffer_id, saved.pointee.x, saved.pointee.y, &connector, 1, &mode)
            drmModeFreeCrtc(saved)
            self.saved = nil
        }
        for buffer in buffers {
            munmap(buffer.memory, buffer.size)
            _ = drmModeRmFB(fd, buffer.framebuffer)
            onair_drm_destroy_dumb(fd, buffer.handle)
        }
        buffers = []
        _ = drmDropMaster(fd)
    }

    deinit {
        defer { flipDone.deallocate() }
        guard ready else { return }
        if flipDone.pointee == 0 { _ = waitForFlip(milliseconds: 100) }
        release()
        Glibc.close(fd)
    }
}

/// Where a picture of `source` size goes inside `target`, aspect kept, centred, even
/// coordinates (letterbox or pillarbox).
public func letterbox(source: (width: Int, height: Int), target: (width: Int, height: Int)) -> (x: Int, y: Int, width: Int, height: Int) {
    guard source.width > 0, source.height > 0 else { return (0, 0, target.width, target.height) }
    var width = target.width, height = target.width * source.height / source.width
    if height > target.height {
        height = target.height
        width = target.height * source.width / source.height
    }
    width &= ~1
    height &= ~1
    return (((target.width - width) / 2) & ~1, ((target.height - height) / 2) & ~1, width, height)
}
