import CDRM
import Drawing
import Logging
import Media
import System
import Threading

/// The attached screen through DRM/KMS (libdrm). Opening takes the display (DRM master),
/// sets the connector's preferred mode and picks the planes (`PlanePlan`): the camera's
/// own DMABUFs on an overlay plane when one takes their format, else an overlay in a YUV
/// format the frames are copied into, else the primary plane with frames converted to
/// XRGB8888. Atomic modesetting when the driver has it (each change tested first, then
/// applied at a vblank), legacy SetCrtc/SetPlane/PageFlip otherwise. A layout the driver
/// refuses falls back to the next one, said in the log. Closing gives back what was there.
public final class DRMDisplay: @unchecked Sendable {  // the KMS state: on the preview's thread only, after init; what the capture thread shares is `imports`
    /// Draws a frame as XRGB8888 into (memory, pitch, width, height).
    public typealias Convert = (VideoFrame, UnsafeMutableRawPointer, Int, Int, Int) -> Void

    public let path: String
    public let connectorName: String
    public let mode: Mode
    public let atomic: Bool
    public private(set) var plan: PlanePlan
    /// The picture size the planes were made for.
    public let picture: (width: Int, height: Int)
    /// Pictures shown (flips completed).
    public private(set) var shown = 0

    private let fd: FileDescriptor
    private let log: Log
    private let crtcID: UInt32
    private var connectorID: UInt32
    private var modeInfo: drmModeModeInfo
    private var modeBlob: UInt32 = 0
    private var properties: (connector: KMSProperties, crtc: KMSProperties, primary: KMSProperties, overlay: KMSProperties)?
    private var saved: UnsafeMutablePointer<drmModeCrtc>?
    /// Two XRGB8888 buffers for the primary plane (the picture, or only the indicators
    /// around an overlay) and what each one shows.
    private var primaries: [Framebuffer] = []
    private var primaryShows: [Indicators?] = [nil, nil]
    private var primaryFront = 0
    /// Two buffers in the overlay's format, when frames are copied.
    private var overlays: [Framebuffer] = []
    private var overlayFront = 0
    /// What the capture thread shares with the preview's: the imported camera buffers by
    /// (generation, index), whether importing goes on and why an import failed, the one on
    /// the screen, and where lent buffers go back once they are off it.
    private struct Imports {
        var imported: [Int: Framebuffer] = [:]
        var importing = false
        var failure: String?
        var onScreen: SharedBuffer?
        var returnBuffer: (@Sendable (SharedBuffer) -> Void)?
    }
    private let imports = Locked(Imports())
    private let flipDone = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    /// Set once the display is taken; a failed init leaves nothing for deinit to undo.
    private var ready = false

    /// `device`: a card node, or nil for the first card with a connected connector (nil
    /// when there is none: the appliance runs headless). `picture`: the camera's size;
    /// `camera`: the format of its shareable buffers (nil when it cannot lend them).
    /// `mode`: the display mode to use instead of the connector's preferred one.
    public static func open(_ device: String?, picture: (width: Int, height: Int), camera: FourCC?, mode: Mode? = nil, atomic: Bool = true,
                            log: Log) throws -> DRMDisplay? {
        if let device { return try DRMDisplay(path: device, picture: picture, camera: camera, mode: mode, allowAtomic: atomic, log: log) }
        for card in deviceNodes(in: "/dev/dri", prefix: "card") {
            if let display = try? DRMDisplay(path: card, picture: picture, camera: camera, mode: mode, allowAtomic: atomic, log: log) {
                return display
            }
        }
        return nil
    }

    init(path: String, picture: (width: Int, height: Int), camera: FourCC?, mode wanted: Mode?, allowAtomic: Bool, log: Log) throws {
        self.path = path
        self.picture = picture
        self.log = log
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(path, .readWrite) } catch { throw DeviceError.setting(key: "preview.device", value: path, reason: "\(error)") }
        self.fd = fd
        var ok = false
        defer { if !ok { fd.close() } }
        // Universal planes list the primary and cursor planes too; atomic implies them.
        let universal = drmSetClientCap(fd.rawValue, UInt64(DRM_CLIENT_CAP_UNIVERSAL_PLANES), 1) == 0
        atomic = allowAtomic && universal && drmSetClientCap(fd.rawValue, UInt64(DRM_CLIENT_CAP_ATOMIC), 1) == 0
        let output = try Self.findOutput(fd: fd, path: path, mode: wanted)
        connectorID = output.connector
        crtcID = output.crtc
        connectorName = output.name
        modeInfo = output.mode
        mode = Mode(width: Int(output.mode.hdisplay), height: Int(output.mode.vdisplay), refresh: Int(output.mode.vrefresh))
        let planes = universal ? Self.planes(fd: fd) : []
        plan = PlanePlan.choose(planes: planes, crtcIndex: output.crtcIndex, crtcID: crtcID, camera: camera)
            ?? PlanePlan(primary: 0, overlay: nil, picture: .converted, reason: "the driver lists no primary plane")
        if case .imported = plan.picture { imports.withLock { $0.importing = true } }
        if plan.primary == 0 || !atomic {
            // Legacy calls name the CRTC, not its primary plane.
            properties = nil
        } else {
            properties = (KMSProperties(fd: fd, object: connectorID, type: UInt32(DRM_MODE_OBJECT_CONNECTOR)),
                          KMSProperties(fd: fd, object: crtcID, type: UInt32(DRM_MODE_OBJECT_CRTC)),
                          KMSProperties(fd: fd, object: plan.primary, type: UInt32(DRM_MODE_OBJECT_PLANE)),
                          KMSProperties(fd: fd, object: plan.overlay ?? 0, type: UInt32(DRM_MODE_OBJECT_PLANE)))
        }
        saved = drmModeGetCrtc(fd.rawValue, crtcID)
        _ = drmSetMaster(fd.rawValue)  // may already be master; the mode set says if not
        do {
            for _ in 0..<2 { primaries.append(try Framebuffer.dumb(fd: fd, format: .xrgb8888, width: mode.width, height: mode.height)) }
            try setMode()
        } catch {
            release()
            throw DeviceError.setting(key: "preview.device", value: path, reason: "\(error)")
        }
        flipDone.pointee = 1
        ok = true
        ready = true
    }

    /// Where the picture goes: letterboxed into the whole screen on the primary plane;
    /// on an overlay, inside the 8-pixel edge strip the primary plane keeps for the
    /// recording frame; beside a card, into the part of the screen the card leaves.
    public var pictureBox: (x: Int, y: Int, width: Int, height: Int) {
        let inset = ScreenIndicators.thickness
        if showsCard {
            let area = ScreenCard.layout(width: mode.width, height: mode.height, inset: inset).picture
            let box = letterbox(source: picture, target: (area.width, area.height))
            return (box.x + area.x, box.y + area.y, box.width, box.height)
        }
        guard plan.overlay != nil else { return letterbox(source: picture, target: (mode.width, mode.height)) }
        let box = letterbox(source: picture, target: (mode.width - 2 * inset, mode.height - 2 * inset))
        return (box.x + inset, box.y + inset, box.width, box.height)
    }

    /// Whether a card is beside the picture (the last `show`'s indicators had one).
    private var showsCard = false

    /// The primary plane's `memory` as it is around the picture: cleared (the picture's
    /// old place, when the card came or went), the edge strip, the card.
    private func drawSurround(_ indicators: Indicators, into memory: UnsafeMutableRawPointer, buffer: Framebuffer) {
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: buffer.size)
        ScreenIndicators.draw(indicators, into: memory, pitch: buffer.pitch, width: mode.width, height: mode.height)
        if let card = indicators.card {
            card.draw(on: Canvas(memory: memory, pitch: buffer.pitch, width: mode.width, height: mode.height),
                      in: ScreenCard.layout(width: mode.width, height: mode.height, inset: ScreenIndicators.thickness).card)
        }
    }

    /// Sets the mode with the plan's planes; an overlay layout the driver refuses falls
    /// back to the next one (copied, then converted).
    private func setMode() throws {
        if case .copied(let format) = plan.picture {
            do {
                for _ in 0..<2 { overlays.append(try Framebuffer.dumb(fd: fd, format: format, width: picture.width, height: picture.height)) }
            } catch {
                fallBack("overlay buffers: \(error)")
            }
        }
        while true {
            let overlay = plan.overlay == nil ? nil : overlays.first
            let result = atomic ? atomicModeset(overlay: overlay) : legacyModeset(overlay: overlay)
            if result == 0 { return }
            guard plan.overlay != nil else {
                throw DeviceError.call("setting \(mode) on \(connectorName)", Errno(rawValue: -result))
            }
            fallBack("the driver refused the overlay (\(Errno(rawValue: -result)))")
        }
    }

    private func atomicModeset(overlay: Framebuffer?) -> Int32 {
        guard let properties, let request = AtomicRequest() else { return -ENOMEM }
        if modeBlob == 0 { _ = drmModeCreatePropertyBlob(fd.rawValue, &modeInfo, MemoryLayout<drmModeModeInfo>.size, &modeBlob) }
        request.set(connectorID, properties.connector, "CRTC_ID", UInt64(crtcID))
        request.set(crtcID, properties.crtc, "MODE_ID", UInt64(modeBlob))
        request.set(crtcID, properties.crtc, "ACTIVE", 1)
        request.plane(plan.primary, properties.primary, crtc: crtcID, framebuffer: primaries[0].id,
                      source: (mode.width, mode.height), onto: (0, 0, mode.width, mode.height))
        if let overlay, let plane = plan.overlay {
            request.plane(plane, properties.overlay, crtc: crtcID, framebuffer: overlay.id, source: picture, onto: pictureBox)
        }
        let tested = request.commit(fd: fd, test: true, modeset: true)
        guard tested == 0 else { return tested }
        return request.commit(fd: fd, modeset: true)
    }

    private func legacyModeset(overlay: Framebuffer?) -> Int32 {
        var connector = connectorID
        let result = drmModeSetCrtc(fd.rawValue, crtcID, primaries[0].id, 0, 0, &connector, 1, &modeInfo)
        guard result == 0 else { return result < 0 ? result : -Errno.current.rawValue }
        guard let overlay, let plane = plan.overlay else { return 0 }
        return setPlane(plane, framebuffer: overlay.id)
    }

    private func setPlane(_ plane: UInt32, framebuffer: UInt32) -> Int32 {
        let box = pictureBox
        let result = drmModeSetPlane(fd.rawValue, plane, framebuffer == 0 ? 0 : crtcID, framebuffer, 0, Int32(box.x), Int32(box.y),
                                     UInt32(box.width), UInt32(box.height), 0, 0,
                                     UInt32(picture.width) << 16, UInt32(picture.height) << 16)
        return result == 0 ? 0 : (result < 0 && result != -1 ? result : -Errno.current.rawValue)
    }

    /// Drops to the plainest layout (the primary plane, frames converted; the overlay
    /// off), says why, and hands back any camera buffer on the screen.
    private func fallBack(_ reason: String) {
        let before = plan
        if ready { switchOverlayOff() }
        plan.picture = .converted
        plan.overlay = nil
        imports.withLock { $0.importing = false }
        plan.reason = reason
        if let buffer = takeOnScreen() { giveBack(buffer) }
        primaryShows = [nil, nil]
        log.emit(.previewFallback, level: .warn, [("from", before.description), ("to", plan.description), ("reason", reason)])
    }

    /// Takes the overlay plane off the screen (a blocking commit, or SetPlane with no fb).
    private func switchOverlayOff() {
        guard let plane = plan.overlay else { return }
        if atomic, let properties, let request = AtomicRequest() {
            request.plane(plane, properties.overlay, crtc: crtcID, framebuffer: 0, source: (0, 0), onto: (0, 0, 0, 0))
            _ = request.commit(fd: fd)
        } else {
            _ = setPlane(plane, framebuffer: 0)
        }
    }

    private func takeOnScreen() -> SharedBuffer? { imports.withLock { imports in defer { imports.onScreen = nil }; return imports.onScreen } }

    /// Whether the camera's lent buffers are what the overlay shows.
    public var importsCameraBuffers: Bool { imports.withLock { $0.importing } }

    /// Where to give the camera's lent buffers back once they are off the screen; set before
    /// the camera lends the first one.
    public func giveBuffersBack(to handler: @escaping @Sendable (SharedBuffer) -> Void) {
        imports.withLock { $0.returnBuffer = handler }
    }

    /// Gives a lent buffer back to the camera (nothing when none was lent).
    public func giveBack(_ buffer: SharedBuffer) {
        imports.withLock { $0.returnBuffer }?(buffer)
    }

    /// Makes (once) the framebuffer for a lent camera buffer; call it while the loan's fd
    /// is valid (in `SharedBufferConsumer.offer`). A buffer the driver cannot scan out
    /// ends zero copy: the display falls back to copying frames (false).
    public func prepare(_ buffer: SharedBuffer) -> Bool {
        imports.withLock { [fd] imports in
            guard imports.importing else { return false }
            let key = buffer.generation << 8 | buffer.index
            if imports.imported[key] != nil { return true }
            // A reopened camera has new buffers: the old ones' framebuffers go (the one on
            // the screen stays until it is replaced).
            let shown = imports.onScreen.map { $0.generation << 8 | $0.index }
            for (old, framebuffer) in imports.imported where old >> 8 < buffer.generation && old != shown {
                framebuffer.destroy(fd: fd)
                imports.imported[old] = nil
            }
            do {
                imports.imported[key] = try Framebuffer.imported(fd: fd, dmabuf: buffer.fd, format: buffer.format.format, width: buffer.format.width,
                                                         height: buffer.format.height, pitch: buffer.format.bytesPerLine)
                return true
            } catch {
                imports.importing = false
                imports.failure = "\(error)"
                return false
            }
        }
    }

    /// Shows the next picture: `buffer` (a prepared camera buffer, when importing; the
    /// display gives it back once it is off the screen, or at once if it is not shown),
    /// else `frame`. Waits up to a frame for the previous flip (a flip still pending drops
    /// this picture: false). True once the flip that shows it has completed.
    public func show(frame: VideoFrame?, buffer: SharedBuffer?, indicators: Indicators, convert: Convert) -> Bool {
        var shownBuffer: SharedBuffer?
        defer { if let buffer, buffer != shownBuffer { giveBack(buffer) } }
        if flipDone.pointee == 0 && !waitForFlip(milliseconds: 50) { return false }
        if let failure = imports.withLock({ imports -> String? in defer { imports.failure = nil }; return imports.failure }) {
            fallBack(failure)
        }
        let primaryBack = 1 - primaryFront
        var primary: Framebuffer?
        var overlay: Framebuffer?
        showsCard = indicators.card != nil
        switch plan.picture {
        case .converted:
            guard let frame else { return false }
            let target = primaries[primaryBack]
            guard let memory = target.memory else { return false }
            // The bars and the card stay as they are drawn while the indicators are the
            // same; the edge strip is redrawn each time (a picture may reach into it).
            if primaryShows[primaryBack] != indicators {
                drawSurround(indicators, into: memory, buffer: target)
                primaryShows[primaryBack] = indicators
            }
            let box = pictureBox
            convert(frame, memory + box.y * target.pitch + box.x * 4, target.pitch, box.width, box.height)
            ScreenIndicators.draw(indicators, into: memory, pitch: target.pitch, width: mode.width, height: mode.height)
            primary = target
        case .copied:
            guard let frame, frame.width == picture.width, frame.height == picture.height else { return false }
            let target = overlays[1 - overlayFront]
            let copied = frame.planes.withUnsafeBytes {
                PixelConversion.fromI420($0, width: frame.width, height: frame.height, format: target.format, pitch: target.pitch, into: target.memory!)
            }
            guard copied else { return false }
            overlay = target
        case .imported:
            guard let buffer, let target = imports.withLock({ $0.imported[buffer.generation << 8 | buffer.index] }) else { return false }
            overlay = target
            shownBuffer = buffer
        }
        if plan.overlay != nil && primaryShows[primaryFront] != indicators {
            // Around an overlay the primary plane holds only the indicators: redrawn when they change.
            let target = primaries[primaryBack]
            if let memory = target.memory {
                drawSurround(indicators, into: memory, buffer: target)
                primaryShows[primaryBack] = indicators
                primary = target
            }
        }
        guard flip(primary: primary, overlay: overlay) else {
            shownBuffer = nil
            return false
        }
        if primary != nil { primaryFront = primaryBack }
        if overlay != nil, case .copied = plan.picture { overlayFront = 1 - overlayFront }
        if let shownBuffer {
            if let previous = imports.withLock({ imports -> SharedBuffer? in defer { imports.onScreen = shownBuffer }; return imports.onScreen }) {
                giveBack(previous)
            }
        }
        shown += 1
        return true
    }

    /// Puts the new buffers on the screen at the next vblank and waits for it.
    private func flip(primary: Framebuffer?, overlay: Framebuffer?) -> Bool {
        if atomic, let properties, let request = AtomicRequest() {
            if let primary { request.set(plan.primary, properties.primary, "FB_ID", UInt64(primary.id)) }
            if let overlay, let plane = plan.overlay {
                // The first imported buffer switches the plane on, so give it all of its state.
                request.plane(plane, properties.overlay, crtc: crtcID, framebuffer: overlay.id, source: picture, onto: pictureBox)
            }
            flipDone.pointee = 0
            let result = request.commit(fd: fd, event: UnsafeMutableRawPointer(flipDone))
            guard result == 0 else {
                flipDone.pointee = 1
                if result != -EBUSY, overlay != nil { fallBack("the driver refused a flip (\(Errno(rawValue: -result)))") }
                return false
            }
            return waitForFlip(milliseconds: 100)
        }
        if let primary {
            flipDone.pointee = 0
            guard drmModePageFlip(fd.rawValue, crtcID, primary.id, onair_drm_page_flip_event(), flipDone) == 0 else {
                flipDone.pointee = 1
                return false
            }
            guard waitForFlip(milliseconds: 100) else { return false }
        }
        if let overlay, let plane = plan.overlay {
            // Legacy SetPlane returns once the plane is updated (drivers wait for the vblank).
            let result = setPlane(plane, framebuffer: overlay.id)
            guard result == 0 else {
                fallBack("SetPlane failed (\(Errno(rawValue: -result)))")
                return false
            }
        }
        return true
    }

    private func waitForFlip(milliseconds: Int32) -> Bool {
        if let ready = try? Poll.wait(fd, for: .readable, timeoutMs: milliseconds), !ready.isEmpty {
            _ = onair_drm_handle_events(fd.rawValue, flipDone)
        }
        return flipDone.pointee != 0
    }

    private func release() {
        switchOverlayOff()
        if let saved {
            // Give the screen back as it was (the console, a splash), or dark if it was.
            var connector = connectorID
            var mode = saved.pointee.mode
            if saved.pointee.buffer_id != 0 {
                _ = drmModeSetCrtc(fd.rawValue, saved.pointee.crtc_id, saved.pointee.buffer_id, saved.pointee.x, saved.pointee.y, &connector, 1, &mode)
            } else {
                _ = drmModeSetCrtc(fd.rawValue, saved.pointee.crtc_id, 0, 0, 0, nil, 0, nil)
            }
            drmModeFreeCrtc(saved)
            self.saved = nil
        }
        if let buffer = takeOnScreen() { giveBack(buffer) }
        let cameraBuffers = imports.withLock { imports -> [Framebuffer] in
            defer { imports.imported = [:]; imports.importing = false }
            return Array(imports.imported.values)
        }
        for buffer in primaries + overlays + cameraBuffers { buffer.destroy(fd: fd) }
        primaries = []
        overlays = []
        if modeBlob != 0 { _ = drmModeDestroyPropertyBlob(fd.rawValue, modeBlob) }
        _ = drmDropMaster(fd.rawValue)
    }

    deinit {
        defer { flipDone.deallocate() }
        guard ready else { return }
        if flipDone.pointee == 0 { _ = waitForFlip(milliseconds: 100) }
        release()
        fd.close()
    }
}
