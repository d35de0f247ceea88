#if canImport(Glibc)
import Glibc  // sin(3), from libm: arithmetic, not a system call
#endif
import Media

/// The synthetic camera's picture, and the decoder that reads it back from decoded
/// output. The picture carries everything needed to measure a pipeline from its output
/// alone: the frame index (dropped or duplicated frames) and a white flash on the first
/// frame of every second (A/V sync against the microphone's beep).
///
///     rows 0 ..< band   32 blocks: block k = bit (31 − k) of the frame index
///                       (luma 235 for 1, 16 for 0; chroma neutral)
///     rows band ..< H   a moving pattern, mean luma ≈ 62; white (235) on flash frames
public struct SyntheticPattern: Sendable {
    public static let one: UInt8 = 235
    public static let zero: UInt8 = 16
    public let width: Int
    public let height: Int
    public let fps: Int
    /// Height of the index band: H/16 rounded down to an even number.
    public let bandHeight: Int
    private let ramp: [UInt8]
    static let period = 128

    public init(width: Int, height: Int, fps: Int) {
        self.width = width
        self.height = height
        self.fps = fps
        bandHeight = (height / 16) & ~1
        // A triangle ramp 30…93 repeated along the row; rows shift it to move diagonally.
        ramp = (0..<(width + Self.period)).map { j in
            let phase = j % Self.period
            return UInt8(30 + (phase < 64 ? phase : 127 - phase))
        }
    }

    /// The first frame at or after each whole second of the source clock is a flash.
    public func isFlash(_ index: Int64) -> Bool {
        index == 0 || index / Int64(fps) != (index - 1) / Int64(fps)
    }

    /// Capture time of frame `index` relative to the source start, in ns.
    public func offset(of index: Int64) -> Int64 {
        rescale(index, from: Int64(fps), to: Timescale.nanoseconds)
    }

    public func frame(index: Int64, captureTime: Int64) -> VideoFrame {
        var planes = [UInt8](repeating: 128, count: VideoFrame.byteCount(width: width, height: height))
        let flash = isFlash(index)
        planes.withUnsafeMutableBufferPointer { buffer in
            let y = buffer.baseAddress!
            let blockWidth = width / 32
            for row in 0..<bandHeight {
                let line = y + row * width
                line.update(repeating: Self.zero, count: width)
                for k in 0..<32 where (UInt32(truncatingIfNeeded: index) >> UInt32(31 - k)) & 1 == 1 {
                    (line + k * blockWidth).update(repeating: Self.one, count: blockWidth)
                }
            }
            ramp.withUnsafeBufferPointer { ramp in
                for row in bandHeight..<height {
                    let line = y + row * width
                    if flash {
                        line.update(repeating: Self.one, count: width)
                    } else {
                        let shift = (row + 4 * Int(index % Int64(Self.period))) % Self.period
                        line.update(from: ramp.baseAddress! + shift, count: width)
                    }
                }
            }
            // Chroma below the band: a blue-ish tint that drifts, so the picture is not grey.
            let cw = width / 2, chromaRows = height / 2, bandRows = bandHeight / 2
            if !flash {
                let u = y + width * height, v = u + cw * chromaRows
                for row in bandRows..<chromaRows {
                    (u + row * cw).update(repeating: UInt8(140 + (row + Int(index)) % 24), count: cw)
                    (v + row * cw).update(repeating: 118, count: cw)
                }
            }
        }
        return VideoFrame(width: width, height: height, planes: planes, captureTime: captureTime, index: index)
    }

    /// Reads the frame index back from a decoded luma plane of this pattern's size; nil
    /// when a block is neither clearly dark nor clearly bright (not this pattern, or
    /// damaged). Samples the middle of each block to stay clear of coding artefacts.
    public static func decodeIndex(luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> UInt32? {
        let band = (height / 16) & ~1
        guard band >= 2, luma.count >= width * height else { return nil }
        let blockWidth = width / 32
        var value: UInt32 = 0
        for k in 0..<32 {
            var sum = 0, count = 0
            for row in (band / 4)..<max(band / 4 + 1, band * 3 / 4) {
                for x in (k * blockWidth + blockWidth / 4)..<(k * blockWidth + blockWidth * 3 / 4) {
                    sum += Int(luma[row * width + x]); count += 1
                }
            }
            let mean = sum / max(count, 1)
            if mean > 180 { value |= 1 << UInt32(31 - k) } else if mean > 70 { return nil }
        }
        return value
    }

    /// Mean luma below the band: a flash frame reads near 235, others far below 160.
    public static func meanLumaBelowBand(luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> Int {
        let band = (height / 16) & ~1
        var sum = 0
        for row in stride(from: band, to: height, by: 2) {
            for x in stride(from: 0, to: width, by: 4) { sum += Int(luma[row * width + x]) }
        }
        let count = ((height - band + 1) / 2) * ((width + 3) / 4)
        return sum / max(count, 1)
    }
}

/// The synthetic microphone's sound: silence, except a 1 kHz sine at −6 dBFS during the
/// first 100 ms of every whole second, starting on the same instant as the flash frame.
public struct SyntheticTone: Sendable {
    public let sampleRate: Int
    public let channels: Int
    public static let frequency = 1000
    /// −6 dBFS: half of full scale.
    public static let amplitude = 16384.0

    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// `count` sample frames starting at sample `first` (counted from the source start).
    public func samples(from first: Int64, count: Int) -> [Int16] {
        var out = [Int16](repeating: 0, count: count * channels)
        let beepLength = Int64(sampleRate / 10)
        for i in 0..<count {
            let within = (first + Int64(i)) % Int64(sampleRate)
            guard within < beepLength else { continue }
            // Phase from the second's start keeps every beep identical.
            let phase = Double(within * Int64(Self.frequency) % Int64(sampleRate)) / Double(sampleRate)
            let value = Int16((Self.amplitude * sin(2 * Double.pi * phase)).rounded())
            for c in 0..<channels { out[i * channels + c] = value }
        }
        return out
    }
}
