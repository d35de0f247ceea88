import Basics
import CSRT
import Live
import Media
import MPEGTS
import System

/// One SRT call (libsrt, live mode, caller) carrying the stream as MPEG-TS: from an IDR,
/// with presentation times from that IDR's capture, in messages of seven 188-byte packets
/// (1316 bytes, SRT's live payload). libsrt's sockets are not the kernel's: its epoll
/// waits on the call and on the destination's wake pipe together.
final class SRTOutlet: Outlet {
    private let socket: SRTSOCKET
    private let epoll: Int32
    private let latencyMs: Int
    private var writer: TSWriter
    private(set) var sending: Sending

    static let connectMilliseconds: Int32 = 10_000
    static let message = 7 * TSWriter.packetSize

    /// libsrt once per process, quiet (its own log would go to stderr, beside onair's).
    private static let started: Bool = {
        srt_setloglevel(2)  // LOG_CRIT
        return srt_startup() >= 0
    }()

    private init(socket: SRTSOCKET, epoll: Int32, latencyMs: Int, audio: AudioSpecificConfig?, now: Int64) {
        self.socket = socket
        self.epoll = epoll
        self.latencyMs = latencyMs
        writer = TSWriter(audio: audio)
        sending = Sending(now: now)
    }

    deinit {
        srt_epoll_release(epoll)
        srt_close(socket)
    }

    /// Calls `target` and waits (at most `connectMilliseconds`, woken by `wake`) until the
    /// listener takes the call: an outlet, or the reason it did not (libsrt's words for a
    /// wrong passphrase, a refused stream id, a timeout).
    static func open(_ target: SRTURL, stream: RealTimeStream, wake: WakePipe, stopped: () -> Bool) throws -> SRTOutlet {
        guard started else { throw LinkError.failed("SRT: libsrt would not start") }
        let address: SocketAddress
        if target.listener && target.host.isEmpty {
            address = SocketAddress(numeric: "0.0.0.0", port: target.port, ipv6: false)!
        } else {
            do { address = try SocketAddress.resolve(target.host, port: target.port)[0] } catch { throw LinkError.failed(error.description) }
        }
        var audio: AudioSpecificConfig?
        if let config = stream.audio?.config { audio = try? AudioSpecificConfig(bytes: config) }
        let socket = try configured(target)
        if target.listener {
            let accepted = try accept(on: socket, at: address, target, wake: wake, stopped: stopped)
            return try SRTOutlet(accepted, latencyMs: target.latencyMs, audio: audio, wake: wake)
        }
        let outlet = try SRTOutlet(socket, latencyMs: target.latencyMs, audio: audio, wake: wake)
        let called = address.withRawPointer { srt_connect(socket, $0.assumingMemoryBound(to: sockaddr.self), Int32(address.length)) }
        guard called != SRT_ERROR else { throw LinkError.failed("SRT: cannot call \(target.shown): \(lastError())") }
        let deadline = KernelClock.monotonic() + Int64(connectMilliseconds) * 1_000_000 + 500_000_000
        while true {
            if stopped() { throw LinkError.stopped }
            switch srt_getsockstate(socket) {
            case SRTS_CONNECTED:
                return outlet
            case SRTS_BROKEN, SRTS_CLOSED, SRTS_NONEXIST:
                throw LinkError.failed("SRT: \(target.shown) did not take the call: \(String(cString: srt_rejectreason_str(srt_getrejectreason(socket))))")
            default:
                guard KernelClock.monotonic() < deadline else { throw LinkError.failed("SRT: \(target.shown) did not answer") }
                _ = outlet.wait(timeoutMs: 200, wake: wake)
            }
        }
    }

    /// An outlet on a connected (or connecting) socket, waited on with `wake`.
    private convenience init(_ socket: SRTSOCKET, latencyMs: Int, audio: AudioSpecificConfig?, wake: WakePipe) throws {
        let epoll = srt_epoll_create()
        guard epoll >= 0 else { srt_close(socket); throw LinkError.failed("SRT: \(Self.lastError())") }
        self.init(socket: socket, epoll: epoll, latencyMs: latencyMs, audio: audio, now: KernelClock.monotonic())
        var modes = Int32(SRT_EPOLL_OUT.rawValue | SRT_EPOLL_ERR.rawValue)
        var readable = Int32(SRT_EPOLL_IN.rawValue)
        srt_epoll_add_usock(epoll, socket, &modes)
        srt_epoll_add_ssock(epoll, wake.read.rawValue, &readable)
    }

    /// A socket with the target's options: live mode's defaults, never blocking, the
    /// latency, the passphrase and the stream id (an accepted socket takes its listener's).
    private static func configured(_ target: SRTURL) throws -> SRTSOCKET {
        let socket = srt_create_socket()
        guard socket != SRT_INVALID_SOCK else { throw LinkError.failed("SRT: \(lastError())") }
        for (option, value) in [(SRTO_RCVSYN, 0), (SRTO_SNDSYN, 0), (SRTO_LATENCY, Int32(target.latencyMs)), (SRTO_CONNTIMEO, connectMilliseconds)] {
            var value = value
            guard srt_setsockflag(socket, option, &value, 4) == 0 else { srt_close(socket); throw LinkError.failed("SRT: \(lastError())") }
        }
        for (option, text) in [(SRTO_PASSPHRASE, target.passphrase), (SRTO_STREAMID, target.listener ? nil : target.streamID)] {
            guard let text else { continue }
            let set = text.withCString { srt_setsockflag(socket, option, $0, Int32(text.utf8.count)) }
            // The value is a secret: libsrt's words, never it.
            guard set == 0 else {
                srt_close(socket)
                throw LinkError.failed("SRT: \(option == SRTO_PASSPHRASE ? "the passphrase" : "the stream id") was refused: \(lastError())")
            }
        }
        return socket
    }

    /// Listens at `address` until a studio calls (or the destination is stopped, or its
    /// stream ends): the caller's socket. One caller at a time; the listening socket
    /// closes once it has one, and opens again for the next when that call ends.
    private static func accept(on listener: SRTSOCKET, at address: SocketAddress, _ target: SRTURL, wake: WakePipe,
                               stopped: () -> Bool) throws -> SRTSOCKET {
        defer { srt_close(listener) }
        let bound = address.withRawPointer { srt_bind(listener, $0.assumingMemoryBound(to: sockaddr.self), Int32(address.length)) }
        guard bound != SRT_ERROR, srt_listen(listener, 1) != SRT_ERROR else {
            throw LinkError.failed("SRT: cannot listen on port \(target.port): \(lastError())")
        }
        let epoll = srt_epoll_create()
        guard epoll >= 0 else { throw LinkError.failed("SRT: \(lastError())") }
        defer { srt_epoll_release(epoll) }
        var modes = Int32(SRT_EPOLL_IN.rawValue | SRT_EPOLL_ERR.rawValue)
        var readable = Int32(SRT_EPOLL_IN.rawValue)
        srt_epoll_add_usock(epoll, listener, &modes)
        srt_epoll_add_ssock(epoll, wake.read.rawValue, &readable)
        while true {
            if stopped() { throw LinkError.stopped }
            var storage = sockaddr_storage()
            var length = Int32(MemoryLayout<sockaddr_storage>.size)
            let caller = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_accept(listener, $0, &length) }
            }
            if caller != SRT_INVALID_SOCK { return caller }
            var ready = [SRTSOCKET](repeating: 0, count: 2), readyCount: Int32 = 2
            var system = [SYSSOCKET](repeating: 0, count: 2), systemCount: Int32 = 2
            _ = srt_epoll_wait(epoll, &ready, &readyCount, nil, nil, 500, &system, &systemCount, nil, nil)
            wake.drain()
        }
    }

    private static func lastError() -> String { String(cString: srt_getlasterror_str()) }

    func picture(_ picture: LivePicture) -> Int {
        let picture = picture.picture
        guard sending.gate.admit(picture) else { return 0 }
        sending.append(writer.video(picture.accessUnit, isSync: picture.isSync, sps: picture.sps, pps: picture.pps,
                                    time: ticks(picture.captureTime)), at: picture.captureTime, picture: true)
        return dropIfBehind()
    }

    func sound(_ sound: LiveSound) -> Int {
        let sound = sound.sound
        guard sending.gate.admit(sound: sound.captureTime) else { return 0 }
        sending.append(writer.audio(sound.accessUnit, time: ticks(sound.captureTime)), at: sound.captureTime)
        return dropIfBehind()
    }

    func lost() { sending.gate.lost() }

    func wait(timeoutMs: Int32, wake: WakePipe) -> Bool {
        var modes = Int32(SRT_EPOLL_ERR.rawValue | (sending.queue.isEmpty ? 0 : SRT_EPOLL_OUT.rawValue))
        srt_epoll_update_usock(epoll, socket, &modes)
        var ready = [SRTSOCKET](repeating: 0, count: 2), readyCount: Int32 = 2
        var writable = [SRTSOCKET](repeating: 0, count: 2), writableCount: Int32 = 2
        var system = [SYSSOCKET](repeating: 0, count: 2), systemCount: Int32 = 2
        _ = srt_epoll_wait(epoll, &ready, &readyCount, &writable, &writableCount, Int64(timeoutMs), &system, &systemCount, nil, nil)
        wake.drain()
        return false
    }

    func turn(now: Int64, readable: Bool) throws {
        let state = srt_getsockstate(socket)
        guard state == SRTS_CONNECTED else { throw LinkError.failed("SRT: the call ended (the receiver closed it or stopped answering)") }
        try sending.write(now: now) { bytes in
            let count = min(bytes.count, Self.message)
            let result = bytes.withUnsafeBytes { srt_sendmsg2(socket, $0.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(count), nil) }
            if result == SRT_ERROR {
                if srt_getlasterror(nil) == Int32(SRT_EASYNCSND.rawValue) { return 0 }
                throw LinkError.failed("SRT: \(Self.lastError())")
            }
            return count
        }
    }

    /// What is queued, for at most a second, then the call's end (libsrt says so to the
    /// receiver).
    func end(now: Int64) {
        let deadline = now + 1_000_000_000
        var progress = true
        while !sending.queue.isEmpty, progress, KernelClock.monotonic() < deadline {
            progress = ((try? turn(now: KernelClock.monotonic(), readable: false)) != nil)
            if progress && !sending.queue.isEmpty { KernelClock.sleepMonotonic(until: KernelClock.monotonic() + 5_000_000) }
        }
        // libsrt's own buffer too: a close drops what it still holds.
        var blocks = 0, bytes = 0
        while srt_getsndbuffer(socket, &blocks, &bytes) == 0, bytes > 0, KernelClock.monotonic() < deadline {
            KernelClock.sleepMonotonic(until: KernelClock.monotonic() + 5_000_000)
        }
        // And the receiver delivers what it has only after its latency: a close before
        // then loses the end (at most 2 s more).
        KernelClock.sleepMonotonic(until: KernelClock.monotonic() + Int64(min(latencyMs, 2000) + 20) * 1_000_000)
        srt_close(socket)
    }

    func close() { srt_close(socket) }

    /// The 90 kHz clock of MPEG-TS, from the stream's time zero.
    private func ticks(_ captureTime: Int64) -> Int64 { sending.gate.elapsed(captureTime) * 9 / 100_000 }

    /// Packets written and dropped unsent: the next ones say their counters jump.
    private func dropIfBehind() -> Int {
        let count = sending.dropIfBehind()
        if count > 0 { writer.discontinuity() }
        return count
    }
}

/// libsrt, for `onair version`.
public enum SRTLibrary {
    public static var version: LibraryVersion {
        LibraryVersion("libsrt", "\(SRT_VERSION_MAJOR).\(SRT_VERSION_MINOR).\(SRT_VERSION_PATCH)", debianSource: debianSource("srt", onair_debian_libsrt()))
    }
}
