import CCurl
#if canImport(Glibc)
import Glibc
#endif
import Media

/// HTTP PUT (and S3 PutObject) through libcurl: one easy handle per worker thread, so its
/// connection is kept alive between uploads. S3 requests are signed by libcurl's own AWS
/// Signature V4 (CURLOPT_AWS_SIGV4); Content-Type and Cache-Control travel as headers and
/// become the object's metadata on S3.
public final class CurlTransport: Transport {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        return true
    }()

    public let destination: Destination
    private let curl: UnsafeMutableRawPointer
    /// libcurl's own account of a failure (CURLOPT_ERRORBUFFER), more precise than the
    /// generic text of its error code.
    private let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    public init(destination: Destination) {
        _ = Self.initialized
        self.destination = destination
        curl = curl_easy_init()
    }

    deinit {
        curl_easy_cleanup(curl)
        errorText.deallocate()
    }

    /// Collects a response body (all of it for a GET, the start for error messages) and
    /// its ETag.
    private final class ResponseBody {
        var bytes: [UInt8] = []
        var limit = 512
        var etag: String?
    }

    /// What a GET keeps of a body: a shared list (devices.json), never media.
    static let maximumGet = 4 << 20

    public func put(_ path: String, body: [UInt8], contentType: String, cacheControl: String, condition: WriteCondition?) throws {
        let precondition = condition.map { condition -> String in
            switch condition {
            case .ifMatch(let etag): return "If-Match: \(etag)"
            case .ifNoneExists: return "If-None-Match: *"
            }
        }
        do {
            _ = try send("PUT", path, body: body, contentType: contentType, cacheControl: cacheControl, extra: precondition.map { [$0] } ?? [])
        } catch let error as UploadError where error.status == 409 && destination.s3 == nil {
            // WebDAV servers such as Apache mod_dav refuse a PUT whose parent collection
            // does not exist (RFC 4918 §9.7.1): create the parents (MKCOL), then put again.
            try makeCollections(for: path)
            _ = try send("PUT", path, body: body, contentType: contentType, cacheControl: cacheControl, extra: precondition.map { [$0] } ?? [])
        }
    }

    public func get(_ path: String) throws -> StoredObject? {
        do {
            let response = try send("GET", path, body: [], contentType: nil, cacheControl: nil, keep: Self.maximumGet)
            return StoredObject(body: response.bytes, etag: response.etag)
        } catch let error as UploadError where error.status == 404 {
            // (S3 answers 403 instead when the key may not list the bucket: that stays an
            // error, since "forbidden" cannot be told from "missing" then.)
            return nil
        }
    }

    /// MKCOL each parent of `path` below the destination's prefix; 405 means it exists.
    private func makeCollections(for path: String) throws {
        var parent = ""
        for component in path.split(separator: "/").dropLast() {
            parent += component + "/"
            do { _ = try send("MKCOL", parent, body: [], contentType: nil, cacheControl: nil) } catch let error as UploadError where error.status == 405 {
                continue  // RFC 4918 §9.3.1: the collection is already there
            }
        }
    }

    private func send(_ method: String, _ path: String, body: [UInt8], contentType: String?, cacheControl: String?,
                      extra: [String] = [], keep: Int = 512) throws -> ResponseBody {
        curl_easy_reset(curl)
        let url = destination.baseURL + path
        var headers: UnsafeMutablePointer<curl_slist>?
        // No "Expect:" override: libcurl's SigV4 would sign that empty header but not send
        // it, and every S3 request would fail with SignatureDoesNotMatch. (libcurl adds
        // 100-continue only for bodies over 1 MB.)
        var typed = [contentType.map { "Content-Type: \($0)" }, cacheControl.map { "Cache-Control: \($0)" }].compactMap { $0 }
        // S3 wants the payload's hash on every SigV4 request; libcurl 7.88 does not add it
        // (8.x does), but signs it when given, as its payload hash.
        if destination.s3 != nil { typed.append("x-amz-content-sha256: \(SHA256.hex(body))") }
        for header in typed + extra + destination.headers {
            headers = curl_slist_append(headers, header)
        }
        defer { curl_slist_free_all(headers) }
        let response = ResponseBody()
        response.limit = keep
        let context = Unmanaged.passUnretained(response).toOpaque()
        let code: CURLcode = body.withUnsafeBytes { raw in
            errorText[0] = 0
            onair_curl_set_pointer(curl, CURLOPT_ERRORBUFFER, errorText)
            onair_curl_set_string(curl, CURLOPT_URL, url)
            onair_curl_set_string(curl, CURLOPT_CUSTOMREQUEST, method)
            if method == "GET" {
                onair_curl_set_long(curl, CURLOPT_HTTPGET, 1)
            } else if method == "PUT" {
                onair_curl_set_pointer(curl, CURLOPT_POSTFIELDS, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!)
                onair_curl_set_size(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(raw.count))
            }
            onair_curl_set_pointer(curl, CURLOPT_HTTPHEADER, UnsafeRawPointer(headers))
            onair_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
            onair_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT_MS, min(5000, destination.timeoutMilliseconds))
            onair_curl_set_long(curl, CURLOPT_TIMEOUT_MS, destination.timeoutMilliseconds)
            // A stalled upload (under 1 kB/s for 5 s) is abandoned and retried.
            onair_curl_set_long(curl, CURLOPT_LOW_SPEED_LIMIT, 1024)
            onair_curl_set_long(curl, CURLOPT_LOW_SPEED_TIME, 5)
            onair_curl_set_long(curl, CURLOPT_SSL_VERIFYPEER, destination.insecure ? 0 : 1)
            onair_curl_set_long(curl, CURLOPT_SSL_VERIFYHOST, destination.insecure ? 0 : 2)
            if let s3 = destination.s3 {
                onair_curl_set_string(curl, CURLOPT_AWS_SIGV4, "aws:amz:\(s3.region):s3")
                onair_curl_set_string(curl, CURLOPT_USERNAME, s3.accessKey)
                onair_curl_set_string(curl, CURLOPT_PASSWORD, s3.secretKey)
            }
            onair_curl_set_write_callback(curl, { data, size, count, context in
                let response = Unmanaged<ResponseBody>.fromOpaque(context!).takeUnretainedValue()
                let length = size * count
                if let data, response.bytes.count < response.limit {
                    response.bytes += UnsafeRawBufferPointer(start: data, count: min(length, response.limit - response.bytes.count))
                        .bindMemory(to: UInt8.self)
                }
                return length
            }, context)
            onair_curl_set_header_callback(curl, { data, size, count, context in
                let response = Unmanaged<ResponseBody>.fromOpaque(context!).takeUnretainedValue()
                let length = size * count
                if let data {
                    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length).bindMemory(to: UInt8.self), as: UTF8.self)
                    if line.lowercased().hasPrefix("etag:") {
                        response.etag = String(line.dropFirst(5)).trimmingWhitespace()
                    }
                }
                return length
            }, context)
            return curl_easy_perform(curl)
        }
        guard code == CURLE_OK else {
            let detail = String(cString: errorText)
            throw UploadError(status: nil, message: detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
        }
        let status = onair_curl_response_code(curl)
        guard (200..<300).contains(status) else {
            let text = String(decoding: response.bytes.prefix(200), as: UTF8.self).split(separator: "\n").joined(separator: " ")
            throw UploadError(status: status, message: text.isEmpty ? "\(method) \(path) refused" : text)
        }
        return response
    }
}

extension CurlTransport {
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
