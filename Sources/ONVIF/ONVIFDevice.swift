/// What an ONVIF client is told about the board and its stream: who it is (Device
/// service), what it streams and where (Media service). Filled by the appliance; every
/// value here comes from the board itself, none from a request.
public struct ONVIFDevice: Sendable {
    /// `device.name`.
    public var name: String
    public var manufacturer: String
    /// The board (`rpi4`, `qemu-x86_64`): model, hardware id and discovery scope.
    public var hardware: String
    /// onair's version.
    public var firmware: String
    public var serial: String
    /// The device's stable identity (a UUID): WS-Discovery's endpoint reference.
    public var uuid: String

    public init(name: String, manufacturer: String = "onair", hardware: String, firmware: String, serial: String, uuid: String) {
        self.name = name
        self.manufacturer = manufacturer
        self.hardware = hardware
        self.firmware = firmware
        self.serial = serial
        self.uuid = uuid
    }

    /// ONVIF Core §7.3.2.2's scopes: the profile, the type, the name and the hardware.
    public var scopes: [String] {
        ["onvif://www.onvif.org/Profile/Streaming", "onvif://www.onvif.org/type/video_encoder", "onvif://www.onvif.org/type/audio_encoder",
         "onvif://www.onvif.org/name/" + Self.scopeText(name), "onvif://www.onvif.org/hardware/" + Self.scopeText(hardware)]
    }

    /// A scope's last segment: a URI path segment (RFC 3986 §3.3), other bytes %-escaped.
    static func scopeText(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let plain = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || "-._~".utf8.contains(byte)
            out += plain ? String(UnicodeScalar(byte)) : "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
        }
        return out
    }
}

/// The live stream as the Media service describes it (its one profile).
public struct ONVIFStream: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var fps: Int
    public var bitrate: Int
    /// Pictures from one IDR to the next.
    public var govLength: Int
    /// `Baseline`, `Main`, `Extended` or `High` (tt:H264Profile).
    public var h264Profile: String
    public var audio: Audio?

    public struct Audio: Sendable, Equatable {
        public var sampleRate: Int
        public var bitrate: Int
        public var channels: Int
        public init(sampleRate: Int, bitrate: Int, channels: Int) {
            self.sampleRate = sampleRate
            self.bitrate = bitrate
            self.channels = channels
        }
    }

    public init(width: Int, height: Int, fps: Int, bitrate: Int, govLength: Int, h264Profile: String, audio: Audio?) {
        self.width = width
        self.height = height
        self.fps = fps
        self.bitrate = bitrate
        self.govLength = govLength
        self.h264Profile = h264Profile
        self.audio = audio
    }
}

/// The wall clock as GetSystemDateAndTime tells it: its time, and whether it is kept by
/// NTP — an unsynchronised board says `Manual`, the only honest value ONVIF offers.
public struct ONVIFClock: Sendable {
    public var unixMilliseconds: Int64
    public var synchronized: Bool
    public init(unixMilliseconds: Int64, synchronized: Bool) {
        self.unixMilliseconds = unixMilliseconds
        self.synchronized = synchronized
    }
}

/// One network interface as GetNetworkInterfaces tells it.
public struct ONVIFInterface: Sendable, Equatable {
    public var name: String
    public var hardwareAddress: String
    public var mtu: Int
    public var ipv4: [(address: String, prefixLength: Int)]
    public var dhcp: Bool

    public init(name: String, hardwareAddress: String, mtu: Int, ipv4: [(address: String, prefixLength: Int)], dhcp: Bool) {
        self.name = name
        self.hardwareAddress = hardwareAddress
        self.mtu = mtu
        self.ipv4 = ipv4
        self.dhcp = dhcp
    }

    public static func == (a: ONVIFInterface, b: ONVIFInterface) -> Bool {
        a.name == b.name && a.hardwareAddress == b.hardwareAddress && a.mtu == b.mtu && a.dhcp == b.dhcp
            && a.ipv4.map(\.address) == b.ipv4.map(\.address) && a.ipv4.map(\.prefixLength) == b.ipv4.map(\.prefixLength)
    }
}
