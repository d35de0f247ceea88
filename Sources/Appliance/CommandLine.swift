import Fetch
import Files
import Network
import System
import Updates

/// What the command line asked for.
public enum Invocation: Equatable {
    case run(Settings, configFiles: [String])
    case validate(directory: String)
    /// `onair validate URL`: a live low-latency server followed for `seconds`.
    case validateLive(url: String, seconds: Int)
    /// `onair fetch URL …`: an offline copy.
    case fetch(FetchOptions)
    /// `onair fetch --list`: the offline copies in a data directory.
    case fetchList(dataDirectory: String)
    /// `onair network-config`: `[network]`'s fixed address as systemd-networkd's `.network`.
    case networkConfig(StaticAddress, wifi: WiFiSettings, output: String?)
    /// `onair time-config`: the NTP servers of `time.servers`, as systemd-timesyncd's drop-in.
    case timeConfig(TimeSettings, output: String?)
    /// `onair wifi-config`: [wifi]'s networks as wpa_supplicant's configuration.
    case wifiConfig(WiFiSettings, interface: String?, output: String?)
    /// `onair names`: the board's name on its LAN, set as the hostname and its services
    /// written for DNS-SD.
    case names(Settings, setHostname: Bool, dnssd: String?)
    /// `onair forget ID`: stop listing a published stream its owner deleted.
    case forget(id: String, Settings)
    /// `onair passwd`: a user of `[access]` added, replaced or removed.
    case passwd(PasswdOptions)
    /// `onair selftest`: the board's encoders and screen, checked on the board.
    case selftest(displaySeconds: Int)
    /// `onair update`: a signed bundle installed into the root slot not running.
    case update(UpdateOptions)
    case version
    case help(String)
    /// Asked for nothing: the usage on stderr and exit 2.
    case usage(String)
}

/// `onair run|validate|version|help`, each with `--help`. Flags are config keys under
/// another name, applied after the config file and `--set`, so the command line wins.
public enum CommandLineParser {
    public static let version = "0.1.0"

    static let runFlags: [String: String] = [
        "--source": "source.kind", "--out": "storage.dir", "--listen": "server.listen",
        "--duration": "session.duration", "--start": "session.start", "--pace": "source.pace",
        "--log-format": "log.format"
    ]

    public static func parse(_ arguments: [String], readFile: (String) throws -> [UInt8] = readWholeFile) throws -> Invocation {
        guard let command = arguments.first else { return .usage(usage) }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "help", "--help", "-h": return .help(rest.first == "run" ? runUsage : usage)
        case "version", "--version": return .version
        case "validate":
            if rest.contains("--help") || rest.contains("-h") { return .help(validateUsage) }
            if let url = rest.first, url.hasPrefix("http://") || url.hasPrefix("https://") {
                return .validateLive(url: url, seconds: try secondsFlag(Array(rest.dropFirst()), command: "validate", default: 10, range: 1...3600))
            }
            guard rest.count == 1, !rest[0].hasPrefix("-") else { throw ConfigError.usage("validate: expected one stream directory (see 'onair validate --help')") }
            return .validate(directory: rest[0])
        case "run": return try parseRun(rest, readFile: readFile)
        case "fetch":
            if rest.contains("--help") || rest.contains("-h") { return .help(fetchUsage) }
            return try parseFetch(rest)
        case "time-config":
            if rest.contains("--help") || rest.contains("-h") { return .help(timeConfigUsage) }
            var output: String?
            var configs: [String] = []
            var i = 0
            while i < rest.count {
                guard i + 1 < rest.count, ["--config", "--write"].contains(rest[i]) else {
                    throw ConfigError.usage("time-config: unexpected '\(rest[i])' (see 'onair time-config --help')")
                }
                if rest[i] == "--write" { output = rest[i + 1] } else { configs += ["--config", rest[i + 1]] }
                i += 2
            }
            guard case .run(let settings, _) = try parseRun(configs, readFile: readFile) else { return .usage(usage) }
            return .timeConfig(settings.time, output: output)
        case "wifi-config":
            if rest.contains("--help") || rest.contains("-h") { return .help(wifiConfigUsage) }
            var output: String?
            var interface: String?
            var configs: [String] = []
            var cursor = ArgumentCursor(rest) { "wifi-config: \($0) needs a value (see 'onair wifi-config --help')" }
            while let word = cursor.next() {
                switch word {
                case "--config": configs += ["--config", try cursor.value(for: word)]
                case "--write": output = try cursor.value(for: word)
                case "--interface": interface = try cursor.value(for: word)
                default: throw ConfigError.usage("wifi-config: unexpected '\(word)' (see 'onair wifi-config --help')")
                }
            }
            guard case .run(let settings, _) = try parseRun(configs, readFile: readFile) else { return .usage(usage) }
            return .wifiConfig(settings.wifi, interface: interface, output: output)
        case "network-config":
            if rest.contains("--help") || rest.contains("-h") { return .help(networkConfigUsage) }
            var output: String?
            var configs: [String] = []
            var cursor = ArgumentCursor(rest) { "network-config: \($0) needs a value (see 'onair network-config --help')" }
            while let word = cursor.next() {
                switch word {
                case "--config": configs += ["--config", try cursor.value(for: word)]
                case "--write": output = try cursor.value(for: word)
                default: throw ConfigError.usage("network-config: unexpected '\(word)' (see 'onair network-config --help')")
                }
            }
            guard case .run(let settings, _) = try parseRun(configs, readFile: readFile) else { return .usage(usage) }
            return .networkConfig(settings.network, wifi: settings.wifi, output: output)
        case "names":
            if rest.contains("--help") || rest.contains("-h") { return .help(namesUsage) }
            var runArguments: [String] = []
            var setHostname = false
            var dnssd: String?
            var cursor = ArgumentCursor(rest) { "names: \($0) needs a value (see 'onair names --help')" }
            while let word = cursor.next() {
                switch word {
                case "--config", "--out", "--set": runArguments += [word, try cursor.value(for: word)]
                case "--set-hostname": setHostname = true
                case "--dnssd": dnssd = try cursor.value(for: word)
                default: throw ConfigError.usage("names: unexpected '\(word)' (see 'onair names --help')")
                }
            }
            guard case .run(let settings, _) = try parseRun(runArguments, readFile: readFile) else { return .usage(usage) }
            return .names(settings, setHostname: setHostname, dnssd: dnssd)
        case "forget":
            if rest.contains("--help") || rest.contains("-h") { return .help(forgetUsage) }
            guard let id = rest.first, !id.hasPrefix("-") else { throw ConfigError.usage("forget: expected a stream id (see 'onair forget --help')") }
            guard case .run(let settings, _) = try parseRun(Array(rest.dropFirst()), readFile: readFile) else { return .usage(usage) }
            return .forget(id: id, settings)
        case "passwd": return try Passwd.parse(rest)
        case "selftest": return try SelfTest.parse(rest)
        case "update": return try Self.parseUpdate(rest)
        default: throw ConfigError.usage("unknown command '\(command)' (try 'onair help')")
        }
    }

    /// A command whose one flag is `--seconds N` (`validate URL`, `selftest`): N, or
    /// `default` without it; anything else is a usage error naming the command.
    static func secondsFlag(_ words: [String], command: String, default: Int, range: ClosedRange<Int>) throws -> Int {
        var seconds = `default`
        var cursor = ArgumentCursor(words) { "\(command): \($0) needs a value (see 'onair \(command) --help')" }
        while let word = cursor.next() {
            guard word == "--seconds" else { throw ConfigError.usage("\(command): unexpected '\(word)' (see 'onair \(command) --help')") }
            let value = try cursor.value(for: word)
            guard let number = Int(value), range.contains(number) else {
                throw ConfigError.usage("\(command): --seconds expects a whole number of seconds from \(range.lowerBound) to \(range.upperBound), got '\(value)'")
            }
            seconds = number
        }
        return seconds
    }

    /// A config file's bytes (decoded line by line, so a bad byte is reported with its line).
    public static func readWholeFile(_ path: String) throws -> [UInt8] {
        do { return try FileSystem.readRegular(path, limit: FileSystem.smallLimit) } catch {
            throw ConfigError.unreadable(path: path, reason: "\(error)")
        }
    }

    static func parseRun(_ arguments: [String], readFile: (String) throws -> [UInt8]) throws -> Invocation {
        var configFiles: [String] = []
        var overrides: [ConfigFile.Entry] = []
        var flags: [ConfigFile.Entry] = []
        var words = ArgumentCursor(arguments) { "\($0): missing value" }
        func value(_ flag: String) throws -> String { try words.value(for: flag) }
        while var argument = words.next() {
            var inline: String?
            if argument.hasPrefix("--"), let eq = argument.firstIndex(of: "=") {
                inline = String(argument[argument.index(after: eq)...])
                argument = String(argument[..<eq])
            }
            switch argument {
            case "--help", "-h": return .help(runUsage)
            case "--config": configFiles.append(try inline ?? value(argument))
            case "--set": overrides.append(try ConfigFile.override(inline ?? value(argument)))
            default:
                guard let key = runFlags[argument] else { throw ConfigError.usage("unknown flag '\(argument)' (see 'onair run --help')") }
                flags.append(.init(key: key, value: try inline ?? value(argument), origin: argument))
            }
        }
        var files: [(path: String, bytes: [UInt8])] = []
        for configFile in configFiles {
            do { files.append((configFile, try readFile(configFile))) } catch let error as ConfigError { throw error } catch {
                throw ConfigError.unreadable(path: configFile, reason: nil)
            }
        }
        var settings = try settings(files: files, overrides: overrides, flags: flags)
        settings.configFiles = configFiles
        return .run(settings, configFiles: configFiles)
    }

    /// The settings of config files' texts applied in order — a board's defaults, then
    /// the owner's onair.conf, later ones winning — then `--set`s and flags, with the
    /// checks that span keys. What `onair run` starts with and the settings page saves.
    static func settings(files: [(path: String, bytes: [UInt8])], overrides: [ConfigFile.Entry] = [],
                         flags: [ConfigFile.Entry] = []) throws -> Settings {
        var settings = Settings()
        for file in files { try ConfigFile.apply(try ConfigFile.parse(file.bytes, file: file.path), to: &settings) }
        try ConfigFile.apply(overrides, to: &settings)
        // A flag's error names the flag, not the key behind it.
        for flag in flags {
            do { try ConfigFile.apply([flag], to: &settings) } catch ConfigError.at(let origin, _, let error) {
                throw ConfigError.at(origin: origin, key: nil, error)
            }
        }
        // A viewer's digests were made with the realm; without it none can be checked.
        if !settings.access.viewers.isEmpty && settings.access.realm.isEmpty {
            throw ConfigError.at(origin: files.last?.path ?? "--set", key: "access.realm",
                                 .invalid("access.viewer lines need the realm they were made with (onair passwd writes both)"))
        }
        // A network is whole or not at all: an SSID, and a password unless it is open; a
        // fixed address has its gateway inside its network.
        if let problem = settings.wifi.problems().first ?? settings.network.problems().first {
            throw ConfigError.at(origin: files.last?.path ?? "--set", key: nil, .invalid(problem))
        }
        return settings
    }

    public static let usage = """
    onair \(version): a camera appliance that streams live HLS and serves it

    Usage:
      onair run [options]          capture, encode, package and serve (see 'onair run --help')
      onair validate DIR           check a stream directory against the HLS rules
      onair time-config [--config FILE]... [--write PATH]
                                   the NTP servers of time.servers as systemd-timesyncd's drop-in
      onair wifi-config [--config FILE]... [--interface NAME] [--write PATH]
                                   [wifi]'s networks as wpa_supplicant's configuration (see 'onair wifi-config --help')
      onair network-config [--config FILE]... [--write PATH]
                                   [network]'s fixed address as systemd-networkd's .network (see 'onair network-config --help')
      onair names [--config FILE]... [--out DIR] [--set-hostname] [--dnssd DIR]
                                   the board's name on its LAN (NAME.local) and its services (see 'onair names --help')
      onair fetch URL [options]    an offline copy of an HLS stream (see 'onair fetch --help')
      onair forget ID [options]    stop listing a published stream deleted at the destination
      onair passwd USER [options]  who may watch: a viewer's password, an NVR's account (see 'onair passwd --help')
      onair selftest               this board's encoders and screen, PASS/FAIL/ABSENT each (see 'onair selftest --help')
      onair update FILE|URL [--reboot]
                                   install a signed update bundle into the slot not running (see 'onair update --help')
      onair version                print the version, the libraries linked in and their codecs
      onair help                   this text

    """

    public static let runUsage = """
    Usage: onair run [options]

      --config FILE                read settings from FILE (onair.conf format); repeatable, later files win
      --set KEY=VALUE              set one config key (repeatable), e.g. --set video.fps=25
      --source auto|synthetic|v4l2 where frames come from (default auto: the first V4L2 camera, else synthetic)
      --out DIR                    data directory (default ./var); streams go to DIR/streams/<id>/
      --listen ADDR:PORT|off       built-in web server (default 127.0.0.1:8080)
      --duration SECONDS           stop after this much media, finish the stream and exit
      --start now|button           record at once (default) or wait for the button (Enter on stdin)
      --pace realtime|fast         synthetic source: real time (default) or as fast as possible
      --log-format logfmt|json     log lines for people (default) or machines

    While running, each line on standard input (Enter) starts or stops recording.
    Config keys: \(ConfigFile.knownKeys.joined(separator: ", ")).

    """

    public static let forgetUsage = """
    Usage: onair forget ID [--config FILE]... [--set KEY=VALUE]... [--out DIR]

    The board lists every stream it has published in <publish.url>/<device.name>/streams.json,
    also after storage.min_free deleted the stream from the board. When you delete stream ID
    at the destination, this takes it off that list for good (the same as
    POST /api/forget?stream=ID); a running onair uploads the shorter list within a second,
    otherwise the next run does. The files at the destination are left as they are.

    """

    public static let networkConfigUsage = """
    Usage: onair network-config [--config FILE]... [--write PATH]

    Reads [network] from the config files (as 'onair run' does) and writes
    systemd-networkd's .network for its fixed address (network.address, network.gateway,
    network.dns; on the cable, or Wi-Fi with network.link) to PATH, or to stdout. Without
    an address PATH is removed: the board takes its address by DHCP. The board runs it at
    boot, before systemd-networkd (onair-network.service), into
    /run/systemd/network/15-onair-static.network.

    Exit status: 0 written (or removed); 1 when PATH cannot be written; 2 when the config
    is wrong (the line says which file, line and key).

    """

    public static let wifiConfigUsage = """
    Usage: onair wifi-config [--config FILE]... [--interface NAME] [--write PATH]

    Reads [wifi] from the config files (as 'onair run' does) and writes wpa_supplicant's
    configuration for its networks (wpa_supplicant.conf(5), readable by root alone) to
    PATH, or to stdout. The board runs it at boot for each Wi-Fi interface
    (onair-wifi@.service). No password is written as text: WPA2's as the key derived
    from it, WPA3's as hex.

    With no network in [wifi] the configuration has none: wpa_supplicant then only scans
    when asked (the setup page lists the networks it sees).

    Exit status: 0 written; 1 when --interface is another than wifi.interface: nothing
    written; 2 when the config is wrong (the line says which file, line and key).

    """

    public static let namesUsage = """
    Usage: onair names [--config FILE]... [--out DIR] [--set KEY=VALUE]... [--set-hostname] [--dnssd DIR]

    Prints the board's name on its network: device.name (auto: as 'onair run' names the
    board, from the hostname or the data directory's device-id) as a DNS label, lower
    case, '.' and '_' as '-'. --set-hostname makes it the hostname (sethostname(2); root),
    which systemd-resolved announces over multicast DNS as NAME.local. --dnssd DIR writes
    systemd.dnssd(5) files there for the viewer (_http._tcp, server.listen's port) and,
    while RTSP is on, the stream (_rtsp._tcp, rtsp.port). The board runs it at boot
    (onair-names.service), before systemd-resolved is started again to read them.

    """

    public static let timeConfigUsage = """
    Usage: onair time-config [--config FILE]... [--write PATH]

    Reads time.servers from the config files (as 'onair run' does) and writes the
    systemd-timesyncd drop-in (timesyncd.conf(5)) naming them to PATH, or to stdout. An
    entry that is not a host name or an IP address is left out with one line on stderr;
    the exit status is still 0, so the clock is set from the others (or Debian's pool).

    """

    public static let validateUsage = """
    Usage: onair validate DIR
           onair validate URL [--seconds N]

    Checks DIR/index.m3u8 and everything it lists (playlists, init.mp4, every segment)
    against onair's HLS rule book (docs/HLS_RULES.md in its source); prints one line per
    finding, under the id of the rule it breaks, and exits 1 on errors.

    With the URL of a live low-latency stream (a multivariant or media playlist, such as
    onair's http://HOST:8080/streams/ID/index.m3u8), follows it for N seconds (default 10)
    as a low-latency player does, asking for each hinted part and then for the playlist
    that lists it, and checks the LL-HLS rules: every playlist (PART-INF, SERVER-CONTROL,
    part durations against PART-TARGET, where the tags go, the hint), that each blocking
    reload lists the part asked for and that the hinted part is the next one listed, that
    the parts of every segment read whole are that segment sample for sample with truthful
    INDEPENDENT flags, that the playlist only grows, and that a part asked for without a
    segment is refused (400).

    """
}

/// The words of a command line, one at a time, and the value a flag takes from the next.
struct ArgumentCursor {
    private let words: [String]
    private var index = -1
    /// The message for a flag given without its value.
    private let missing: (String) -> String

    init(_ words: [String], missing: @escaping (String) -> String) {
        self.words = words
        self.missing = missing
    }

    mutating func next() -> String? {
        index += 1
        return index < words.count ? words[index] : nil
    }

    mutating func value(for flag: String) throws -> String {
        guard let value = next() else { throw ConfigError.usage(missing(flag)) }
        return value
    }
}

extension CommandLineParser {
    /// `onair update FILE|URL [--reboot]` (Updates' `Update` says what it does).
    static func parseUpdate(_ words: [String]) throws -> Invocation {
        if words.contains("--help") || words.contains("-h") { return .help(Update.usage) }
        var options: UpdateOptions?
        var reboot = false
        for word in words {
            if word == "--reboot" { reboot = true; continue }
            guard !word.hasPrefix("-"), options == nil else {
                throw ConfigError.usage("update: unexpected '\(word)' (see 'onair update --help')")
            }
            options = UpdateOptions(source: word)
        }
        guard var options else { throw ConfigError.usage("update: expected a bundle's file or URL (see 'onair update --help')") }
        options.reboot = reboot
        return .update(options)
    }
}
