/// Camera buffers → I420, the one picture layout the pipeline carries, and back into a
/// display plane's YUV buffer. Each is one pass over the source (the one copy a frame
/// costs when it leaves the driver's buffer), honouring the line stride (`bytesperline`,
/// a dumb buffer's pitch).
public enum PixelConversion {
    /// Converts `source` (`format`, `width`×`height`, `stride` bytes per line of the first
    /// plane) into `planes` (I420, tightly packed). False when the buffer is too short.
    public static func toI420(_ source: UnsafeRawBufferPointer, format: FourCC, width: Int, height: Int, stride: Int,
                              into planes: inout [UInt8]) -> Bool {
        planes.withUnsafeMutableBufferPointer { toI420(source, format: format, width: width, height: height, stride: stride, into: $0) }
    }

    /// The same into memory the caller owns (a frame's new, uninitialised planes: no
    /// second copy, no zero fill).
    public static func toI420(_ source: UnsafeRawBufferPointer, format: FourCC, width: Int, height: Int, stride: Int,
                              into out: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        let lumaSize = width * height, chromaWidth = width / 2, chromaHeight = height / 2
        guard out.count == lumaSize + 2 * chromaWidth * chromaHeight, let src = source.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            return false
        }
        do {  // the one pass
            let y = out.baseAddress!, u = y + lumaSize, v = u + chromaWidth * chromaHeight
            switch format {
            case .yu12, .nv12:
                let chromaStride = format == .yu12 ? stride / 2 : stride
                let needed = stride * height + (format == .yu12 ? 2 * chromaStride * chromaHeight : stride * chromaHeight)
                guard source.count >= needed else { return false }
                for row in 0..<height { (y + row * width).update(from: src + row * stride, count: width) }
                let chroma = src + stride * height
                if format == .yu12 {
                    let vPlane = chroma + chromaStride * chromaHeight
                    for row in 0..<chromaHeight {
                        (u + row * chromaWidth).update(from: chroma + row * chromaStride, count: chromaWidth)
                        (v + row * chromaWidth).update(from: vPlane + row * chromaStride, count: chromaWidth)
                    }
                } else {
                    for row in 0..<chromaHeight {
                        let line = chroma + row * stride
                        for x in 0..<chromaWidth {
                            u[row * chromaWidth + x] = line[2 * x]
                            v[row * chromaWidth + x] = line[2 * x + 1]
                        }
                    }
                }
                return true
            case .yuyv, .uyvy:
                guard source.count >= stride * height else { return false }
                // Packed 4:2:2 (two pixels in four bytes); chroma of two lines averaged into one.
                let lumaOffset = format == .yuyv ? 0 : 1, uOffset = format == .yuyv ? 1 : 0, vOffset = uOffset + 2
                for row in 0..<height {
                    let line = src + row * stride
                    let out = y + row * width
                    for x in 0..<width { out[x] = line[2 * x + lumaOffset] }
                }
                for row in 0..<chromaHeight {
                    let a = src + 2 * row * stride, b = a + stride
                    for x in 0..<chromaWidth {
                        u[row * chromaWidth + x] = UInt8((UInt16(a[4 * x + uOffset]) + UInt16(b[4 * x + uOffset]) + 1) / 2)
                        v[row * chromaWidth + x] = UInt8((UInt16(a[4 * x + vOffset]) + UInt16(b[4 * x + vOffset]) + 1) / 2)
                    }
                }
                return true
            default:
                return false
            }
        }
    }

    /// I420 `planes` (tightly packed, `width`×`height`) into `out`, a buffer in `format`
    /// whose luma rows are `pitch` bytes apart (planes laid out as `yuvLayout` says). False
    /// for a format that is not NV12, YU12, YUYV or UYVY.
    public static func fromI420(_ planes: UnsafeRawBufferPointer, width: Int, height: Int, format: FourCC, pitch: Int,
                                into out: UnsafeMutableRawPointer) -> Bool {
        let lumaSize = width * height, chromaWidth = width / 2, chromaHeight = height / 2
        guard planes.count >= lumaSize + 2 * chromaWidth * chromaHeight, let base = planes.baseAddress?.assumingMemoryBound(to: UInt8.self),
              let layout = yuvLayout(format, pitch: pitch, height: height) else { return false }
        let y = base, u = y + lumaSize, v = u + chromaWidth * chromaHeight
        let dst = out.assumingMemoryBound(to: UInt8.self)
        switch format {
        case .yu12, .nv12:
            for row in 0..<height { (dst + row * pitch).update(from: y + row * width, count: width) }
            if format == .yu12 {
                let du = dst + layout.offsets[1], dv = dst + layout.offsets[2], chromaPitch = layout.pitches[1]
                for row in 0..<chromaHeight {
                    (du + row * chromaPitch).update(from: u + row * chromaWidth, count: chromaWidth)
                    (dv + row * chromaPitch).update(from: v + row * chromaWidth, count: chromaWidth)
                }
            } else {
                for row in 0..<chromaHeight {
                    let line = dst + layout.offsets[1] + row * pitch
                    for x in 0..<chromaWidth {
                        line[2 * x] = u[row * chromaWidth + x]
                        line[2 * x + 1] = v[row * chromaWidth + x]
                    }
                }
            }
        default:  // .yuyv, .uyvy: each chroma row serves two luma rows
            let lumaOffset = format == .yuyv ? 0 : 1, uOffset = format == .yuyv ? 1 : 0, vOffset = uOffset + 2
            for row in 0..<height {
                let line = dst + row * pitch, luma = y + row * width
                let cu = u + (row / 2) * chromaWidth, cv = v + (row / 2) * chromaWidth
                for x in 0..<width { line[2 * x + lumaOffset] = luma[x] }
                for x in 0..<chromaWidth {
                    line[4 * x + uOffset] = cu[x]
                    line[4 * x + vOffset] = cv[x]
                }
            }
        }
        return true
    }
}
