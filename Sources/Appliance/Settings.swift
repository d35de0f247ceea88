import Access
import Codecs
import Destinations
import Devices
import Logging
import Media
import Network
import Publishing
import Recording
import Spool
import Streaming
import System
import Updates

/// Everything a run is configured with. Defaults are the embedded appliance defaults;
/// `onair.conf` and `--set` (then the dedicated flags) override them, key by key.
public struct Settings: Sendable, Equatable {
    public enum Quality: String, Sendable, CaseIterable {
        /// Chosen at start from an uplink probe to the destination (medium without one).
        case auto
        case low, medium, high
        /// The source talk's presets, landscape: size and bit rate.
        var preset: (width: Int, height: Int, bitrate: Int) {
            switch self {
            case .low: return (854, 480, 900_000)
            case .medium, .auto: return (1280, 720, 1_500_000)
            case .high: return (1280, 720, 2_500_000)
            }
        }
    }
    public enum SourceKind: String, Sendable, CaseIterable { case auto, synthetic, v4l2 }
    public enum StartMode: String, Sendable, CaseIterable { case now, button }
    public enum AudioMode: String, Sendable, CaseIterable { case auto, on, off }

    public var quality: Quality = .medium
    /// `video.ladder`: more rungs of the live picture from the same capture.
    public var ladder: LadderSetting = .off
    public var width: Int?
    public var height: Int?
    public var fps = 30
    public var bitrate: Int?
    public var rotation: Rotation = .none
    public var encoder: VideoEncoderKind = .auto

    public var audio: AudioMode = .auto
    /// `auto`: the source's own microphone (the synthetic tone); else an ALSA PCM name
    /// (`default`, `hw:1,0`, …) captured beside whatever the video source is.
    public var audioDevice = DeviceChoice.auto
    public var sampleRate = 48_000
    public var channels = 1
    public var audioBitrate = 64_000

    /// Segment length in milliseconds (Apple recommends IDRs at most 2 s apart).
    public var segmentMilliseconds = 2000
    /// Low-latency parts on the built-in server (`hls.part_seconds`); 0: none. 200 ms, as
    /// MediaMTX's `hlsPartDuration`: PART-HOLD-BACK is three parts (RFC 8216bis §4.4.3.8),
    /// so a viewer plays about 0.8 s behind the camera, where 333 ms parts hold it 1.3 s.
    public var partMilliseconds = 200

    public var source: SourceKind = .auto
    /// `auto`: the first V4L2 camera under /dev; or a device path.
    public var videoDevice = DeviceChoice.auto
    /// V4L2 buffers the driver fills in turn (mmap streaming).
    public var videoBuffers = 4
    public var pace: Pace = .realtime
    public var dataDirectory = "./var"
    /// The config files the settings were read from, in order (`--config`): the last is
    /// the owner's, which the settings page writes back to. Not a key.
    public var configFiles: [String] = []
    /// How much of the data file system stays free; the oldest published streams go first.
    public var minimumFree: MinimumFree = .automatic
    public var listen: String? = "127.0.0.1:8080"
    /// `webrtc.port`: the one UDP port every WebRTC viewer's media use, on the web
    /// server's address (0: any; nil: WebRTC off).
    public var webrtcPort: UInt16? = 8189
    /// `webrtc.max_viewers`; nil (`auto`): five per core, at least four — the encryption
    /// and sending of one 720p30 viewer costs a few per cent of a Pi 4's core.
    public var webrtcMaxViewers: Int?
    public var webrtcViewers: Int { webrtcMaxViewers ?? max(4, 5 * ThisProcess.processorCount) }
    /// `webrtc.max_viewers_per_address`: what one address (a household behind one router)
    /// may hold, so one client cannot lock the others out.
    public var webrtcViewersPerAddress = 4
    /// `rtsp.port`: RTSP (TCP) on the web server's address (0: any; nil: RTSP off).
    public var rtspPort: UInt16? = 8554
    /// `rtsp.max_clients`; nil (`auto`): five per core, at least ten — a client costs
    /// the RTP headers of its packets, no thread and no encryption.
    public var rtspMaxClients: Int?
    public var rtspClients: Int { rtspMaxClients ?? max(10, 5 * ThisProcess.processorCount) }
    /// `rtsp.max_clients_per_address`: an NVR opens a few (record, detect); far more from
    /// one address is one client locking the others out.
    public var rtspClientsPerAddress = 8
    /// `onvif.enabled`: the ONVIF services on the web server and WS-Discovery on the LAN.
    public var onvifEnabled = true
    /// `onvif.discovery_port`: WS-Discovery's UDP port (3702 everywhere ONVIF is; another
    /// only for tests and networks that move it).
    public var onvifDiscoveryPort: UInt16 = 3702
    /// `device.name`; nil (`auto`) until a run resolves it (`DeviceName.automatic`).
    public var deviceName: String?
    /// `[access]`: who may watch (viewers and device accounts); empty: anyone on the LAN.
    public var access = AccessList()
    /// `server.token`: the bearer token the control API wants; none: control is off.
    public var serverToken: String?
    /// `console.device`: where the status line goes (`auto`: /dev/serial0 or /dev/ttyAMA0
    /// when present); nil: off.
    public var consoleDevice: DeviceChoice? = .auto
    public var consoleIntervalSeconds = 5.0
    public var start: StartMode = .now
    /// Stop after this much media, in milliseconds.
    public var durationMilliseconds: Int?
    public var logFormat: Log.Format = .logfmt

    /// Publishing: off without a URL.
    public var publish = PublishSettings()
    /// `[destination.NAME]`: the platforms and RTMP servers the live stream goes to, by name.
    public var destinations: [String: DestinationSettings] = [:]
    /// `[wifi]`: the networks the board joins (`onair wifi-config` writes them for
    /// wpa_supplicant at boot; `onair run` says what the Wi-Fi does).
    public var wifi = WiFiSettings()
    /// `[network]`: a fixed address instead of DHCP.
    public var network = StaticAddress()
    /// `network.setup`: whether the board opens its setup network when it has none.
    public var networkSetup = SetupAccessPoint.Policy.auto
    /// The local recording beside the live stream.
    public var record = RecordProfile()
    /// What comes up when, at start.
    public var startup = StartupSettings()
    /// `update.confirm_seconds`: how long onair runs healthy in an update's new slot before
    /// the slot is kept (A/B images; onair-update-deadline gives up 180 s after that).
    public var updateConfirmSeconds = 120
    /// `update.reboot`: after an install, reboot into the new slot only when told to
    /// (`never`: `--reboot`, `?reboot=1`, or the next reboot), or at the first moment
    /// nothing is live or recording (`idle`).
    public var updateReboot = UpdateReboot.never
    public typealias UpdateReboot = Updates.UpdateReboot
    /// What the encoders sustain, and what to do about more.
    public var performance = PerformanceSettings()
    /// The record button.
    public var button = ButtonSettings()
    /// `preview.device`: `auto` (the first card with a connected display; none: headless),
    /// a card node, or nil (off).
    public var previewDevice: DeviceChoice? = .auto
    /// `video.preset`: the x264 preset (speed against compression), for both outputs.
    public var softwarePreset = "veryfast"
    /// `preview.mode`: `WxH` or `WxH@HZ`; nil: the connector's preferred mode.
    public var previewMode: DRMDisplay.Mode?
    /// `preview.modeset`: `auto` (atomic when the driver has it) or `legacy`.
    public var previewAtomic = true
    /// Lowering the frame rate instead of overheating.
    public var thermal = ThermalSettings()
    /// `time.servers`: NTP servers for the image's clock.
    public var time = TimeSettings()

    public init() {}

    /// What the camera granted, once it is open (before rotation); nil for the synthetic
    /// camera, which gives what it is asked.
    public var cameraSize: Size?

    /// The live picture before rotation: `video.width/height`, else the preset, made to
    /// the camera's aspect ratio and no larger than the camera.
    public var liveSize: Size {
        // An explicit ladder's top rung is the live picture.
        if case .rungs(let rungs) = ladder { return Size(rungs[0].width, rungs[0].height) }
        if let width, let height { return Size(width, height) }
        let preset = quality.preset
        guard let camera = cameraSize else { return Size(width ?? preset.width, height ?? preset.height) }
        let w = min(width ?? preset.width, camera.width)
        let h = height ?? min(camera.height, (w * camera.height / camera.width + 1) / 2 * 2)
        return Size(w, h)
    }

    /// What to ask the camera for: the larger of the live picture and the recording's,
    /// when the recording's size is set.
    public var requestedCaptureSize: Size {
        let live = liveSize
        if record.enabled, let w = record.width, let h = record.height, w * h > live.width * live.height { return Size(w, h) }
        return live
    }

    /// The picture the camera delivers (before rotation).
    public var captureWidth: Int { cameraSize?.width ?? requestedCaptureSize.width }
    public var captureHeight: Int { cameraSize?.height ?? requestedCaptureSize.height }
    public var videoBitrate: Int {
        if case .rungs(let rungs) = ladder { return rungs[0].bitrate }
        return bitrate ?? quality.preset.bitrate
    }
    /// The live encoder's picture (after rotation).
    public var encodedSize: (width: Int, height: Int) {
        rotation.outputSize(width: liveSize.width, height: liveSize.height)
    }
    public var audioEnabled: Bool { audio != .off }
    /// The recorded picture (after rotation): `record.width/height`, else the camera's.
    public var recordSize: (width: Int, height: Int) {
        rotation.outputSize(width: record.width ?? captureWidth, height: record.height ?? captureHeight)
    }
    public var recordFPS: Int { record.fps ?? fps }

    /// What the streaming engine needs, and no more: built once, when the camera is open.
    public var sessionProfile: SessionProfile {
        SessionProfile(live: liveProfile, recording: record.enabled ? recordingProfile : nil, fps: fps,
                       prerollSeconds: record.prerollSeconds, durationMilliseconds: durationMilliseconds,
                       waitsForEncoders: pace == .fast, performance: performance, dataDirectory: dataDirectory,
                       device: deviceName ?? "onair")
    }

    private var audioProfile: AudioEncoderSettings? {
        audioEnabled ? AudioEncoderSettings(sampleRate: sampleRate, channels: channels, bitrate: audioBitrate) : nil
    }

    public var liveProfile: LiveProfile {
        var video = VideoEncoderSettings(width: encodedSize.width, height: encodedSize.height, fps: fps, bitrate: videoBitrate,
                                         keyframeInterval: 1)  // the profile sets it from the segment length
        video.x264Preset = softwarePreset
        return LiveProfile(output: OutputProfile(encoder: encoder, video: video, rotation: rotation, audio: audioProfile,
                                                 dataDirectory: dataDirectory),
                           segmentMilliseconds: segmentMilliseconds, partMilliseconds: partMilliseconds,
                           rates: thermal.sensor == nil ? [] : thermal.fpsSteps.filter { $0 < fps },
                           lowerRungs: lowerRungs.map { rung in
                               let size = rotation.outputSize(width: rung.width, height: rung.height)
                               return Rung(width: size.width, height: size.height, bitrate: rung.bitrate)
                           })
    }

    public var recordingProfile: RecordingProfile {
        var video = VideoEncoderSettings(width: recordSize.width, height: recordSize.height, fps: recordFPS, bitrate: record.bitrate,
                                         keyframeInterval: 1)  // the profile sets it: an IDR every 2 s
        video.codec = record.codec
        video.x264Preset = softwarePreset
        return RecordingProfile(output: OutputProfile(encoder: record.encoder, video: video, rotation: rotation, audio: audioProfile,
                                                      dataDirectory: dataDirectory),
                                preallocateMegabytes: record.preallocateMegabytes, priority: record.priority)
    }
}

/// A device setting as the config file gives it: find one (`auto`), or this one (a path,
/// an ALSA PCM name). Where a setting can be `off`, that is nil. Decided once, at parse
/// time, so no part of onair compares strings with "auto" again.
public enum DeviceChoice: Sendable, Equatable, CustomStringConvertible {
    case auto
    case named(String)

    public init(_ text: String) { self = text == "auto" ? .auto : .named(text) }
    /// `off` is nil.
    public init?(orOff text: String) {
        guard text != "off" else { return nil }
        self.init(text)
    }

    /// The device asked for by name; nil for `auto`.
    public var name: String? {
        if case .named(let name) = self { return name }
        return nil
    }

    public var description: String { name ?? "auto" }
}

/// `publish.*`: where streams go besides the local disk, and how hard to try.
public struct PublishSettings: Sendable, Equatable {
    public var url: String?
    public var headers: [String] = []
    public var parallel = 2
    public var timeoutMilliseconds = 10_000
    public var maximumBackoffMilliseconds = 30_000
    public var drainMilliseconds = 60_000
    public var insecure = false
    public var s3Endpoint: String?
    public var s3Region: String?
    public var s3AccessKey: String?
    public var s3SecretKey: String?
    public var s3PathStyle = true

    public init() {}
}

/// `record.*`: the full-quality local recording, its own encoder profile and retention.
public struct RecordProfile: Sendable, Equatable {
    public var enabled = true
    /// nil: the camera's size and rate.
    public var width: Int?
    public var height: Int?
    public var fps: Int?
    public var bitrate = 5_000_000
    /// HEVC is used only when a hardware HEVC encoder opens; otherwise H.264.
    public var codec: VideoCodec = .h264
    public var encoder: VideoEncoderKind = .auto
    /// Space reserved ahead of the writer, MiB (0: none).
    public var preallocateMegabytes = 16
    /// Normal-priority recordings older than this are deleted (nil: kept until space runs low).
    public var keepDays: Int?
    public var priority: Recordings.Priority = .normal
    /// Seconds before a start that the live stream and the recording begin with (the
    /// encoders run while armed); 0: none.
    public var prerollSeconds = 0.0

    public init() {}
}

/// `startup.*`: the talk's deferred start, camera and preview first.
public struct StartupSettings: Sendable, Equatable {
    public enum Deferred: String, Sendable, CaseIterable {
        /// Everything else starts right after the first frame is presented.
        case auto
        /// The preview runs until an explicit call (SIGUSR1; a UI later).
        case manual
        /// Everything starts before the camera (the order without deferral, to compare).
        case off
    }
    public var deferred: Deferred = .auto
    /// Frames held while the encoders open, so an early start loses none.
    public var bufferSeconds = 2.0

    public init() {}
}
