/// Clockwise rotation for cameras mounted sideways (the talk streams portrait by
/// rotating 90°).
public enum Rotation: Int, Sendable, CaseIterable {
    case none = 0, quarter = 90, half = 180, threeQuarters = 270

    /// The encoded picture size for a camera picture of `width`×`height`.
    public func outputSize(width: Int, height: Int) -> (width: Int, height: Int) {
        switch self {
        case .none, .half: return (width, height)
        case .quarter, .threeQuarters: return (height, width)
        }
    }
}

extension VideoFrame {
    /// This frame turned clockwise by `rotation`; O(pixels).
    public func rotated(_ rotation: Rotation) -> VideoFrame {
        if rotation == .none { return self }
        let (outW, outH) = rotation.outputSize(width: width, height: height)
        var out = [UInt8](repeating: 0, count: planes.count)
        planes.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                Self.rotatePlane(src.baseAddress!, width: width, height: height,
                                 into: dst.baseAddress!, rotation)
                let cw = width / 2, ch = height / 2
                let luma = width * height, chroma = cw * ch
                Self.rotatePlane(src.baseAddress! + luma, width: cw, height: ch,
                                 into: dst.baseAddress! + luma, rotation)
                Self.rotatePlane(src.baseAddress! + luma + chroma, width: cw, height: ch,
                                 into: dst.baseAddress! + luma + chroma, rotation)
            }
        }
        return VideoFrame(width: outW, height: outH, planes: out, captureTime: captureTime, index: index)
    }

    private static func rotatePlane(_ src: UnsafePointer<UInt8>, width: Int, height: Int,
                                    into dst: UnsafeMutablePointer<UInt8>, _ rotation: Rotation) {
        switch rotation {
        case .none:
            dst.update(from: src, count: width * height)
        case .half:
            let n = width * height
            for i in 0..<n { dst[n - 1 - i] = src[i] }
        case .quarter:
            // Source (x, y) lands at (height-1-y, x) in a height-wide picture.
            for y in 0..<height {
                let row = src + y * width
                let column = height - 1 - y
                for x in 0..<width { dst[x * height + column] = row[x] }
            }
        case .threeQuarters:
            // Source (x, y) lands at (y, width-1-x).
            for y in 0..<height {
                let row = src + y * width
                for x in 0..<width { dst[(width - 1 - x) * height + y] = row[x] }
            }
        }
    }
}
