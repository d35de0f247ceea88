import Files
import HTTP
import System

/// Why a fetch stopped, in one line.
public struct FetchError: Error, CustomStringConvertible, Equatable {
    public var description: String
    /// The HTTP status, when a server answered with one.
    public var status: Int?
    public init(_ description: String, status: Int? = nil) {
        self.description = description
        self.status = status
    }

    /// A body larger than a reader takes.
    static func tooLarge(_ url: String, limit: Int) -> FetchError { FetchError("\(url): \(CurlClient.Failure.tooLarge(limit: limit))") }

    /// Whether trying again may help: no answer, a server error, a timeout or a rate
    /// limit (RFC 9110 §15.6, 408, 429), or bytes that did not check; not a 404 or a 403.
    var mayPass: Bool { status.map { $0 >= 500 || $0 == 408 || $0 == 429 } ?? true }
}

/// Where a fetch reads from: a URL's whole body. A protocol so tests can count requests
/// and fail them.
public protocol Getter: AnyObject {
    func get(_ url: String) throws -> [UInt8]
    /// The body, refused (a FetchError) as soon as it is larger than `limit`.
    func get(_ url: String, limit: Int) throws -> [UInt8]
    /// The body written to `fd` (the file at `path`), refused once larger than `limit`.
    func download(_ url: String, limit: Int, into fd: FileDescriptor, path: String) throws
}

extension Getter {
    public func get(_ url: String, limit: Int) throws -> [UInt8] {
        let bytes = try get(url)
        guard bytes.count <= limit else { throw FetchError.tooLarge(url, limit: limit) }
        return bytes
    }

    /// This one holds the body first; `CurlGetter` writes it as it arrives.
    public func download(_ url: String, limit: Int, into fd: FileDescriptor, path: String) throws {
        let bytes = try get(url, limit: limit)
        try bytes.withUnsafeBytes { try AtomicFile.writeAll(fd, $0, path: path) }
    }
}

/// HTTP(S) GET through onair's one client (`CurlClient`), its connection kept: redirects
/// followed, TLS verified, a trickling transfer (under `lowSpeedBytes` a second for
/// `lowSpeedSeconds`) abandoned, bodies over a limit refused while they arrive, and never
/// held in more memory than the limit.
public final class CurlGetter: Getter {
    private let client = CurlClient()
    public let limit: Int

    public init(limit: Int = 256 << 20) { self.limit = limit }

    /// A transfer slower than this (bytes a second, over that many seconds) is a server
    /// trickling: a 2-second segment of the lowest rung (145 kbit/s) comes at 18 kB/s.
    public static let lowSpeedBytes = 8192
    public static let lowSpeedSeconds = 15

    public func get(_ url: String) throws -> [UInt8] { try get(url, limit: limit) }

    public func get(_ url: String, limit: Int) throws -> [UInt8] {
        try perform(url, limit: limit, sink: nil).body
    }

    /// Each piece of the body written to the file as it comes: the memory a segment costs
    /// is libcurl's buffer, not the segment.
    public func download(_ url: String, limit: Int, into fd: FileDescriptor, path: String) throws {
        var failure: Error?
        _ = try perform(url, limit: limit) { piece in
            do { try AtomicFile.writeAll(fd, piece, path: path) } catch {
                failure = error
                return false
            }
            return true
        }
        if let failure { throw failure }
    }

    private func perform(_ url: String, limit: Int, sink: ((UnsafeRawBufferPointer) -> Bool)?) throws -> CurlClient.Response {
        var request = CurlClient.Request("GET", url)
        request.followRedirects = true
        request.lowSpeed = (Self.lowSpeedBytes, Self.lowSpeedSeconds)
        request.keep = min(limit, self.limit)
        request.refuseLarger = true
        request.sink = sink
        let response: CurlClient.Response
        do { response = try client.perform(request) } catch { throw FetchError("\(url): \(error)") }
        guard response.isSuccess else { throw FetchError("\(url): HTTP \(response.status)", status: response.status) }
        return response
    }
}
