import Files
import Foundation
import Layout
import Server
import System
import TestSupport

extension FuzzTargets {
    /// Raw HTTP requests against the real server (libmicrohttpd and onair's handler): after
    /// each, a plain GET on a new connection must still be answered 200.
    public static let http = FuzzTarget(name: "http", seeds: [
        "GET \(HTTPFixture.stream)/\(StreamLayout.playlist) HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET \(HTTPFixture.stream)/\(StreamLayout.segment(1)) HTTP/1.1\r\nHost: x\r\nRange: bytes=10-99\r\nIf-None-Match: \"a\"\r\n\r\n",
        "HEAD /api/streams HTTP/1.0\r\n\r\n",
        "POST /api/record/start HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(secret)\r\nContent-Length: 0\r\n\r\n",
        "GET \(HTTPFixture.stream)/../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"
    ].map { Array($0.utf8) }, textual: true) { bytes in
        let port = HTTPFixture.shared.port
        _ = HTTPFixture.exchange(port: port, bytes)
        let answer = HTTPFixture.exchange(port: port, Array("GET \(HTTPFixture.stream)/\(StreamLayout.playlist) HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        if !answer.starts(with: Array("HTTP/1.1 200".utf8)) { broken("the server stopped answering") }
    }
}

/// One server for every case, on a stream in a temporary directory.
final class HTTPFixture: Sendable {
    static let shared = HTTPFixture()
    /// The URL of the stream it serves.
    static let stream = StreamLayout.streamsURL + "s"
    let server: WebServer
    var port: UInt16 { server.port }

    private init() {
        let root = NSTemporaryDirectory() + "onair-fuzz-http-\(ThisProcess.id)"
        for (name, bytes) in FuzzTargets.stream.files {
            let path = StreamLayout(root: root).file("s", name)
            try? AtomicFile.makeDirectories(AtomicFile.directory(of: path))
            try? FileSystem.write(bytes, to: path)
        }
        server = try! WebServer(listen: "127.0.0.1:0", root: root, control: ["/api/record/start": { _ in Array("{}".utf8) }],
                                token: FuzzTargets.secret, limits: .init(connections: 64, perAddress: 64))
    }

    /// Sends `bytes` on a new connection and reads what comes back within a short wait.
    static func exchange(port: UInt16, _ bytes: [UInt8]) -> [UInt8] {
        guard let socket = RawSocket(port: port, timeoutMilliseconds: 300) else { return [] }
        socket.send(bytes)
        return socket.response()
    }
}
