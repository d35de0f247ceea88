import Access
import Basics
import Codecs
import Destinations
import Devices
import Logging
import Media
import Network
import Publishing
import Recording
import Server
import Spool
import Streaming

/// A configuration problem, said in one line that names where it is.
public indirect enum ConfigError: Error, CustomStringConvertible, Equatable {
    /// A value not of the form its key takes: the form, and the value as given (quoted).
    case expected(String, got: String?)
    /// A value of the right form that breaks a rule of its key ("must be even").
    case invalid(String)
    /// A secret's value that is not valid: said without showing it.
    case secret
    /// A line of a config file (or a `--set`) that is not `[section]` or `key = value`.
    case syntax(origin: String, String)
    /// A key onair does not have, where it was set.
    case unknownKey(origin: String, key: String)
    /// A value's error where it was set (`onair.conf:12`, `--set`, `fetch`), under its key;
    /// without a key for a flag, whose name is the origin.
    case at(origin: String, key: String?, ConfigError)
    /// A config file that cannot be read.
    case unreadable(path: String, reason: String?)
    /// The command line: a command, flag or argument onair does not take.
    case usage(String)

    public var description: String {
        switch self {
        case .expected(let form, let got): return "expected \(form)" + (got.map { ", got \($0)" } ?? "")
        case .invalid(let reason): return reason
        case .secret: return "not a valid value (not shown: it is a secret)"
        case .syntax(let origin, let what): return "\(origin): \(what)"
        case .unknownKey(let origin, let key): return "\(origin): unknown key \(ConfigFile.quotedKey(key))"
        case .at(let origin, let key, let error): return "\(origin): " + (key.map { "\($0): " } ?? "") + error.description
        case .unreadable(let path, let reason): return "--config \(path): cannot read the file" + (reason.map { " (\($0))" } ?? "")
        case .usage(let text): return text
        }
    }
}

/// `onair.conf`: `[section]` headers and `key = value` lines; `#` or `;` starts a comment.
/// A key in a section is the dotted key (`[video]` + `fps` = `video.fps`), the same name
/// `--set` takes. Unknown keys and bad values are errors naming the file, line and key.
public enum ConfigFile {
    public struct Entry: Equatable {
        public var key: String
        public var value: String
        /// `file:line` or `--set` for error messages.
        public var origin: String
    }

    public static func parse(_ text: String, file: String) throws -> [Entry] {
        try parse(Array(text.utf8), file: file)
    }

    /// Lines end in LF or CRLF. A line that is not UTF-8, holds a control character, or
    /// repeats a key is an error naming the file and line; no message quotes a whole line
    /// or the value of a secret key (`Secrets`).
    public static func parse(_ bytes: [UInt8], file: String) throws -> [Entry] {
        var entries: [Entry] = []
        var section = ""
        var seen: [String: Int] = [:]
        for (index, raw) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let origin = "\(file):\(index + 1)"
            let lineBytes = raw.last == 0x0D ? raw.dropLast() : raw
            guard let decoded = String(validating: lineBytes, as: UTF8.self) else { throw ConfigError.syntax(origin: origin, "not valid UTF-8") }
            if let control = decoded.unicodeScalars.first(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
                throw ConfigError.syntax(origin: origin, "control character U+\(fourHexDigits(control.value)) in the line")
            }
            let trimmed = decoded.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix(";") { continue }
            if trimmed.hasPrefix("[") {
                guard trimmed.hasSuffix("]"), trimmed.count > 2 else { throw ConfigError.syntax(origin: origin, "malformed section header") }
                section = String(trimmed.dropFirst().dropLast()).trimmingWhitespace()
                // A section may repeat (owners append overrides), but it must be one onair has.
                guard knownSections.contains(section) || destinationName(section: section) != nil || wifiName(section: section) != nil else {
                    throw ConfigError.syntax(origin: origin, "unknown section [\(quotedKey(section))]")
                }
                continue
            }
            guard let eq = trimmed.firstIndex(of: "=") else {
                // The line may hold a secret (`secret_key: …`, or a value run into its key):
                // say only a word that is the name of a key onair has.
                let name = String(trimmed.prefix { $0.isLetter || $0.isNumber || "._-".contains($0) })
                let known = !name.isEmpty && (keys.keys.contains { $0 == name || $0.hasSuffix("." + name) } || destinationKeys[name] != nil
                                              || wifiNetworkKeys[name] != nil)
                throw ConfigError.syntax(origin: origin, "expected 'key = value'" + (known ? " in the line starting '\(name)'" : ""))
            }
            let key = String(trimmed[..<eq]).trimmingWhitespace()
            var value = String(trimmed[trimmed.index(after: eq)...]).trimmingWhitespace()
            if value.count >= 2, value.hasPrefix("\""), let close = value.lastIndex(of: "\""), close != value.startIndex,
               value[value.index(after: close)...].trimmingWhitespace().isEmpty || value[value.index(after: close)...].trimmingWhitespace().hasPrefix("#") {
                // A value in double quotes is taken as written, to its line's last quote:
                // a Wi-Fi password may hold " #", or begin or end with a space.
                value = String(value[value.index(after: value.startIndex)..<close])
            } else if let hash = value.firstRange(of: " #") ?? value.firstRange(of: "\t#") {
                // A comment after the value needs whitespace before it: `fps = 30  # smooth`.
                value = String(value[..<hash.lowerBound]).trimmingWhitespace()
            }
            guard !key.isEmpty else { throw ConfigError.syntax(origin: origin, "empty key") }
            let full = section.isEmpty ? key : "\(section).\(key)"
            // Last-wins inside one file hides a mistake; across files it is the point.
            if let first = seen[full], !repeatable.contains(full) {
                throw ConfigError.syntax(origin: origin, "\(quotedKey(full)) is set again (first at line \(first))")
            }
            seen[full] = index + 1
            entries.append(Entry(key: full, value: value, origin: origin))
        }
        return entries
    }

    /// Keys that add a value each time they appear.
    static let repeatable: Set<String> = ["publish.header", "access.viewer", "access.device"]

    /// Every `[section]` some known key lives under (`publish`, `publish.s3`, …).
    static let knownSections: Set<String> = Set(keys.keys.flatMap { key -> [String] in
        let parts = key.split(separator: ".")
        return (1..<parts.count).map { parts[..<$0].joined(separator: ".") }
    })

    /// A key as a message may show it: keys are lower-case letters, digits, '_', '-' and
    /// '.', so what follows another character is not shown (a mangled line can run a value
    /// into its key), nor is a key that names a secret.
    static func quotedKey(_ key: String) -> String {
        let valid = key.prefix { ("a"..."z").contains($0) || ("0"..."9").contains($0) || "_-.".contains($0) }
        let shown = valid.count == key.count ? key : valid + "…"
        if isSecret(String(valid)) || valid.contains("secret") || valid.contains("token") { return "(not shown: it names a secret)" }
        return quoted(String(shown))
    }

    /// Keys whose values are never printed, nor any part of them.
    static func isSecret(_ key: String) -> Bool {
        key.hasSuffix("secret_key") || key == "server.token" || key == "publish.header" || key == "access.viewer" || key == "access.device"
            || (key.hasPrefix("destination.") && (key.hasSuffix(".key") || key.hasSuffix(".passphrase")))
            || (key.hasPrefix("wifi.") && key.hasSuffix(".password")) || key == "wifi.password"
    }

    /// `destination.NAME` (a section) → NAME, when NAME is one a destination may have.
    static func destinationName(section: String) -> String? { name(section: section, of: "destination.") }

    /// The NAME of a named section (`PREFIXNAME`): 1 to 32 of a-z, 0-9, '-', '_', so it
    /// is a section, a metric label and a log value as it is.
    static func name(section: String, of prefix: String) -> String? {
        guard section.hasPrefix(prefix) else { return nil }
        let name = String(section.dropFirst(prefix.count))
        return DestinationSettings.validName(name) ? name : nil
    }

    /// A destination's keys (`destination.NAME.KEY`): any number of destinations, each
    /// named by its section.
    static let destinationKeys: [String: @Sendable (inout DestinationSettings, String) throws -> Void] = [
        "url": { destination, value in
            if value.isEmpty || value == "preset" { destination.url = nil; return }
            if let problem = DestinationSettings.urlProblem(value) { throw ConfigError.invalid(problem) }
            destination.url = value
        },
        // Secrets: checked without being shown (DestinationSettings.target, srtTarget).
        "key": { $0.key = $1 },
        "passphrase": { $0.passphrase = $1.isEmpty ? nil : $1 },
        "latency_ms": { $0.latencyMs = try integer($1, 20...8000) },
        "enabled": { $0.enabled = try boolean($1) },
        // Counted from 1 (the top) as the console names rungs; checked against the ladder
        // when the run starts (Pipeline.openDestinations).
        "rung": { $0.rung = try integer($1, 1...LadderSetting.maximumRungs) - 1 },
        "preset": {
            guard let platform = Platform.named($1) else {
                throw ConfigError.expected("one of \(Platform.all.map(\.name).joined(separator: ", "))", got: quoted($1))
            }
            $0.preset = platform
        },
    ]

    /// `destination.NAME.KEY` as a key of Settings; nil when `key` is not one.
    static func destinationKey(_ key: String) -> (@Sendable (inout Settings, String) throws -> Void)? {
        guard let dot = key.lastIndex(of: "."), let name = destinationName(section: String(key[..<dot])),
              let apply = destinationKeys[String(key[key.index(after: dot)...])] else { return nil }
        return { settings, value in
            var destination = settings.destinations[name] ?? DestinationSettings(name: name)
            try apply(&destination, value)
            settings.destinations[name] = destination
        }
    }

    /// `wifi.NAME` (a section) → NAME, named as a destination is (`[wifi.office]`).
    static func wifiName(section: String) -> String? { name(section: section, of: "wifi.") }

    /// A Wi-Fi network's keys: `wifi.KEY` for the `[wifi]` section's own network,
    /// `wifi.NAME.KEY` for another's.
    static let wifiNetworkKeys: [String: @Sendable (inout WiFiNetwork, String) throws -> Void] = [
        "ssid": { network, value in
            if let problem = WiFiSettings.ssidProblem(value) { throw ConfigError.invalid(problem) }
            network.ssid = value
        },
        // A secret: checked without being shown.
        "password": { network, value in
            if value.isEmpty { network.password = nil; return }
            if let problem = WiFiSettings.passwordProblem(value) { throw ConfigError.invalid(problem) }
            network.password = value
        },
        "security": { $0.security = try choice($1, WiFiNetwork.Security.self) },
        "hidden": { $0.hidden = try boolean($1) },
        "priority": { $0.priority = try integer($1, 0...1000) },
    ]

    /// `wifi.KEY` or `wifi.NAME.KEY` of a network as a key of Settings; nil when `key` is not one.
    static func wifiKey(_ key: String) -> (@Sendable (inout Settings, String) throws -> Void)? {
        guard key.hasPrefix("wifi."), let dot = key.lastIndex(of: "."), let apply = wifiNetworkKeys[String(key[key.index(after: dot)...])] else {
            return nil
        }
        let section = String(key[..<dot])
        guard let name = section == "wifi" ? "" : wifiName(section: section) else { return nil }
        return { settings, value in
            var network = settings.wifi.networks[name] ?? WiFiNetwork(name: name)
            try apply(&network, value)
            settings.wifi.networks[name] = network
        }
    }

    /// `gpiochipN:LINE` or `/path/to/chip:LINE`: the form is checked here, so that at run
    /// time a line that cannot be had is a device's problem (waited out), never a typo's.
    static func gpioLine(_ value: String) throws -> String {
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, (1...5).contains(parts[1].count), parts[1].allSatisfy({ ("0"..."9").contains($0) }),
              let offset = Int(parts[1]), offset <= 65_535 else {
            throw ConfigError.expected("off or a line such as gpiochip0:17", got: quoted(value))
        }
        return value
    }

    /// A user is named once across viewers and devices.
    static func unnamed(_ name: String, in access: AccessList) throws {
        guard !access.viewers.contains(where: { $0.name == name }) && access.secret(name) == nil else {
            throw ConfigError.invalid("\(name) is already a user (each name once: onair passwd replaces a user's line)")
        }
    }

    /// `--set key=value`.
    public static func override(_ text: String) throws -> Entry {
        guard let eq = text.firstIndex(of: "="), eq != text.startIndex else {
            throw ConfigError.syntax(origin: "--set \(text)", "expected KEY=VALUE")
        }
        return Entry(key: String(text[..<eq]).trimmingWhitespace(), value: String(text[text.index(after: eq)...]).trimmingWhitespace(), origin: "--set")
    }

    /// Every key onair knows, with how to apply its value.
    static let keys: [String: @Sendable (inout Settings, String) throws -> Void] = [
        "video.quality": { $0.quality = try choice($1, Settings.Quality.self) },
        "video.width": { $0.width = try evenInteger($1, 16...7680) },
        "video.height": { $0.height = try evenInteger($1, 16...4320) },
        "device.name": {
            if $1 == "auto" { $0.deviceName = nil; return }
            if let problem = DeviceName.problem($1) { throw ConfigError.invalid(problem) }
            $0.deviceName = $1
        },
        "video.fps": { $0.fps = try integer($1, 1...240) },
        "video.ladder": { $0.ladder = try LadderSetting.parse($1) },
        "video.bitrate": { $0.bitrate = try bitrate($1) },
        "video.rotation": {
            guard let degrees = Int($1), let rotation = Rotation(rawValue: degrees) else { throw ConfigError.expected("0, 90, 180 or 270", got: quoted($1)) }
            $0.rotation = rotation
        },
        "video.encoder": { $0.encoder = try choice($1, VideoEncoderKind.self) },
        "video.device": {
            guard $1 == "auto" || $1.hasPrefix("/") else { throw ConfigError.expected("auto or a device path such as /dev/video0", got: quoted($1)) }
            $0.videoDevice = DeviceChoice($1)
        },
        "video.buffers": { $0.videoBuffers = try integer($1, 2...32) },
        "audio.enabled": { $0.audio = try choice($1, Settings.AudioMode.self) },
        "audio.sample_rate": {
            let rate = try integer($1, 8000...96000)
            guard AudioSpecificConfig.sampleRates.contains(rate) else { throw ConfigError.invalid("\(rate) Hz is not an AAC sampling rate") }
            $0.sampleRate = rate
        },
        "audio.device": {
            guard !$1.isEmpty else { throw ConfigError.expected("auto or an ALSA PCM name such as default or hw:1,0", got: nil) }
            $0.audioDevice = DeviceChoice($1)
        },
        "audio.channels": { $0.channels = try integer($1, 1...2) },
        "audio.bitrate": { $0.audioBitrate = try bitrate($1) },
        "hls.segment_seconds": { $0.segmentMilliseconds = try milliseconds($1, 500...10_000) },
        "hls.part_seconds": {
            let ms = try milliseconds($1, 0...2_000)
            guard ms == 0 || ms >= 100 else { throw ConfigError.expected("0 (no low-latency parts) or seconds between 0.1 and 2.0", got: quoted($1)) }
            $0.partMilliseconds = ms
        },
        "source.kind": { $0.source = try choice($1, Settings.SourceKind.self) },
        "source.pace": {
            guard let pace = Pace(rawValue: $1) else { throw ConfigError.expected("realtime or fast", got: quoted($1)) }
            $0.pace = pace
        },
        "storage.dir": {
            guard !$1.isEmpty else { throw ConfigError.expected("a directory", got: nil) }
            $0.dataDirectory = $1
        },
        "storage.min_free": { $0.minimumFree = try minimumFree($1) },
        "server.token": {
            guard $1.count >= 16 || $1.isEmpty else { throw ConfigError.invalid("a token needs at least 16 characters") }
            $0.serverToken = $1.isEmpty ? nil : $1
        },
        "access.realm": {
            guard AccessList.validRealm($1) else { throw ConfigError.expected("the realm onair passwd wrote (printable, no quotes, at most 64 characters)", got: quoted($1)) }
            $0.access.realm = $1
        },
        // Repeatable, each a user; their values are never shown (they are, or stand for, passwords).
        "access.viewer": {
            guard let viewer = AccessList.viewer($1) else { throw ConfigError.invalid("not a viewer line of onair passwd: 'NAME md5:<hex> sha-256:<hex>' (not shown)") }
            try ConfigFile.unnamed(viewer.name, in: $0.access)
            $0.access.viewers.append(viewer)
        },
        "access.device": {
            guard let device = AccessList.device($1) else { throw ConfigError.invalid("not a device line of onair passwd --device: 'NAME <16 to 128 characters>' (not shown)") }
            try ConfigFile.unnamed(device.name, in: $0.access)
            $0.access.devices.append(device)
        },
        "console.device": { $0.consoleDevice = DeviceChoice(orOff: $1) },
        "console.interval_s": { $0.consoleIntervalSeconds = Double(try milliseconds($1, 1000...3_600_000)) / 1000 },
        "server.listen": { $0.listen = $1 == "off" ? nil : try listenAddress($1) },
        "webrtc.port": { $0.webrtcPort = $1 == "off" ? nil : UInt16(try integer($1, 0...65_535)) },
        "webrtc.max_viewers": { $0.webrtcMaxViewers = $1 == "auto" ? nil : try integer($1, 1...200) },
        "webrtc.max_viewers_per_address": { $0.webrtcViewersPerAddress = try integer($1, 1...200) },
        "rtsp.port": { $0.rtspPort = $1 == "off" ? nil : UInt16(try integer($1, 0...65_535)) },
        "rtsp.max_clients": { $0.rtspMaxClients = $1 == "auto" ? nil : try integer($1, 1...500) },
        "rtsp.max_clients_per_address": { $0.rtspClientsPerAddress = try integer($1, 1...500) },
        "onvif.enabled": { $0.onvifEnabled = try boolean($1) },
        "onvif.discovery_port": { $0.onvifDiscoveryPort = UInt16(try integer($1, 1...65_535)) },
        "session.start": { $0.start = try choice($1, Settings.StartMode.self) },
        "session.duration": { $0.durationMilliseconds = try milliseconds($1, 1...Int(Int32.max)) },
        "log.format": { $0.logFormat = try choice($1, Log.Format.self) },
        "publish.url": { $0.publish.url = $1.isEmpty || $1 == "off" ? nil : $1 },
        // Repeatable: each line adds a header (e.g. a bearer token).
        "publish.header": {
            guard let colon = $1.firstIndex(of: ":"), colon != $1.startIndex,
                  !$1[..<colon].contains(" ") else { throw ConfigError.expected("'Name: value'", got: nil) }
            $0.publish.headers.append($1)
        },
        "publish.parallel": { $0.publish.parallel = try integer($1, 1...16) },
        "publish.timeout": { $0.publish.timeoutMilliseconds = try milliseconds($1, 1000...600_000) },
        "publish.max_backoff": { $0.publish.maximumBackoffMilliseconds = try milliseconds($1, 1000...3_600_000) },
        "publish.drain_seconds": { $0.publish.drainMilliseconds = try milliseconds($1, 0...86_400_000) },
        "publish.insecure": { $0.publish.insecure = try boolean($1) },
        "publish.s3.endpoint": { $0.publish.s3Endpoint = $1 },
        "publish.s3.region": { $0.publish.s3Region = $1 },
        "publish.s3.access_key": { $0.publish.s3AccessKey = $1 },
        "publish.s3.secret_key": { $0.publish.s3SecretKey = $1 },
        "publish.s3.path_style": { $0.publish.s3PathStyle = try boolean($1) },
        "performance.overload": { $0.performance.overload = try choice($1, PerformanceSettings.Overload.self) },
        "performance.capacity.x264": { $0.performance.capacity[.x264] = $1 == "auto" ? nil : Double(try pixelRate($1)) },
        "performance.capacity.vaapi": { $0.performance.capacity[.vaapi] = $1 == "auto" ? nil : Double(try pixelRate($1)) },
        "performance.capacity.v4l2m2m": { $0.performance.capacity[.v4l2m2m] = $1 == "auto" ? nil : Double(try pixelRate($1)) },
        "button.gpio": { $0.button.gpio = $1 == "off" || $1.isEmpty ? nil : try gpioLine($1) },
        "button.active_low": { $0.button.activeLow = try boolean($1) },
        "button.bias": {
            guard ["pull-up", "pull-down", "none"].contains($1) else { throw ConfigError.expected("pull-up, pull-down or none", got: quoted($1)) }
            $0.button.bias = $1
        },
        "button.debounce_ms": { $0.button.debounceMs = try integer($1, 0...1000) },
        "button.input": { $0.button.input = DeviceChoice(orOff: $1) },
        "button.keys": {
            guard let keys = ButtonEvents.parseKeys($1) else { throw ConfigError.expected("key names such as KEY_RECORD,KEY_SPACE or codes", got: quoted($1)) }
            $0.button.keys = keys
        },
        "button.mode": { $0.button.mode = try choice($1, ButtonSettings.Mode.self) },
        "button.min_hold_ms": { $0.button.minimumHoldMs = try integer($1, 0...60_000) },
        "button.min_interval_ms": { $0.button.minimumIntervalMs = try integer($1, 0...10_000) },
        "update.confirm_seconds": { $0.updateConfirmSeconds = try integer($1, 10...3600) },
        "update.reboot": { $0.updateReboot = try choice($1, Settings.UpdateReboot.self) },
        "button.long_press_s": { $0.button.longPressSeconds = Double(try milliseconds($1, 0...60_000)) / 1000 },
        "button.long_press": { $0.button.longPress = try choice($1, ButtonSettings.LongPress.self) },
        "button.shutdown_command": { $0.button.shutdownCommand = $1 },
        "tally.gpio": { $0.button.tally = $1 == "off" || $1.isEmpty ? nil : try gpioLine($1) },
        "tally.active_low": { $0.button.tallyActiveLow = try boolean($1) },
        "thermal.sensor": { $0.thermal.sensor = DeviceChoice(orOff: $1) },
        "thermal.fps_steps": {
            let steps = $1.split(separator: ",").compactMap { Int($0.trimmingWhitespace()) }
            guard !steps.isEmpty, steps.count == $1.split(separator: ",").count, steps.allSatisfy({ (1...240).contains($0) }) else {
                throw ConfigError.expected("frame rates such as 30,24,20,15,10", got: quoted($1))
            }
            $0.thermal.fpsSteps = steps
        },
        "thermal.hot_c": { $0.thermal.hotC = Double(try integer($1, 30...120)) },
        "thermal.cool_c": { $0.thermal.coolC = Double(try integer($1, 20...110)) },
        "thermal.dwell_s": { $0.thermal.dwellSeconds = Double(try milliseconds($1, 500...600_000)) / 1000 },
        "preview.device": {
            guard $1 == "auto" || $1 == "off" || $1.hasPrefix("/") else { throw ConfigError.expected("auto, off or a path such as /dev/dri/card0", got: quoted($1)) }
            $0.previewDevice = DeviceChoice(orOff: $1)
        },
        "video.preset": {
            let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow"]
            guard presets.contains($1) else { throw ConfigError.expected("one of \(presets.joined(separator: ", "))", got: quoted($1)) }
            $0.softwarePreset = $1
        },
        "preview.mode": {
            if $1 == "auto" { $0.previewMode = nil; return }
            let parts = $1.split(separator: "@")
            let size = parts.first.map { $0.split(separator: "x").compactMap { Int($0) } } ?? []
            guard parts.count <= 2, size.count == 2, size.allSatisfy({ (1...16384).contains($0) }),
                  let refresh = parts.count == 2 ? Int(parts[1]) : 0 else {
                throw ConfigError.expected("auto, WIDTHxHEIGHT or WIDTHxHEIGHT@HZ such as 1920x1080@60", got: quoted($1))
            }
            $0.previewMode = DRMDisplay.Mode(width: size[0], height: size[1], refresh: refresh)
        },
        "preview.modeset": {
            guard $1 == "auto" || $1 == "legacy" else { throw ConfigError.expected("auto or legacy", got: quoted($1)) }
            $0.previewAtomic = $1 == "auto"
        },
        "startup.deferred": { $0.startup.deferred = try choice($1, StartupSettings.Deferred.self) },
        "startup.buffer_seconds": { $0.startup.bufferSeconds = Double(try milliseconds($1, 0...10_000)) / 1000 },
        "record.enabled": { $0.record.enabled = try boolean($1) },
        "record.width": { $0.record.width = $1 == "auto" ? nil : try evenInteger($1, 16...7680) },
        "record.height": { $0.record.height = $1 == "auto" ? nil : try evenInteger($1, 16...4320) },
        "record.fps": { $0.record.fps = $1 == "auto" ? nil : try integer($1, 1...240) },
        "record.bitrate": { $0.record.bitrate = try bitrate($1) },
        "record.codec": { $0.record.codec = try choice($1, VideoCodec.self) },
        "record.encoder": { $0.record.encoder = try choice($1, VideoEncoderKind.self) },
        "record.preallocate_mb": { $0.record.preallocateMegabytes = try integer($1, 0...4096) },
        "record.keep_days": { $0.record.keepDays = $1 == "off" ? nil : try integer($1, 1...36_500) },
        "record.preroll_seconds": { $0.record.prerollSeconds = Double(try milliseconds($1, 0...10_000)) / 1000 },
        "record.priority": { $0.record.priority = try choice($1, Recordings.Priority.self) },
        "wifi.country": { settings, value in
            guard let country = WiFiSettings.country(value) else { throw ConfigError.expected("a country's two letters, such as GB or US", got: quoted(value)) }
            settings.wifi.country = country
        },
        "wifi.interface": { settings, value in
            if let problem = WiFiSettings.interfaceProblem(value) { throw ConfigError.expected(problem, got: quoted(value)) }
            settings.wifi.interface = value
        },
        "network.address": {
            if $1.isEmpty || $1 == "dhcp" { $0.network.address = nil; return }
            guard let address = StaticAddress.prefix($1) else {
                throw ConfigError.expected("dhcp or an IPv4 address with its prefix length, such as 192.168.1.50/24", got: quoted($1))
            }
            $0.network.address = address
        },
        "network.gateway": {
            if $1.isEmpty { $0.network.gateway = nil; return }
            guard let gateway = StaticAddress.ipv4($1) else { throw ConfigError.expected("an IPv4 address such as 192.168.1.1", got: quoted($1)) }
            $0.network.gateway = gateway
        },
        "network.dns": {
            let words = $1.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" })
            let servers = words.compactMap { StaticAddress.ipv4(String($0)) }
            guard servers.count == words.count, servers.count <= 8 else {
                throw ConfigError.expected("up to 8 IPv4 addresses such as 192.168.1.1 1.1.1.1", got: quoted($1))
            }
            $0.network.dns = servers
        },
        "network.link": { $0.network.link = try choice($1, StaticAddress.Link.self) },
        "network.interface": { settings, value in
            if value == "auto" { settings.network.interface = nil; return }
            if let problem = WiFiSettings.interfaceProblem(value) { throw ConfigError.expected("auto or " + problem, got: quoted(value)) }
            settings.network.interface = value
        },
        "network.setup": { $0.networkSetup = try choice($1, SetupAccessPoint.Policy.self) },
        // Never an error: a bad entry is left out and said (TimeSettings.problems).
        "time.servers": { $0.time.servers = $1.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" }).map(String.init) }
    ]

    public static var knownKeys: [String] { keys.keys.sorted() }

    public static func apply(_ entries: [Entry], to settings: inout Settings) throws {
        for entry in entries {
            guard let apply = keys[entry.key] ?? destinationKey(entry.key) ?? wifiKey(entry.key) else {
                throw ConfigError.unknownKey(origin: entry.origin, key: entry.key)
            }
            if entry.key == "time.servers" { settings.time.origin = entry.origin }
            do { try apply(&settings, entry.value) } catch let error as ConfigError {
                // A secret key's own rules (`.invalid`) are said without its value; any
                // other error might quote it.
                let shown: ConfigError
                if case .invalid = error { shown = error } else { shown = isSecret(entry.key) ? .secret : error }
                throw ConfigError.at(origin: entry.origin, key: entry.key, shown)
            }
        }
    }
}

/// A value from a config file or the command line, made safe to print.
func quoted(_ value: String) -> String { quotedForMessage(value) }

/// A code point's four (or more) upper-case hex digits, as in U+0000.
func fourHexDigits(_ value: UInt32) -> String {
    let hex = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - hex.count)) + hex
}

