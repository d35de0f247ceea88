/// What a StreamWriter has just made durable, for whoever publishes the stream further.
public enum StreamEvent: Sendable, Equatable {
    /// init.mp4 and the first index.m3u8 are stored.
    case started(id: String)
    /// index.m3u8 was rewritten (a higher BANDWIDTH or FRAME-RATE, or the final figures).
    case multivariantRewritten(id: String)
    /// A segment of `bytes` is stored and listed in its rendition's playlists (the live
    /// bit rate counts them, without a stat); `rendition` is its folder ("" without a
    /// ladder).
    case segmentStored(id: String, sequence: Int, bytes: Int, rendition: String = "")
    /// Every playlist carries ENDLIST.
    case ended(id: String)
}
