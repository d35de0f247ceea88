import Basics
import Foundation
import TestSupport
import WebRTC
import XCTest

/// The board's DTLS certificate through OpenSSL's own command line: an ECDSA P-256
/// certificate signed with SHA-256, whose SHA-256 fingerprint is the one onair puts in
/// its SDP answers.
final class DTLSCertificateTests: XCTestCase {
    func testTheCertificateIsP256AndItsFingerprintIsOpenSSLs() throws {
        let certificate = try DTLSCertificate.generate()
        let path = try temporaryDirectory("dtls") + "/certificate.pem"
        try certificate.pem.write(toFile: path, atomically: true, encoding: .utf8)
        let fingerprint = try toolOutput("/usr/bin/openssl", ["x509", "-in", path, "-noout", "-fingerprint", "-sha256"])
        XCTAssertEqual(fingerprint.status, 0)
        // "sha256 Fingerprint=AB:CD:…" (OpenSSL 3) against "sha-256 AB:CD:…" (RFC 8122 §5).
        let said = String(decoding: fingerprint.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(said.split(separator: "=").last.map(String.init), String(certificate.sdpFingerprint.dropFirst("sha-256 ".count)))
        let text = String(decoding: try toolOutput("/usr/bin/openssl", ["x509", "-in", path, "-noout", "-text"]).stdout, as: UTF8.self)
        XCTAssertTrue(text.contains("prime256v1"), text)
        XCTAssertTrue(text.contains("ecdsa-with-SHA256"), text)
        XCTAssertTrue(text.contains("Subject: CN = onair"), text)
        XCTAssertEqual(try toolOutput("/usr/bin/openssl", ["pkey", "-in", path, "-noout", "-check"]).status, 0, "the key is whole")
    }

    func testAKeptCertificateIsTheSameAndAForeignKeyIsRefused() throws {
        let first = try DTLSCertificate.generate(), second = try DTLSCertificate.generate()
        XCTAssertNotEqual(first.fingerprint, second.fingerprint)
        XCTAssertEqual(try DTLSCertificate(pem: first.pem), first)
        XCTAssertEqual(first.sdpFingerprint.count, "sha-256 ".count + 32 * 3 - 1)
        // The first's certificate with the second's key.
        let certificate = first.pem.components(separatedBy: "-----BEGIN PRIVATE KEY-----")[0]
        let key = "-----BEGIN PRIVATE KEY-----" + second.pem.components(separatedBy: "-----BEGIN PRIVATE KEY-----")[1]
        XCTAssertThrowsError(try DTLSCertificate(pem: certificate + key)) { XCTAssertEqual($0 as? DTLSCertificate.Failure, .invalid) }
        XCTAssertThrowsError(try DTLSCertificate(pem: certificate)) { XCTAssertEqual($0 as? DTLSCertificate.Failure, .invalid) }
        XCTAssertThrowsError(try DTLSCertificate(pem: "not PEM")) { XCTAssertEqual($0 as? DTLSCertificate.Failure, .invalid) }
    }
}

/// The certificate is kept in the data directory: the same across restarts, private to
/// onair, and a spoiled one is set aside and replaced.
final class KeptCertificateTests: XCTestCase {
    func testTheCertificateIsKeptPrivateAndReplacedWhenSpoiled() throws {
        let path = try temporaryDirectory("kept") + "/data/webrtc-certificate.pem"
        let first = try DTLSCertificate.kept(at: path)
        XCTAssertTrue(first.created)
        XCTAssertNil(first.replaced)
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o077, 0, "the private key is onair's alone")
        let again = try DTLSCertificate.kept(at: path)
        XCTAssertFalse(again.created)
        XCTAssertEqual(again.certificate, first.certificate, "the same fingerprint after a restart")
        try "spoiled".write(toFile: path, atomically: true, encoding: .utf8)
        let replaced = try DTLSCertificate.kept(at: path)
        XCTAssertTrue(replaced.created)
        XCTAssertNotEqual(replaced.certificate, first.certificate)
        XCTAssertTrue(replaced.replaced?.contains("is not a certificate and its key") ?? false, "\(replaced.replaced ?? "")")
        XCTAssertEqual(try String(contentsOfFile: path + ".corrupt", encoding: .utf8), "spoiled", "kept for a person to look at")
    }
}
