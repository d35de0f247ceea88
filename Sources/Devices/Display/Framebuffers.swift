import CDRM
import System

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
    var mapping: MemoryMap?
    var size: Int
    var memory: UnsafeMutableRawPointer? { mapping?.address }

    /// A dumb buffer for a whole `width`×`height` picture in `format`, mapped and filled
    /// with black.
    static func dumb(fd: FileDescriptor, format: FourCC, width: Int, height: Int) throws -> Framebuffer {
        guard let shape = dumbBufferShape(format, height: height) else { throw DeviceError.noLayout(format) }
        var handle: UInt32 = 0, pitch: UInt32 = 0, size: UInt64 = 0
        let created = onair_drm_create_dumb(fd.rawValue, UInt32(width), UInt32(shape.rows), UInt32(shape.bitsPerPixel), &handle, &pitch, &size)
        guard created == 0 else { throw DeviceError.call("dumb buffer \(width)x\(height) \(format)", Errno(rawValue: created)) }
        var buffer = Framebuffer(id: 0, handle: handle, format: format, width: width, height: height, pitch: Int(pitch), mapping: nil, size: Int(size))
        do {
            buffer.id = try addFramebuffer(fd: fd, handle: handle, format: format, width: width, height: height, pitch: Int(pitch))
        } catch {
            onair_drm_destroy_dumb(fd.rawValue, handle)
            throw error
        }
        var offset: UInt64 = 0
        do {
            let mapped = onair_drm_map_dumb(fd.rawValue, handle, &offset)
            guard mapped == 0 else { throw Errno(rawValue: mapped) }
            buffer.mapping = try MemoryMap(fd, length: Int(size), offset: Int64(offset), writable: true)
        } catch {
            buffer.destroy(fd: fd)
            throw DeviceError.call("mapping a dumb buffer", error as? Errno ?? .ioError)
        }
        buffer.fillBlack()
        return buffer
    }

    /// The camera's buffer as a framebuffer, scanned out where the camera wrote it.
    static func imported(fd: FileDescriptor, dmabuf: FileDescriptor, format: FourCC, width: Int, height: Int, pitch: Int) throws -> Framebuffer {
        var handle: UInt32 = 0
        guard drmPrimeFDToHandle(fd.rawValue, dmabuf.rawValue, &handle) == 0 else {
            throw DeviceError.call("importing the camera's DMABUF", Errno.current)
        }
        do {
            let id = try addFramebuffer(fd: fd, handle: handle, format: format, width: width, height: height, pitch: pitch)
            return Framebuffer(id: id, handle: handle, format: format, width: width, height: height, pitch: pitch, mapping: nil, size: 0)
        } catch {
            _ = drmCloseBufferHandle(fd.rawValue, handle)
            throw error
        }
    }

    /// DRM_IOCTL_MODE_ADDFB2 with the planes where `yuvLayout` puts them.
    private static func addFramebuffer(fd: FileDescriptor, handle: UInt32, format: FourCC, width: Int, height: Int, pitch: Int) throws -> UInt32 {
        let layout = yuvLayout(format, pitch: pitch, height: height) ?? ([pitch], [0])
        var handles = [UInt32](repeating: 0, count: 4), pitches = handles, offsets = handles
        for plane in layout.pitches.indices {
            handles[plane] = handle
            pitches[plane] = UInt32(layout.pitches[plane])
            offsets[plane] = UInt32(layout.offsets[plane])
        }
        var id: UInt32 = 0
        let added = drmModeAddFB2(fd.rawValue, UInt32(width), UInt32(height), format.rawValue, handles, pitches, offsets, &id, 0)
        guard added == 0 else { throw DeviceError.call("AddFB2 \(width)x\(height) \(format)", added < 0 ? Errno(rawValue: -added) : Errno.current) }
        return id
    }

    /// Black in the buffer's own format (YUV black is luma 16, chroma 128; zero is green).
    func fillBlack() {
        guard let memory else { return }
        switch format {
        case .nv12, .yu12:
            memory.initializeMemory(as: UInt8.self, repeating: 16, count: pitch * height)
            (memory + pitch * height).initializeMemory(as: UInt8.self, repeating: 128, count: size - pitch * height)
        case .yuyv, .uyvy:
            let pattern: UInt32 = format == .yuyv ? 0x8010_8010 : 0x1080_1080
            let words = memory.assumingMemoryBound(to: UInt32.self)
            for i in 0..<(size / 4) { words[i] = pattern }
        default:
            memory.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        }
    }

    func destroy(fd: FileDescriptor) {
        mapping?.unmap()
        if id != 0 { _ = drmModeRmFB(fd.rawValue, id) }
        if size > 0 { onair_drm_destroy_dumb(fd.rawValue, handle) } else { _ = drmCloseBufferHandle(fd.rawValue, handle) }  // dumb, or imported
    }
}
