import Foundation
import WebRTC
import XCTest

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
