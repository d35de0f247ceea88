import Access
import XCTest
@testable import Server
import HLS
import TestSupport

final class WebServerTests: XCTestCase {
    var root = ""
    var server: WebServer!
    var port: UInt16 { server.port }
    let segment = (0..<1000).map { UInt8($0 % 251) }

    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-server-\(UUID().uuidString)").path
        let stream = root + "/streams/20261202T164233Z-0001"
        try FileManager.default.createDirectory(atPath: stream + "/seg", withIntermediateDirectories: true)
        try Data(segment).write(to: URL(fileURLWithPath: stream + "/seg/000001.m4s"))
        try Data([0, 0, 0, 8]).write(to: URL(fileURLWithPath: stream + "/init.mp4"))
        try """
        #EXTM3U
        #EXT-X-TARGETDURATION:2
        #EXT-X-PROGRAM-DATE-TIME:2026-12-02T16:42:33.123Z
        #EXTINF:2.000,
        seg/000001.m4s
        #EXTINF:1.500,
        seg/000002.m4s

        """.write(toFile: stream + "/playlist.m3u8", atomically: true, encoding: .utf8)
        try "#EXTM3U\n".write(toFile: stream + "/index.m3u8", atomically: true, encoding: .utf8)
        let older = root + "/streams/20261201T000000Z-0002"
        try FileManager.default.createDirectory(atPath: older, withIntermediateDirectories: true)
        try "#EXTM3U\n#EXTINF:2.000,\nseg/000001.m4s\n#EXT-X-ENDLIST\n".write(toFile: older + "/playlist.m3u8", atomically: true, encoding: .utf8)
        try "secret".write(toFile: root + "/outside.txt", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: stream + "/escape", withDestinationPath: "/etc")
        try FileManager.default.createDirectory(atPath: root + "/recordings", withIntermediateDirectories: true)
        try Data(segment).write(to: URL(fileURLWithPath: root + "/recordings/20261202T164233Z-0001.mp4"))
        try Data(segment).write(to: URL(fileURLWithPath: root + "/recordings/20261202T170000Z-0003.mp4.part"))
        server = try WebServer(listen: "127.0.0.1:0", root: root, api: ["/api/recordings": .json { Array("{\"recordings\":[]}".utf8) }],
                               control: ["/api/record/start": { _ in Array("{\"state\":\"recording\"}".utf8) }], token: "s3cret")
    }

    override func tearDown() {
        server?.stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    let base = "/streams/20261202T164233Z-0001"

    func testHeadersByKind() throws {
        let playlist = try HTTPClient.request(port: port, base + "/playlist.m3u8")
        XCTAssertEqual(playlist.status, 200)
        XCTAssertEqual(playlist.header("Content-Type"), "application/vnd.apple.mpegurl")
        XCTAssertEqual(playlist.header("Cache-Control"), "no-cache")
        let media = try HTTPClient.request(port: port, base + "/seg/000001.m4s")
        XCTAssertEqual(media.status, 200)
        XCTAssertEqual(media.body, segment)
        XCTAssertEqual(media.header("Content-Type"), "video/mp4")
        XCTAssertEqual(media.header("Cache-Control"), "public, max-age=31536000, immutable")
        XCTAssertEqual(media.header("Accept-Ranges"), "bytes")
        XCTAssertNotNil(media.header("Last-Modified")?.hasSuffix(" GMT"))
        let initSegment = try HTTPClient.request(port: port, base + "/init.mp4")
        XCTAssertEqual(initSegment.header("Content-Type"), "video/mp4")
    }

    /// Finished recordings download with Range support; one still being written does not.
    func testRecordingsAndTheirAPI() throws {
        let whole = try HTTPClient.request(port: port, "/recordings/20261202T164233Z-0001.mp4")
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(whole.body, segment)
        XCTAssertEqual(whole.header("Content-Type"), "video/mp4")
        let part = try HTTPClient.request(port: port, "/recordings/20261202T164233Z-0001.mp4", headers: ["Range": "bytes=10-19"])
        XCTAssertEqual(part.status, 206)
        XCTAssertEqual(part.body, Array(segment[10...19]))
        XCTAssertEqual(try HTTPClient.request(port: port, "/recordings/20261202T170000Z-0003.mp4.part").status, 404)
        XCTAssertEqual(try HTTPClient.request(port: port, "/recordings/../outside.txt").status, 404)
        let api = try HTTPClient.request(port: port, "/api/recordings")
        XCTAssertEqual(api.status, 200)
        XCTAssertEqual(api.header("Content-Type"), "application/json")
        XCTAssertEqual(String(decoding: api.body, as: UTF8.self), "{\"recordings\":[]}")
        XCTAssertEqual(try HTTPClient.request(port: port, "/api/nothing").status, 404)
    }

    /// The setup network's port 80: whatever a phone's captive-portal check asks for, it
    /// is sent to the setup page.
    func testTheCaptiveServerSendsEveryRequestToTheSetupPage() throws {
        let captive = try WebServer(listen: "127.0.0.1:0", root: root, captive: "http://192.168.4.1:8080/setup")
        defer { captive.stop() }
        for (host, path) in [("connectivitycheck.gstatic.com", "/generate_204"), ("captive.apple.com", "/hotspot-detect.html"),
                             ("www.msftconnecttest.com", "/connecttest.txt"), ("192.168.4.1", "/")] {
            let reply = try HTTPClient.request(port: captive.port, path, headers: ["Host": host])
            XCTAssertEqual(reply.status, 302, host)
            XCTAssertEqual(reply.header("Location"), "http://192.168.4.1:8080/setup", host)
            XCTAssertEqual(reply.header("Cache-Control"), "no-store")
        }
        XCTAssertEqual(try HTTPClient.request(port: captive.port, "/api/status").status, 302, "nothing of the stream's server")
    }

    /// Control calls need the token; GET and the wrong method are refused.
    func testControlNeedsTheBearerToken() throws {
        let path = "/api/record/start"
        XCTAssertEqual(try HTTPClient.request(port: port, path, method: "POST").status, 401)
        let wrong = try HTTPClient.request(port: port, path, method: "POST", headers: ["Authorization": "Bearer nope"])
        XCTAssertEqual(wrong.status, 401)
        XCTAssertEqual(wrong.header("WWW-Authenticate"), "Bearer")
        let right = try HTTPClient.request(port: port, path, method: "POST", headers: ["Authorization": "Bearer s3cret"])
        XCTAssertEqual(right.status, 200)
        XCTAssertEqual(String(decoding: right.body, as: UTF8.self), "{\"state\":\"recording\"}")
        XCTAssertEqual(try HTTPClient.request(port: port, path).status, 404, "control is POST only")
        XCTAssertEqual(try HTTPClient.request(port: port, "/api/recordings", method: "POST").status, 405)
        let open = try WebServer(listen: "127.0.0.1:0", root: root, control: [path: { _ in [] }])
        defer { open.stop() }
        XCTAssertEqual(try HTTPClient.request(port: open.port, path, method: "POST", headers: ["Authorization": "Bearer "]).status, 403,
                       "no token configured: control is off")
        XCTAssertTrue(AccessList.constantTimeEqual(Array("ab".utf8), Array("ab".utf8)))
        XCTAssertFalse(AccessList.constantTimeEqual(Array("ab".utf8), Array("abc".utf8)))
    }

    func testRangesHeadAndConditionalRequests() throws {
        let partial = try HTTPClient.request(port: port, base + "/seg/000001.m4s", headers: ["Range": "bytes=100-199"])
        XCTAssertEqual(partial.status, 206)
        XCTAssertEqual(partial.body, Array(segment[100...199]))
        XCTAssertEqual(partial.header("Content-Range"), "bytes 100-199/1000")
        let suffix = try HTTPClient.request(port: port, base + "/seg/000001.m4s", headers: ["Range": "bytes=-10"])
        XCTAssertEqual(suffix.body, Array(segment[990...]))
        let open = try HTTPClient.request(port: port, base + "/seg/000001.m4s", headers: ["Range": "bytes=995-"])
        XCTAssertEqual(open.header("Content-Range"), "bytes 995-999/1000")
        let beyond = try HTTPClient.request(port: port, base + "/seg/000001.m4s", headers: ["Range": "bytes=5000-"])
        XCTAssertEqual(beyond.status, 416)
        XCTAssertEqual(beyond.header("Content-Range"), "bytes */1000")
        let head = try HTTPClient.request(port: port, base + "/seg/000001.m4s", method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("Content-Length"), "1000")
        let etag = try XCTUnwrap(head.header("ETag"))
        let again = try HTTPClient.request(port: port, base + "/seg/000001.m4s", headers: ["If-None-Match": etag])
        XCTAssertEqual(again.status, 304)
        XCTAssertEqual(again.body, [])
        XCTAssertEqual(try HTTPClient.request(port: port, base + "/init.mp4", method: "POST").status, 405)
    }

    func testNothingOutsideTheDataDirectory() throws {
        for path in ["/streams/../outside.txt", "/streams/%2e%2e/outside.txt", "/streams/..%2foutside.txt",
                     "/streams/20261202T164233Z-0001/../../outside.txt", base + "/escape/passwd", "/streams/",
                     "/streams/20261202T164233Z-0001/%2e%2e/%2e%2e/outside.txt", "/outside.txt", base + "/seg/../../../outside.txt"] {
            let response = try HTTPClient.request(port: port, path)
            XCTAssertTrue((400..<500).contains(response.status), "\(path) → \(response.status)")
            XCTAssertFalse(response.text.contains("secret"), path)
            XCTAssertFalse(response.text.contains("root:"), path)
        }
        XCTAssertEqual(try HTTPClient.request(port: port, base + "/nothing.m4s").status, 404)
    }

    func testStreamsAPINewestFirst() throws {
        let response = try HTTPClient.request(port: port, "/api/streams")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Content-Type"), "application/json")
        let streams = try XCTUnwrap(StreamInfo.list(json: response.body))
        XCTAssertEqual(streams.map(\.id), ["20261202T164233Z-0001", "20261201T000000Z-0002"])
        XCTAssertEqual(streams[0].state, "live")
        XCTAssertEqual(streams[0].segments, 2)
        XCTAssertEqual(streams[0].duration, 3.5)
        XCTAssertEqual(streams[0].start, "2026-12-02T16:42:33.123Z")
        XCTAssertEqual(streams[0].playlist, base + "/index.m3u8")
        XCTAssertEqual(streams[0].targetDuration, 2)
        XCTAssertTrue(response.text.contains("\"target_duration\":2"), response.text)
        XCTAssertEqual(streams[1].state, "ended")
    }

    func testTheListFollowsPlaylistChangesAndDeletions() throws {
        let catalog = StreamCatalog(root: root)
        XCTAssertEqual(catalog.list().first?.segments, 2)
        XCTAssertEqual(catalog.list().first?.state, "live", "a second call comes from the cache")
        let playlist = root + "/streams/20261202T164233Z-0001/playlist.m3u8"
        try (try String(contentsOfFile: playlist, encoding: .utf8) + "#EXTINF:2.000,\nseg/000003.m4s\n#EXT-X-ENDLIST\n")
            .write(toFile: playlist, atomically: true, encoding: .utf8)
        XCTAssertEqual(catalog.list().first?.segments, 3, "a rewritten playlist is read again")
        XCTAssertEqual(catalog.list().first?.state, "ended")
        try FileManager.default.removeItem(atPath: root + "/streams/20261201T000000Z-0002")
        XCTAssertEqual(catalog.list().map(\.id), ["20261202T164233Z-0001"])
    }

    func testViewerPageIsSelfContained() throws {
        let page = try HTTPClient.request(port: port, "/")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertTrue(page.text.contains("<video"))
        XCTAssertTrue(page.text.contains("/api/streams"))
        XCTAssertFalse(page.text.contains("<script src"), "no script is fetched at run time")
        XCTAssertTrue(page.text.contains("<title>onair</title>"), "no device.name given")
        // The board's name titles its page; the fleet page at a destination's root reads
        // devices.json and frames each board's own page.
        let named = Viewer.page(streams: "streams.json", device: "gym-2")
        XCTAssertTrue(named.contains("<title>onair · gym-2</title>") && named.contains("<h1>onair · gym-2</h1>"))
        XCTAssertTrue(named.contains("fetch(\"streams.json\""))
        XCTAssertTrue(Viewer.page(streams: "s", device: "a<b").contains("<title>onair · a&lt;b</title>"), "escaped as any text")
        XCTAssertTrue(FleetPage.html.hasPrefix("<!doctype html>"))
        XCTAssertTrue(FleetPage.html.contains("fetch(\"devices.json\""))
        XCTAssertTrue(FleetPage.html.contains("frame.src = device.page"))
    }

    func testBadListenAddresses() {
        XCTAssertThrowsError(try WebServer(listen: "nonsense", root: root))
        XCTAssertThrowsError(try WebServer(listen: "999.1.1.1:80", root: root))
        XCTAssertThrowsError(try WebServer(listen: "127.0.0.1:\(port)", root: root), "port in use")
    }
}
