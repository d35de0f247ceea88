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
        let addresses: [SocketAddress]
        do { addresses = try SocketAddress.resolve(target.host, port: target.port) } catch { throw LinkError.failed(error.description) }
        let address = addresses[0]
        let socket = srt_create_socket()
        guard socket != SRT_INVALID_SOCK else { throw LinkError.failed("SRT: \(lastError())") }
        let epoll = srt_epoll_create()
        guard epoll >= 0 else { srt_close(socket); throw LinkError.failed("SRT: \(lastError())") }
        var audio: AudioSpecificConfig?
        if let config = stream.audio?.config { audio = try? AudioSpecificConfig(bytes: config) }
        let outlet = SRTOutlet(socket: socket, epoll: epoll, latencyMs: target.latencyMs, audio: audio, now: KernelClock.monotonic())
        for (option, value) in [(SRTO_RCVSYN, 0), (SRTO_SNDSYN, 0), (SRTO_LATENCY, Int32(target.latencyMs)), (SRTO_CONNTIMEO, connectMilliseconds)] {
            var value = value
            guard srt_setsockflag(socket, option, &value, 4) == 0 else { throw LinkError.failed("SRT: \(lastError())") }
        }
        for (option, text) in [(SRTO_PASSPHRASE, target.passphrase), (SRTO_STREAMID, target.streamID)] {
            guard let text else { continue }
            let set = text.withCString { srt_setsockflag(socket, option, $0, Int32(strlen($0))) }
            // The value is a secret: libsrt's words, never it.
            guard set == 0 else { throw LinkError.failed("SRT: \(option == SRTO_PASSPHRASE ? "the passphrase" : "the stream id") was refused: \(lastError())") }
        }
        var modes = Int32(SRT_EPOLL_OUT.rawValue | SRT_EPOLL_ERR.rawValue)
        var readable = Int32(SRT_EPOLL_IN.rawValue)
        srt_epoll_add_usock(epoll, socket, &modes)
        srt_epoll_add_ssock(epoll, wake.read.rawValue, &readable)
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
            if progress && !sending.queue.isEmpty { usleep(5_000) }
        }
        // libsrt's own buffer too: a close drops what it still holds.
        var blocks = 0, bytes = 0
        while srt_getsndbuffer(socket, &blocks, &bytes) == 0, bytes > 0, KernelClock.monotonic() < deadline { usleep(5_000) }
        // And the receiver delivers what it has only after its latency: a close before
        // then loses the end (at most 2 s more).
        usleep(UInt32(min(latencyMs, 2000) + 20) * 1000)
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
