import Foundation
import WebRTC
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The DTLS endpoint through a real client: `openssl s_client -dtls1_2` with the SRTP
/// extension connects over UDP, as a browser's DTLS does, and exports the same keying
/// material (RFC 5764 §4.2) the endpoint derives its SRTP keys from.
final class DTLSClientTests: XCTestCase {
    func testOpenSSLsClientAgreesOnTheSRTPKeys() throws {
        let board = try DTLSCertificate.generate(), client = try DTLSCertificate.generate(commonName: "client")
        let work = try temporaryDirectory("dtls-client")
        try client.pem.write(toFile: work + "/client.pem", atomically: true, encoding: .utf8)
        let socket = try XCTUnwrap(UDPServer())
        let endpoint = try DTLSEndpoint(certificate: board, server: true)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_client", "-dtls1_2", "-connect", "127.0.0.1:\(socket.port)", "-use_srtp", "SRTP_AES128_CM_SHA1_80",
                             "-keymatexport", "EXTRACTOR-dtls_srtp", "-keymatexportlen", "60",
                             "-cert", work + "/client.pem", "-key", work + "/client.pem"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // Serve what comes until the handshake is done and the client has gone (bounded).
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline && (process.isRunning || !endpoint.isConnected) {
            guard let (datagram, from) = socket.receive() else { continue }
            for reply in try endpoint.receive(datagram) { socket.send(reply, to: from) }
        }
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(endpoint.isConnected, text)
        let keys = try XCTUnwrap(endpoint.keys)
        XCTAssertEqual(keys.profile, .aes128CmSha1_80, "the one the client offered")
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.contains("Keying material:") }, text)
        let exported = line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces).uppercased()
        let ours = (keys.clientKey + keys.serverKey + keys.clientSalt + keys.serverSalt).map { String(format: "%02X", $0) }.joined()
        XCTAssertEqual(exported, ours)
        XCTAssertEqual(endpoint.peerFingerprint, client.fingerprint)
        XCTAssertTrue(text.contains("SRTP Extension negotiated, profile=SRTP_AES128_CM_SHA1_80"), text)
    }
}

/// A UDP socket on 127.0.0.1 (an ephemeral port) that receives with a 200 ms timeout and
/// answers whoever sent.
final class UDPServer {
    let fd: Int32
    private(set) var port: UInt16 = 0

    init?() {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { close(fd); return nil }
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(fd) }

    func receive() -> ([UInt8], sockaddr_in)? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var from = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let n = withUnsafeMutablePointer(to: &from) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
        }
        return n > 0 ? (Array(buffer[0..<n]), from) : nil
    }

    func send(_ bytes: [UInt8], to address: sockaddr_in) {
        var to = address
        _ = withUnsafePointer(to: &to) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}
