import Basics
import CALSA
import Media
import System
import Threading

/// Why a device (a display, a GPIO line, an input device, a microphone) cannot be used.
public enum DeviceError: Error, CustomStringConvertible, Equatable {
    /// What a setting names cannot be used: the key (`preview.device`), what it names
    /// (a path, a line, a mode) and why.
    case setting(key: String, value: String, reason: String)
    /// A kernel call on an open device failed: what was asked, and the kernel's answer.
    case call(String, Errno)
    /// The display has no buffer layout for a pixel format.
    case noLayout(FourCC)
    /// libasound refused: the device, what was asked, and its reason (snd_strerror).
    case sound(device: String, call: String, reason: String)

    public var description: String {
        switch self {
        case .setting(let key, let value, let reason): return "\(key) \(value): \(reason)"
        case .call(let what, let error): return "\(what): \(error)"
        case .noLayout(let format): return "no dumb buffer layout for \(format)"
        case .sound(let device, let call, let reason): return "audio device \(device): \(call): \(reason)"
        }
    }
}

/// A microphone through ALSA's PCM API: interleaved S16_LE at the configured rate and
/// channels (or S32_LE, converted, for devices that offer nothing else, as many I2S MEMS
/// microphones do on `hw:`), in periods of about 20 ms. Each chunk's capture time comes from the driver's
/// timestamp (`snd_pcm_status` htstamp, on CLOCK_MONOTONIC like the camera's), stepped
/// back over what was still buffered, so audio and video share one clock. An overrun
/// (xrun) is recovered with `snd_pcm_recover` and counted; the gap it leaves shows in the
/// timestamps, and the live path fills it with silence.
public final class ALSAMicrophone: @unchecked Sendable {  // libasound's `pcm`: opened in init, read on the capture thread, closed in deinit after the join
    public let device: String
    public let sampleRate: Int
    public let channels: Int
    public let periodFrames: Int
    private var pcm: OpaquePointer?
    private let thread = StoppableThread()
    private let xrunCount = Locked(0)
    /// The device gives 32-bit samples; they are narrowed to 16.
    public let widened: Bool

    public var xruns: Int { xrunCount.withLock { $0 } }

    /// Opens and configures `device` (`default`, `hw:1,0`, any PCM name) for capture.
    public init(device: String, sampleRate: Int, channels: Int) throws {
        self.device = device
        onair_alsa_quiet()
        func check(_ code: Int32, _ what: String) throws {
            if code < 0 { throw DeviceError.sound(device: device, call: what, reason: String(cString: snd_strerror(code))) }
        }
        try check(snd_pcm_open(&pcm, device, SND_PCM_STREAM_CAPTURE, 0), "cannot open")
        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        try check(snd_pcm_hw_params_any(pcm, hw), "no configuration")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "interleaved access")
        let s16 = snd_pcm_hw_params_test_format(pcm, hw, SND_PCM_FORMAT_S16_LE) == 0
        try check(snd_pcm_hw_params_set_format(pcm, hw, s16 ? SND_PCM_FORMAT_S16_LE : SND_PCM_FORMAT_S32_LE),
                  s16 ? "S16_LE samples" : "S16_LE or S32_LE samples")
        widened = !s16
        try check(snd_pcm_hw_params_set_channels(pcm, hw, UInt32(channels)), "\(channels) channel(s)")
        var rate = UInt32(sampleRate)
        try check(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, nil), "\(sampleRate) Hz")
        var period = snd_pcm_uframes_t(Int(rate) / 50)
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, nil), "20 ms periods")
        var buffer = period * 8
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer), "buffer")
        try check(snd_pcm_hw_params(pcm, hw), "applying the configuration")
        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(pcm, sw), "software parameters")
        // Driver timestamps on CLOCK_MONOTONIC, the clock every capture time uses.
        try check(snd_pcm_sw_params_set_tstamp_mode(pcm, sw, SND_PCM_TSTAMP_ENABLE), "timestamps")
        try check(snd_pcm_sw_params_set_tstamp_type(pcm, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC), "monotonic timestamps")
        try check(snd_pcm_sw_params(pcm, sw), "applying the software parameters")
        self.sampleRate = Int(rate)
        self.channels = channels
        periodFrames = Int(period)
    }

    deinit {
        stop()
        if let pcm { snd_pcm_close(pcm) }
    }

    /// Starts capturing into `sink` on a thread of its own.
    public func start(into sink: CaptureSink, clock: MediaClock = MonotonicClock()) {
        thread.start(name: "onair-alsa") { [self] in run(sink, clock) }
    }

    public func stop() {
        // The drop ends a read that waits; the thread then sees it is stopped.
        thread.stop(waking: { if let pcm { snd_pcm_drop(pcm) } })
    }

    private var isStopped: Bool { thread.isStopped }

    /// S32_LE → S16_LE: the top 16 bits, as ALSA's own linear conversion does.
    static func narrow(_ wide: [Int32], count: Int, into samples: inout [Int16]) {
        for i in 0..<count { samples[i] = Int16(truncatingIfNeeded: wide[i] >> 16) }
    }

    private func run(_ sink: CaptureSink, _ clock: MediaClock) {
        guard let pcm else { return }
        var status: OpaquePointer?
        snd_pcm_status_malloc(&status)
        defer { snd_pcm_status_free(status) }
        var samples = [Int16](repeating: 0, count: periodFrames * channels)
        var wide = [Int32](repeating: 0, count: widened ? periodFrames * channels : 0)
        while !isStopped {
            let read = widened
                ? wide.withUnsafeMutableBytes { snd_pcm_readi(pcm, $0.baseAddress, snd_pcm_uframes_t(periodFrames)) }
                : samples.withUnsafeMutableBytes { snd_pcm_readi(pcm, $0.baseAddress, snd_pcm_uframes_t(periodFrames)) }
            if widened && read > 0 { Self.narrow(wide, count: Int(read) * channels, into: &samples) }
            if read < 0 {
                if isStopped { return }
                // EPIPE (overrun) or ESTRPIPE (suspend): recover and go on.
                xrunCount.withLock { $0 += 1 }
                if snd_pcm_recover(pcm, Int32(read), 1) < 0 { return }
                continue
            }
            let frames = Int(read)
            guard frames > 0 else { continue }
            var captured = clock.now()
            if snd_pcm_status(pcm, status) == 0 {
                var stamp = timespec()
                snd_pcm_status_get_htstamp(status, &stamp)
                let htstamp = Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec)
                if htstamp > 0 { captured = htstamp }
                // The first frame read was captured (still buffered + read) frames earlier.
                let behind = Int64(snd_pcm_status_get_avail(status)) + Int64(frames)
                captured -= rescale(behind, from: Int64(sampleRate), to: Timescale.nanoseconds)
            }
            sink.capture(AudioChunk(samples: Array(samples[0..<(frames * channels)]), channels: channels,
                                    sampleRate: sampleRate, captureTime: captured))
        }
    }
}

extension ALSAMicrophone {
    /// libasound: always the board's shared library (it loads the ALSA plugins).
    public static var libraryVersion: LibraryVersion {
        LibraryVersion("libasound", String(cString: snd_asoundlib_version()), debianSource: "")
    }
}
