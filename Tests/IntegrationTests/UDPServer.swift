import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A UDP socket on 127.0.0.1 (an ephemeral port) that receives with a 200 ms timeout,
/// answers whoever sent, or sends to a loopback port (the RTP and DTLS tests).
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

    /// Sends to 127.0.0.1:`port`.
    func send(_ bytes: [UInt8], toPort port: UInt16) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return send(bytes, to: address)
    }

    @discardableResult
    func send(_ bytes: [UInt8], to address: sockaddr_in) -> Bool {
        var to = address
        let sent = withUnsafePointer(to: &to) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return sent == bytes.count
    }
}
