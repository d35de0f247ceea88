import Foundation
import XCTest
import Network

/// The setup network's DNS server asked by a real resolver (BIND's dig): every name is
/// the board, over UDP, with EDNS as resolvers send it; garbage between two questions
/// stops nothing.
final class SetupDNSTests: XCTestCase {
    func testDigFindsTheBoardForEveryName() throws {
        let server = try SetupDNSServer(bound: [127, 0, 0, 1], port: 0)
        server.start()
        defer { server.stop() }
        let port = try XCTUnwrap(server.boundPort)
        func dig(_ arguments: [String]) throws -> String {
            let asked = try runTool("/usr/bin/dig", ["@127.0.0.1", "-p", "\(port)", "+tries=1", "+time=5"] + arguments, seconds: 30)
            XCTAssertEqual(asked.status, 0, asked.stderr)
            return String(decoding: asked.stdout, as: UTF8.self)
        }
        for name in ["connectivitycheck.gstatic.com", "captive.apple.com", "www.msftconnecttest.com", "onair.local"] {
            XCTAssertEqual(try dig(["+short", name, "A"]), "127.0.0.1\n", name)
        }
        let aaaa = try dig(["captive.apple.com", "AAAA"])
        XCTAssertTrue(aaaa.contains("status: NOERROR") && aaaa.contains("ANSWER: 0"), aaaa)
        // Garbage on the port, then a real question: still answered.
        let garbage = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(garbage) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian, sin_addr: in_addr(s_addr: UInt32(0x7F00_0001).bigEndian),
                                  sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        for size in [0, 1, 12, 511, 1400] {
            let bytes = [UInt8](repeating: 0xFF, count: size)
            _ = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(garbage, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        XCTAssertEqual(try dig(["+short", "example.com"]), "127.0.0.1\n")
    }
}
