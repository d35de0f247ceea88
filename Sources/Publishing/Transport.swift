/// Where published objects go. One instance per worker thread, so an implementation may
/// keep a connection open between calls (keep-alive) without locking.
public protocol Transport: AnyObject {
    /// Stores `body` at `path` (relative to the destination's root); throws on anything
    /// but a 2xx. With a `condition`, only if the object is as the caller last read it
    /// (RFC 9110 §13.1.1 If-Match, §13.1.2 If-None-Match: *); a 412 says it is not.
    func put(_ path: String, body: [UInt8], contentType: String, cacheControl: String, condition: WriteCondition?) throws
    /// The object at `path` and its ETag; nil when there is none (404).
    func get(_ path: String) throws -> StoredObject?
}

extension Transport {
    public func put(_ path: String, body: [UInt8], contentType: String, cacheControl: String) throws {
        try put(path, body: body, contentType: contentType, cacheControl: cacheControl, condition: nil)
    }
}

/// A conditional write: only over the version with this ETag, or only where there is none.
public enum WriteCondition: Sendable, Equatable {
    case ifMatch(String)
    case ifNoneExists
}

public struct StoredObject: Sendable, Equatable {
    public var body: [UInt8]
    public var etag: String?
    public init(body: [UInt8], etag: String?) {
        self.body = body
        self.etag = etag
    }
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
