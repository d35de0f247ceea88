import Basics
import HTTP

/// HTTP PUT (and S3 PutObject) through onair's one client (`CurlClient`): one per worker
/// thread, so its connection is kept alive between uploads. S3 requests are signed by
/// libcurl's own AWS Signature V4 (CURLOPT_AWS_SIGV4); Content-Type and Cache-Control
/// travel as headers and become the object's metadata on S3.
public final class CurlTransport: Transport {
    public let destination: Destination
    private let client = CurlClient()

    public init(destination: Destination) { self.destination = destination }

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
            return StoredObject(body: response.body, etag: response.etag)
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
                      extra: [String] = [], keep: Int = 512) throws -> CurlClient.Response {
        var request = CurlClient.Request(method, destination.baseURL + path)
        request.body = body
        // No "Expect:" override: libcurl's SigV4 would sign that empty header but not send
        // it, and every S3 request would fail with SignatureDoesNotMatch. (libcurl adds
        // 100-continue only for bodies over 1 MB.)
        var typed = [contentType.map { "Content-Type: \($0)" }, cacheControl.map { "Cache-Control: \($0)" }].compactMap { $0 }
        // S3 wants the payload's hash on every SigV4 request; libcurl 7.88 does not add it
        // (8.x does), but signs it when given, as its payload hash.
        if destination.s3 != nil { typed.append("x-amz-content-sha256: \(SHA256.hex(body))") }
        request.headers = typed + extra + destination.headers
        request.connectTimeoutMilliseconds = min(5000, destination.timeoutMilliseconds)
        request.timeoutMilliseconds = destination.timeoutMilliseconds
        // A stalled upload (under 1 kB/s for 5 s) is abandoned and retried.
        request.lowSpeed = (1024, 5)
        request.verifyTLS = !destination.insecure
        request.sigV4 = destination.s3.map { ($0.region, $0.accessKey, $0.secretKey) }
        request.keep = keep
        let response: CurlClient.Response
        do { response = try client.perform(request) } catch { throw UploadError(status: nil, message: "\(error)") }
        guard response.isSuccess else {
            let text = response.summary
            throw UploadError(status: response.status, message: text.isEmpty ? "\(method) \(path) refused" : text)
        }
        return response
    }
}
