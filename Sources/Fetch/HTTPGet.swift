import CCurl
#if canImport(Glibc)
import Glibc
#endif

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
    static func tooLarge(_ url: String, limit: Int) -> FetchError { FetchError("\(url): larger than \(limit >> 20) MiB") }

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
}

extension Getter {
    public func get(_ url: String, limit: Int) throws -> [UInt8] {
        let bytes = try get(url)
        guard bytes.count <= limit else { throw FetchError.tooLarge(url, limit: limit) }
        return bytes
    }
}

/// HTTP(S) GET through libcurl, one easy handle kept for its connection: redirects
/// followed, TLS verified, a trickling transfer (under `lowSpeedBytes` a second for
/// `lowSpeedSeconds`) abandoned, bodies over a limit refused while they arrive, and never
/// held in more memory than the limit.
public final class CurlGetter: Getter {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        return true
    }()
    private let curl: UnsafeMutableRawPointer
    private let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
    public let limit: Int

    public init(limit: Int = 256 << 20) {
        _ = Self.initialized
        curl = curl_easy_init()
        self.limit = limit
    }

    deinit {
        curl_easy_cleanup(curl)
        errorText.deallocate()
    }

    private final class Body {
        var bytes: [UInt8] = []
        let limit: Int
        init(limit: Int) { self.limit = limit }
    }

    /// A transfer slower than this (bytes a second, over that many seconds) is a server
    /// trickling: a 2-second segment of the lowest rung (145 kbit/s) comes at 18 kB/s.
    public static let lowSpeedBytes = 8192
    public static let lowSpeedSeconds = 15

    public func get(_ url: String) throws -> [UInt8] { try get(url, limit: limit) }

    public func get(_ url: String, limit: Int) throws -> [UInt8] {
        curl_easy_reset(curl)
        let body = Body(limit: min(limit, self.limit))
        errorText[0] = 0
        onair_curl_set_pointer(curl, CURLOPT_ERRORBUFFER, errorText)
        onair_curl_set_string(curl, CURLOPT_URL, url)
        onair_curl_set_long(curl, CURLOPT_FOLLOWLOCATION, 1)
        onair_curl_set_long(curl, CURLOPT_MAXREDIRS, 5)
        onair_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
        onair_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000)
        onair_curl_set_long(curl, CURLOPT_LOW_SPEED_LIMIT, Self.lowSpeedBytes)
        onair_curl_set_long(curl, CURLOPT_LOW_SPEED_TIME, Self.lowSpeedSeconds)
        onair_curl_set_write_callback(curl, { data, size, count, context in
            let body = Unmanaged<Body>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            let needed = body.bytes.count + length
            guard let data, needed <= body.limit else { return 0 }  // 0 aborts the transfer
            // Grown by doubling, but never past the limit: an endless body costs the limit.
            if needed > body.bytes.capacity { body.bytes.reserveCapacity(min(body.limit, max(needed, body.bytes.capacity * 2))) }
            body.bytes += UnsafeRawBufferPointer(start: data, count: length).bindMemory(to: UInt8.self)
            return length
        }, Unmanaged.passUnretained(body).toOpaque())
        let code = curl_easy_perform(curl)
        guard code == CURLE_OK else {
            if code == CURLE_WRITE_ERROR { throw FetchError.tooLarge(url, limit: body.limit) }
            if code == CURLE_OPERATION_TIMEDOUT, String(cString: errorText).contains("too slow") {
                throw FetchError("\(url): slower than \(Self.lowSpeedBytes / 1024) kB/s for \(Self.lowSpeedSeconds) s (the server is trickling)")
            }
            let detail = String(cString: errorText)
            throw FetchError("\(url): \(detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)")
        }
        let status = onair_curl_response_code(curl)
        guard (200..<300).contains(status) else { throw FetchError("\(url): HTTP \(status)", status: status) }
        return body.bytes
    }
}
