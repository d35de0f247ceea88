import Basics
import CCurl

/// onair's one HTTP client: a libcurl easy handle, kept between requests for its
/// connection (keep-alive), used by one thread at a time. Publishing puts segments and
/// site files through it (S3 signed by libcurl's own SigV4, `CURLOPT_AWS_SIGV4`), fetch
/// and `onair validate URL` get playlists and segments, the uplink probe times a put.
/// What each asks for differs only in its `Request`; the transfer, its limits, and what a
/// failure says are here once.
public final class CurlClient {
    public struct Request {
        public var method: String
        public var url: String
        public var headers: [String] = []
        public var body: [UInt8] = []
        /// Follow redirects (up to five): fetch does, a destination does not.
        public var followRedirects = false
        public var connectTimeoutMilliseconds = 5000
        /// The whole transfer's limit; nil: none (a long segment over a slow link).
        public var timeoutMilliseconds: Int?
        /// A transfer slower than `bytes` a second for `seconds` is abandoned (a server
        /// trickling, a stalled uplink).
        public var lowSpeed: (bytes: Int, seconds: Int) = (1024, 5)
        public var verifyTLS = true
        /// AWS Signature V4 (S3): region, access key, secret key.
        public var sigV4: (region: String, accessKey: String, secretKey: String)?
        /// How much of the body is kept; past it, the transfer is refused (`tooLarge`) or
        /// the rest is dropped (an error's start is enough to say what it was).
        public var keep = 512
        public var refuseLarger = false
        /// Takes the body as it arrives instead of keeping it (a download to a file):
        /// `keep` and `refuseLarger` then bound the whole body; false stops the transfer.
        public var sink: ((UnsafeRawBufferPointer) -> Bool)?

        public init(_ method: String, _ url: String) {
            self.method = method
            self.url = url
        }
    }

    public struct Response {
        public var status: Int
        public var body: [UInt8]
        public var etag: String?
        public var isSuccess: Bool { (200..<300).contains(status) }
        /// The start of the body, on one line: what a server said when it refused.
        public var summary: String { String(decoding: body.prefix(200), as: UTF8.self).split(separator: "\n").joined(separator: " ") }
    }

    /// Why there is no response.
    public enum Failure: Error, CustomStringConvertible, Equatable {
        /// The body went past `Request.keep` (with `refuseLarger`).
        case tooLarge(limit: Int)
        /// Slower than `Request.lowSpeed`.
        case tooSlow(bytes: Int, seconds: Int)
        /// No answer: libcurl's own account (DNS, connection, TLS, a timeout).
        case transfer(String)

        public var description: String {
            switch self {
            case .tooLarge(let limit): return "larger than \(limit >> 20) MiB"
            case .tooSlow(let bytes, let seconds): return "slower than \(bytes / 1024) kB/s for \(seconds) s (the server is trickling)"
            case .transfer(let text): return text
            }
        }
    }

    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        return true
    }()
    private let curl: UnsafeMutableRawPointer
    /// libcurl's own account of a failure (CURLOPT_ERRORBUFFER), more precise than the
    /// generic text of its error code.
    private let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    public init() {
        _ = Self.initialized
        curl = curl_easy_init()
    }

    deinit {
        curl_easy_cleanup(curl)
        errorText.deallocate()
    }

    /// What the callbacks fill: the body kept so far, and the ETag.
    private final class Collected {
        var bytes: [UInt8] = []
        let keep: Int
        let refuseLarger: Bool
        let sink: ((UnsafeRawBufferPointer) -> Bool)?
        var received = 0
        var etag: String?
        init(keep: Int, refuseLarger: Bool, sink: ((UnsafeRawBufferPointer) -> Bool)?) {
            self.keep = keep
            self.refuseLarger = refuseLarger
            self.sink = sink
        }
    }

    /// One request, answered with any status; throws a `Failure` only when there is no
    /// answer.
    public func perform(_ request: Request) throws -> Response {
        curl_easy_reset(curl)
        var headers: UnsafeMutablePointer<curl_slist>?
        for header in request.headers { headers = curl_slist_append(headers, header) }
        defer { curl_slist_free_all(headers) }
        let collected = Collected(keep: request.keep, refuseLarger: request.refuseLarger, sink: request.sink)
        let code: CURLcode = request.body.withUnsafeBytes { raw in
            configure(request, headers: headers, body: raw)
            setCallbacks(Unmanaged.passUnretained(collected).toOpaque())
            return curl_easy_perform(curl)
        }
        guard code == CURLE_OK else {
            if code == CURLE_WRITE_ERROR && request.refuseLarger && collected.received > request.keep { throw Failure.tooLarge(limit: request.keep) }
            if code == CURLE_WRITE_ERROR && request.sink != nil { throw Failure.transfer("the body could not be stored") }
            if code == CURLE_WRITE_ERROR && request.refuseLarger { throw Failure.tooLarge(limit: request.keep) }
            let detail = String(cString: errorText)
            if code == CURLE_OPERATION_TIMEDOUT, detail.contains("too slow") { throw Failure.tooSlow(bytes: request.lowSpeed.bytes, seconds: request.lowSpeed.seconds) }
            throw Failure.transfer(detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
        }
        return Response(status: onair_curl_response_code(curl), body: collected.bytes, etag: collected.etag)
    }

    private func configure(_ request: Request, headers: UnsafeMutablePointer<curl_slist>?, body: UnsafeRawBufferPointer) {
        errorText[0] = 0
        onair_curl_set_pointer(curl, CURLOPT_ERRORBUFFER, errorText)
        onair_curl_set_string(curl, CURLOPT_URL, request.url)
        onair_curl_set_string(curl, CURLOPT_CUSTOMREQUEST, request.method)
        if request.method == "GET" {
            onair_curl_set_long(curl, CURLOPT_HTTPGET, 1)
        } else if request.method == "PUT" {
            onair_curl_set_pointer(curl, CURLOPT_POSTFIELDS, body.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!)
            onair_curl_set_size(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
        }
        onair_curl_set_pointer(curl, CURLOPT_HTTPHEADER, UnsafeRawPointer(headers))
        if request.followRedirects {
            onair_curl_set_long(curl, CURLOPT_FOLLOWLOCATION, 1)
            onair_curl_set_long(curl, CURLOPT_MAXREDIRS, 5)
        }
        onair_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
        onair_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT_MS, request.connectTimeoutMilliseconds)
        if let timeout = request.timeoutMilliseconds { onair_curl_set_long(curl, CURLOPT_TIMEOUT_MS, timeout) }
        onair_curl_set_long(curl, CURLOPT_LOW_SPEED_LIMIT, request.lowSpeed.bytes)
        onair_curl_set_long(curl, CURLOPT_LOW_SPEED_TIME, request.lowSpeed.seconds)
        onair_curl_set_long(curl, CURLOPT_SSL_VERIFYPEER, request.verifyTLS ? 1 : 0)
        onair_curl_set_long(curl, CURLOPT_SSL_VERIFYHOST, request.verifyTLS ? 2 : 0)
        if let sigV4 = request.sigV4 {
            onair_curl_set_string(curl, CURLOPT_AWS_SIGV4, "aws:amz:\(sigV4.region):s3")
            onair_curl_set_string(curl, CURLOPT_USERNAME, sigV4.accessKey)
            onair_curl_set_string(curl, CURLOPT_PASSWORD, sigV4.secretKey)
        }
    }

    private func setCallbacks(_ context: UnsafeMutableRawPointer) {
        onair_curl_set_write_callback(curl, { data, size, count, context in
            let collected = Unmanaged<Collected>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            guard let data else { return length }
            collected.received += length
            if let sink = collected.sink {
                if collected.refuseLarger && collected.received > collected.keep { return 0 }
                return sink(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
            }
            let needed = collected.bytes.count + length
            if needed > collected.keep {
                if collected.refuseLarger { return 0 }  // 0 aborts the transfer
                let room = max(0, collected.keep - collected.bytes.count)
                collected.bytes += UnsafeRawBufferPointer(start: data, count: room).bindMemory(to: UInt8.self)
                return length
            }
            // Grown by doubling, but never past the limit: an endless body costs the limit.
            if needed > collected.bytes.capacity {
                collected.bytes.reserveCapacity(min(collected.keep, max(needed, collected.bytes.capacity * 2)))
            }
            collected.bytes += UnsafeRawBufferPointer(start: data, count: length).bindMemory(to: UInt8.self)
            return length
        }, context)
        onair_curl_set_header_callback(curl, { data, size, count, context in
            let collected = Unmanaged<Collected>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            if let data {
                let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length).bindMemory(to: UInt8.self), as: UTF8.self)
                if line.lowercased().hasPrefix("etag:") { collected.etag = String(line.dropFirst(5)).trimmingWhitespace() }
            }
            return length
        }, context)
    }
}

extension CurlClient {
    /// libcurl and the TLS library it was built with, for `onair version`.
    public static var libraryVersions: [LibraryVersion] {
        guard let info = onair_curl_version_info()?.pointee else { return [] }
        var versions = [LibraryVersion("libcurl", String(cString: info.version), debianSource: debianSource("curl", onair_debian_curl()))]
        if let ssl = info.ssl_version {
            // "OpenSSL/3.0.22" → "OpenSSL 3.0.22".
            let parts = String(cString: ssl).split(separator: "/", maxSplits: 1).map(String.init)
            versions.append(LibraryVersion(parts[0], parts.count > 1 ? parts[1] : "", debianSource: debianSource("openssl", onair_debian_openssl())))
        }
        return versions
    }
}
