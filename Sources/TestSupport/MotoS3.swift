import Foundation

/// An S3-compatible server on loopback: moto's server mode (installed by `make test` into
/// .build/moto). IAM authentication is on, so requests must carry a valid AWS Signature V4
/// from the access key the setup creates: a wrong secret gets SignatureDoesNotMatch.
public final class MotoS3 {
    public let port: UInt16
    public let bucket = "cams"
    public private(set) var accessKey = ""
    public private(set) var secretKey = ""
    private let process = Process()
    private let python: String

    public var endpoint: String { "http://127.0.0.1:\(port)" }

    /// .build/moto beside this package.
    static var environment: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/moto").path
    }

    public init() throws {
        python = Self.environment + "/bin/python"
        guard FileManager.default.isExecutableFile(atPath: Self.environment + "/bin/moto_server") else {
            throw HTTPClient.Failure(description: "\(Self.environment)/bin/moto_server is missing: run the tests with 'make test'")
        }
        port = try NginxOrigin.freePort()
        process.executableURL = URL(fileURLWithPath: Self.environment + "/bin/moto_server")
        process.arguments = ["-H", "127.0.0.1", "-p", String(port)]
        // The first four requests (the setup below) need no signature; all later ones do.
        process.environment = ["INITIAL_NO_AUTH_ACTION_COUNT": "4", "PATH": "/usr/bin:/bin"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<100 {
            if (try? HTTPClient.request(port: port, "/moto-api/")) != nil { break }
            usleep(100_000)
        }
        let keys = try run("""
            import boto3, json
            kw = dict(endpoint_url="\(endpoint)", region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
            boto3.client("s3", **kw).create_bucket(Bucket="\(bucket)")
            iam = boto3.client("iam", **kw)
            iam.create_user(UserName="onair")
            iam.put_user_policy(UserName="onair", PolicyName="s3", PolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
            key = iam.create_access_key(UserName="onair")["AccessKey"]
            print(key["AccessKeyId"], key["SecretAccessKey"])
            """).split(separator: " ")
        guard keys.count == 2 else { throw HTTPClient.Failure(description: "moto setup gave no key") }
        accessKey = String(keys[0])
        secretKey = String(keys[1]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func stop() {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
    }

    /// Every object under `prefix`: key → (bytes, Content-Type, Cache-Control), read back
    /// with a properly signed client.
    public func objects(prefix: String) throws -> [String: (body: [UInt8], contentType: String, cacheControl: String)] {
        let listing = try run("""
            import boto3, base64, json
            s3 = boto3.client("s3", endpoint_url="\(endpoint)", region_name="us-east-1",
                              aws_access_key_id="\(accessKey)", aws_secret_access_key="\(secretKey)")
            out = {}
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket="\(bucket)", Prefix="\(prefix)"):
                for item in page.get("Contents", []):
                    o = s3.get_object(Bucket="\(bucket)", Key=item["Key"])
                    out[item["Key"]] = [base64.b64encode(o["Body"].read()).decode(), o.get("ContentType", ""), o.get("CacheControl", "")]
            print(json.dumps(out))
            """)
        let decoded = try JSONSerialization.jsonObject(with: Data(listing.utf8)) as? [String: [String]] ?? [:]
        return decoded.mapValues { (Array(Data(base64Encoded: $0[0]) ?? Data()), $0[1], $0[2]) }
    }

    private func run(_ script: String) throws -> String {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: python)
        child.arguments = ["-c", script]
        let output = Pipe(), errors = Pipe()
        child.standardOutput = output
        child.standardError = errors
        try child.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problem = errors.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        guard child.terminationStatus == 0 else {
            throw HTTPClient.Failure(description: "moto helper failed: \(String(decoding: problem, as: UTF8.self).suffix(500))")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
