import Logging

/// What the destinations log: one line each, naming the destination, never its key.
extension Event {
    public static let destinationConnecting = Event("destination.connecting")
    /// The server took the publish: the platform has the stream.
    public static let destinationLive = Event("destination.live", console: true)
    /// The connection failed or was refused; it is tried again (`retry_in_s`).
    public static let destinationFailed = Event("destination.failed", console: true)
    /// The server took the stream slower than it was made: pictures dropped to the next IDR.
    public static let destinationDropped = Event("destination.dropped")
    /// The broadcast ended cleanly (FCUnpublish, deleteStream).
    public static let destinationEnded = Event("destination.ended", console: true)
    /// Settings that cannot work: the destination is left out.
    public static let destinationUnusable = Event("destination.unusable", console: true)
    /// The stream breaks a limit of the destination's platform (its preset): said once at
    /// the start; the stream is sent all the same.
    public static let destinationUnsuited = Event("destination.unsuited", console: true)
}
