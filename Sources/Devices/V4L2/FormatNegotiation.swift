/// Choosing what to ask a camera for: the format, size and frame interval closest to what
/// the stream wants, from what the driver enumerates (ENUM_FMT, ENUM_FRAMESIZES,
/// ENUM_FRAMEINTERVALS). Pure, so every rule is tested without a device.
public enum FormatNegotiation {
    /// Formats onair can take, best first: 4:2:0 planar needs one copy, packed 4:2:2 a
    /// conversion, MJPEG a decode.
    public static let preference: [FourCC] = [.nv12, .yu12, .yuyv, .uyvy, .mjpeg]

    public struct Plan: Sendable, Equatable {
        public var format: FourCC
        public var size: Size
        /// nil when the driver does not list intervals (S_PARM is still tried).
        public var interval: Fraction?
    }

    /// Picks, in this order of importance: the size nearest the one wanted (exact, else
    /// the nearest area, a larger one on a tie), a rate at least the one wanted (else the
    /// fastest), then the format higher in `preference`. So a webcam that gives YUYV at
    /// 10 fps and MJPEG at 30 fps for 720p streams MJPEG at 30 fps.
    public static func plan(formats: [FourCC], wanted: Size, fps: Int,
                            sizes: (FourCC) throws -> FrameSizes?,
                            intervals: (FourCC, Size) throws -> FrameIntervals?) rethrows -> Plan? {
        var best: (plan: Plan, score: [Int])?
        for (rank, format) in preference.enumerated() where formats.contains(format) {
            let size = nearest(wanted, in: try sizes(format))
            let listed = try intervals(format, size)
            let interval = listed.map { nearest(fps: fps, in: $0) }
            let shortfall = interval.map { max(0, fps * 1000 - Int(($0.fps * 1000).rounded())) } ?? 0
            let area = abs(size.width * size.height - wanted.width * wanted.height)
            let smaller = size.width * size.height < wanted.width * wanted.height ? 1 : 0
            let score = [area, smaller, shortfall, rank]
            if best == nil || score.lexicographicallyPrecedes(best!.score) {
                best = (Plan(format: format, size: size, interval: interval), score)
            }
        }
        return best?.plan
    }

    static func nearest(_ wanted: Size, in sizes: FrameSizes?) -> Size {
        switch sizes {
        case nil:
            return wanted  // S_FMT will adjust to what the driver can do
        case .discrete(let list)?:
            return list.min { a, b in
                let da = abs(a.width * a.height - wanted.width * wanted.height)
                let db = abs(b.width * b.height - wanted.width * wanted.height)
                return da != db ? da < db : a.width * a.height > b.width * b.height
            } ?? wanted
        case .stepwise(let min, let max, let step)?:
            func clamp(_ value: Int, _ low: Int, _ high: Int, _ step: Int) -> Int {
                let inside = Swift.min(Swift.max(value, low), high)
                return low + ((inside - low) / step) * step
            }
            return Size(clamp(wanted.width, min.width, max.width, step.width), clamp(wanted.height, min.height, max.height, step.height))
        }
    }

    /// The listed interval nearest `fps` that is not slower than it, else the fastest.
    static func nearest(fps: Int, in intervals: FrameIntervals) -> Fraction {
        let wanted = Fraction(1, fps)
        switch intervals {
        case .discrete(let list):
            let fastEnough = list.filter { $0.fps + 0.001 >= Double(fps) }
            if let slowest = fastEnough.min(by: { $0.fps < $1.fps }) { return slowest }
            return list.max { $0.fps < $1.fps } ?? wanted
        case .stepwise(let fastest, let slowest):
            if Double(fps) > fastest.fps { return fastest }
            if Double(fps) < slowest.fps { return slowest }
            return wanted
        }
    }
}
