import Foundation
import XCTest
@testable import Publishing
import TestSupport

final class DestinationTests: XCTestCase {
    func testHTTPAndS3Forms() throws {
        XCTAssertEqual(try Destination.parse(url: "http://origin.example/live").baseURL, "http://origin.example/live/")
        let path = try Destination.parse(url: "s3://bucket/cams/", s3Endpoint: "http://127.0.0.1:9000/", s3Region: "eu-west-1",
                                         s3AccessKey: "AKID", s3SecretKey: "SECRET")
        XCTAssertEqual(path.baseURL, "http://127.0.0.1:9000/bucket/cams/")
        XCTAssertEqual(path.s3?.region, "eu-west-1")
        XCTAssertFalse(path.description.contains("SECRET"), "secrets stay out of logs")
        let virtual = try Destination.parse(url: "s3://bucket", s3AccessKey: "A", s3SecretKey: "S", s3PathStyle: false)
        XCTAssertEqual(virtual.baseURL, "https://bucket.s3.us-east-1.amazonaws.com/")
        XCTAssertThrowsError(try Destination.parse(url: "ftp://x/"))
        XCTAssertThrowsError(try Destination.parse(url: "s3://bucket/")) { XCTAssertTrue("\($0)".contains("access_key")) }
        XCTAssertThrowsError(try Destination.parse(url: "http:///nohost"))
    }
}

final class CurlTransportTests: XCTestCase {
    func testPutsBodyTypeCacheAndExtraHeadersOverOneConnection() throws {
        let server = try RecordingServer()
        defer { server.stop() }
        let transport = CurlTransport(destination: try Destination.parse(url: "http://127.0.0.1:\(server.port)/live/",
                                                                         headers: ["Authorization: Bearer t0k3n"]))
        let body = (0..<100_000).map { UInt8($0 % 251) }
        try transport.put("s/seg/000001.m4s", body: body, contentType: "video/mp4", cacheControl: "public, max-age=31536000, immutable")
        try transport.put("s/playlist.m3u8", body: Array("#EXTM3U\n".utf8), contentType: "application/vnd.apple.mpegurl", cacheControl: "no-cache")
        try transport.put("s/empty", body: [], contentType: "application/octet-stream", cacheControl: "no-cache")
        let requests = server.requests
        XCTAssertEqual(requests.map(\.method), ["PUT", "PUT", "PUT"])
        XCTAssertEqual(requests.map(\.path), ["/live/s/seg/000001.m4s", "/live/s/playlist.m3u8", "/live/s/empty"])
        XCTAssertEqual(requests[0].body, body)
        XCTAssertEqual(requests[0].headers["content-type"], "video/mp4")
        XCTAssertEqual(requests[0].headers["cache-control"], "public, max-age=31536000, immutable")
        XCTAssertEqual(requests[1].headers["authorization"], "Bearer t0k3n")
        XCTAssertEqual(requests[2].body, [])
        XCTAssertEqual(server.connections, 1, "keep-alive")
    }

    func testFailuresSayWhatHappened() throws {
        let server = try RecordingServer(status: { _ in 507 })
        defer { server.stop() }
        let transport = CurlTransport(destination: try Destination.parse(url: "http://127.0.0.1:\(server.port)/"))
        XCTAssertThrowsError(try transport.put("a", body: [1], contentType: "video/mp4", cacheControl: "no-cache")) {
            XCTAssertEqual(($0 as? UploadError)?.status, 507)
        }
        server.stop()
        let refused = CurlTransport(destination: try Destination.parse(url: "http://127.0.0.1:\(server.port)/", timeoutMilliseconds: 2000))
        XCTAssertThrowsError(try refused.put("a", body: [1], contentType: "video/mp4", cacheControl: "no-cache")) {
            XCTAssertNil(($0 as? UploadError)?.status)
            XCTAssertTrue("\($0)".lowercased().contains("connect"), "\($0)")
        }
    }

    func testNginxWebDAVStoresWhatWasPut() throws {
        let nginx = try NginxOrigin()
        defer { nginx.stop() }
        let transport = CurlTransport(destination: try Destination.parse(url: "http://127.0.0.1:\(nginx.port)/live/"))
        let body = Array("segment bytes".utf8)
        try transport.put("s1/seg/000001.m4s", body: body, contentType: "video/mp4", cacheControl: "no-cache")
        try transport.put("s1/seg/000001.m4s", body: body + [1], contentType: "video/mp4", cacheControl: "no-cache")
        XCTAssertEqual(FileManager.default.contents(atPath: nginx.root + "/live/s1/seg/000001.m4s").map { Array($0) }, body + [1])
        let served = try HTTPClient.request(port: nginx.port, "/live/s1/seg/000001.m4s")
        XCTAssertEqual(served.body, body + [1])
    }

    /// Apache mod_dav answers 409 to a PUT into a missing collection; the transport makes
    /// the collections (MKCOL) and puts again.
    func testApacheWebDAVGetsItsCollectionsMade() throws {
        let apache = try ApacheOrigin()
        defer { apache.stop() }
        let transport = CurlTransport(destination: try Destination.parse(url: "http://127.0.0.1:\(apache.port)/"))
        try transport.put("s1/seg/000001.m4s", body: [1, 2, 3], contentType: "video/mp4", cacheControl: "no-cache")
        try transport.put("s1/seg/000002.m4s", body: [4], contentType: "video/mp4", cacheControl: "no-cache")
        try transport.put("s1/playlist.m3u8", body: Array("#EXTM3U\n".utf8), contentType: "application/vnd.apple.mpegurl", cacheControl: "no-cache")
        XCTAssertEqual(FileManager.default.contents(atPath: apache.root + "/s1/seg/000001.m4s").map { Array($0) }, [1, 2, 3])
        XCTAssertEqual(FileManager.default.contents(atPath: apache.root + "/s1/seg/000002.m4s").map { Array($0) }, [4])
        XCTAssertEqual(try HTTPClient.request(port: apache.port, "/s1/playlist.m3u8").text, "#EXTM3U\n")
    }
}
