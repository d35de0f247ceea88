/// Why a camera cannot stream, said with the device node.
public enum CameraError: Error, CustomStringConvertible, Equatable {
    /// The node (its card and driver) is not a video capture device with streaming I/O.
    case notACamera(path: String, card: String, driver: String)
    /// No node under /dev is a camera: the ones looked at (codecs and metadata nodes).
    case noCamera(seen: [String])
    /// None of the formats onair reads is offered (the ones it offers).
    case noUsableFormat(path: String, offered: [FourCC])
    /// The camera sends MJPEG and onair has no decoder for it.
    case noDecoder(path: String)
    /// S_FMT granted another format, or an odd size, for the one asked.
    case grantedOther(path: String, granted: GrantedFormat, asked: FourCC, size: Size)
    /// REQBUFS gave fewer than the two buffers streaming needs.
    case tooFewBuffers(path: String, count: Int)
    /// A reopened camera came back with another format than the stream has.
    case cameBackDifferent(path: String, granted: GrantedFormat)

    public var description: String {
        switch self {
        case .notACamera(let path, let card, let driver):
            return "\(path) (\(card), \(driver)) is not a video capture device with streaming I/O"
        case .noCamera(let seen):
            return seen.isEmpty ? "no V4L2 device under /dev" : "no camera among \(seen.joined(separator: ", ")) (codec and metadata nodes are skipped)"
        case .noUsableFormat(let path, let offered):
            return "\(path) offers none of NV12, YU12, YUYV, UYVY, MJPG (it has \(offered.map(\.description).joined(separator: ", ")))"
        case .noDecoder(let path): return "\(path): MJPEG needs a decoder"
        case .grantedOther(let path, let granted, let asked, let size):
            return "\(path) granted \(granted.format) \(granted.width)x\(granted.height) for \(asked) \(size)"
        case .tooFewBuffers(let path, let count): return "\(path) gave \(count) buffers; streaming needs 2 or more"
        case .cameBackDifferent(let path, let granted):
            return "\(path) came back as \(granted.format) \(granted.width)x\(granted.height)"
        }
    }
}
