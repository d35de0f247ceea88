import CDRM
#if canImport(Glibc)
import Glibc
#endif

/// A KMS framebuffer and the GEM buffer behind it: a dumb buffer the CPU draws into, or a
/// camera DMABUF imported through PRIME (drm_prime.c: the buffer stays alive while the
/// framebuffer holds it, whatever happens to the camera's fd).
struct Framebuffer {
    var id: UInt32
    var handle: UInt32
    var format: FourCC
    var width: Int
    var height: Int
    /// Bytes per luma row.
    var pitch: Int
    /// The mapping of a dumb buffer; nil for an imported one.
    var memory: UnsafeMutableRawPointer?
    var size: Int

    /// A dumb buffer for a whole `width`×`height` picture in `format`, mapped and filled
    /// with black.
    static func dumb(fd: Int32, format: FourCC, width: Int, height: Int) throws -> Framebuffer {
        guard let shape = dumbBufferShape(format, height: height) else { throw DeviceError("no dumb buffer layout for \(format)") }
        var handle: UInt32 = 0, pitch: UInt32 = 0, size: UInt64 = 0
        let created = onair_drm_create_dumb(fd, UInt32(width), UInt32(shape.rows), UInt32(shape.bitsPerPixel), &handle, &pitch, &size)
        guard created == 0 else { throw DeviceError("dumb buffer \(width)x\(height) \(format): \(String(cString: strerror(created)))") }
        var buffer = Framebuffer(id: 0, handle: handle, format: format, width: width, height: height, pitch: Int(pitch), memory: nil, size: Int(size))
        do {
            buffer.id = try addFramebuffer(fd: fd, handle: handle, format: format, width: width, height: height, pitch: Int(pitch))
        } catch {
            onair_drm_destroy_dumb(fd, handle)
            throw error
        }
        var offset: UInt64 = 0
        guard onair_drm_map_dumb(fd, handle, &offset) == 0,
              let memory = mmap(nil, Int(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset)), memory != MAP_FAILED else {
            let reason = String(cString: strerror(errno))
            buffer.destroy(fd: fd)
            throw DeviceError("mapping a dumb buffer: \(reason)")
        }
        buffer.memory = memory
        buffer.fillBlack()
        return buffer
    }

    /// The camera's buffer as a framebuffer, scanned out where the camera wrote it.
    static func imported(fd: Int32, dmabuf: Int32, format: FourCC, width: Int, height: Int, pitch: Int) throws -> Framebuffer {
        var handle: UInt32 = 0
        guard drmPrimeFDToHandle(fd, dmabuf, &handle) == 0 else {
            throw DeviceError("importing the camera's DMABUF: \(String(cString: strerror(errno)))")
        }
        do {
            let id = try addFramebuffer(fd: fd, handle: handle, format: format, width: width, height: height, pitch: pitch)
            return Framebuffer(id: id, handle: handle, format: format, width: width, height: height, pitch: pitch, memory: nil, size: 0)
        } catch {
            _ = drmCloseBufferHandle(fd, handle)
            throw error
        }
    }

    /// DRM_IOCTL_MODE_ADDFB2 with the planes where `yuvLayout` puts them.
    private static func addFramebuffer(fd: Int32, handle: UInt32, format: FourCC, width: Int, height: Int, pitch: Int) throws -> UInt32 {
        let layout = yuvLayout(format, pitch: pitch, height: height) ?? ([pitch], [0])
        var handles = [UInt32](repeating: 0, count: 4), pitches = handles, offsets = handles
        for plane in layout.pitches.indices {
            handles[plane] = handle
            pitches[plane] = UInt32(layout.pitches[plane])
            offsets[plane] = UInt32(layout.offsets[plane])
        }
        var id: UInt32 = 0
        let added = drmModeAddFB2(fd, UInt32(width), UInt32(height), format.rawValue, handles, pitches, offsets, &id, 0)
        guard added == 0 else { throw DeviceError("AddFB2 \(width)x\(height) \(format): \(String(cString: strerror(added < 0 ? -added : errno)))") }
        return id
    }

    /// Black in the buffer's own format (YUV black is luma 16, chroma 128; zero is green).
    func fillBlack() {
        guard let memory else { return }
        switch format {
        case .nv12, .yu12:
            memset(memory, 16, pitch * height)
            memset(memory + pitch * height, 128, size - pitch * height)
        case .yuyv, .uyvy:
            let pattern: UInt32 = format == .yuyv ? 0x8010_8010 : 0x1080_1080
            let words = memory.assumingMemoryBound(to: UInt32.self)
            for i in 0..<(size / 4) { words[i] = pattern }
        default:
            memset(memory, 0, size)
        }
    }

    func destroy(fd: Int32) {
        if let memory { munmap(memory, size) }
        if id != 0 { _ = drmModeRmFB(fd, id) }
        if size > 0 { onair_drm_destroy_dumb(fd, handle) } else { _ = drmCloseBufferHandle(fd, handle) }  // dumb, or imported
    }
}
