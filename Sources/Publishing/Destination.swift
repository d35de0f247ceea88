/// Where a stream is published: an HTTP(S) prefix taking PUTs, or an S3 bucket and prefix
/// (signed with AWS Signature V4 by libcurl). Secrets never appear in `description`.
public struct Destination: Sendable, Equatable, CustomStringConvertible {
    public struct S3: Sendable, Equatable {
        public var region: String
        public var accessKey: String
        public var secretKey: String
    }

    /// Objects go to `baseURL + path`; ends with "/".
    public var baseURL: String
    /// Extra request headers, `Name: value`.
    public var headers: [String]
    public var s3: S3?
    /// Skip TLS certificate checks (an explicit opt-out, warned about at start).
    public var insecure: Bool
    public var timeoutMilliseconds: Int

    public var description: String { s3 == nil ? baseURL : "\(baseURL) (S3, \(s3!.region))" }

    public struct Invalid: Error, CustomStringConvertible { public var description: String }

    /// `publish.url`: `http(s)://host/prefix/` or `s3://bucket/prefix/`. For S3, the
    /// endpoint (default AWS's regional one) and path-style addressing (what MinIO and
    /// most self-hosted servers want) or virtual-host style.
    public static func parse(url: String, headers: [String] = [], insecure: Bool = false, timeoutMilliseconds: Int = 10_000,
                             s3Endpoint: String? = nil, s3Region: String? = nil, s3AccessKey: String? = nil,
                             s3SecretKey: String? = nil, s3PathStyle: Bool = true) throws -> Destination {
        func prefixed(_ rest: Substring) -> String { rest.hasSuffix("/") ? String(rest) : String(rest) + "/" }
        if url.hasPrefix("http://") || url.hasPrefix("https://") {
            let afterScheme = url[url.firstRange(of: "://")!.upperBound...]
            guard !afterScheme.prefix(while: { $0 != "/" }).isEmpty else {
                throw Invalid(description: "publish.url \(url): no host")
            }
            return Destination(baseURL: prefixed(url[...]), headers: headers, s3: nil, insecure: insecure,
                               timeoutMilliseconds: timeoutMilliseconds)
        }
        guard url.hasPrefix("s3://") else {
            throw Invalid(description: "publish.url \(url): expected http://, https:// or s3://")
        }
        let rest = url.dropFirst("s3://".count)
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bucket = parts.first, !bucket.isEmpty else { throw Invalid(description: "publish.url \(url): no bucket") }
        var prefix = parts.count > 1 ? String(parts[1]) : ""
        if !prefix.isEmpty && !prefix.hasSuffix("/") { prefix += "/" }
        let region = s3Region ?? "us-east-1"
        guard let access = s3AccessKey, !access.isEmpty, let secret = s3SecretKey, !secret.isEmpty else {
            throw Invalid(description: "publish.url \(url): S3 needs publish.s3.access_key and publish.s3.secret_key (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
        }
        var endpoint = s3Endpoint ?? "https://s3.\(region).amazonaws.com"
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        let base: String
        if s3PathStyle {
            base = "\(endpoint)/\(bucket)/\(prefix)"
        } else {
            guard let scheme = endpoint.firstRange(of: "://") else { throw Invalid(description: "publish.s3.endpoint \(endpoint): no scheme") }
            base = "\(endpoint[..<scheme.upperBound])\(bucket).\(endpoint[scheme.upperBound...])/\(prefix)"
        }
        return Destination(baseURL: base, headers: headers, s3: S3(region: region, accessKey: access, secretKey: secret),
                           insecure: insecure, timeoutMilliseconds: timeoutMilliseconds)
    }
}
