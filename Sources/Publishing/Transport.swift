/// Where published objects go. One instance per worker thread, so an implementation may
/// keep a connection open between calls (keep-alive) without locking.
public protocol Transport: AnyObject {
    /// Stores `body` at `path` (relative to the destination's root); throws on anything
    /// but a 2xx.
    func put(_ path: String, body: [UInt8], contentType: String, cacheControl: String) throws
}

public struct UploadError: Error, CustomStringConvertible, Equatable {
    /// The HTTP status, when the server answered at all.
    public var status: Int?
    public var message: String
    public init(status: Int?, message: String) {
        self.status = status
        self.message = message
    }
    public var description: String { status.map { "HTTP \($0): \(message)" } ?? message }
}
