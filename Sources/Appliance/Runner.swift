import Devices
import Fetch
import Files
import HLS
import Layout
import Logging
import Network
import Publishing
import Recording
import Server
import Spool
import Streaming
import System
import Threading
import Updates

/// `onair run`: wires source → session → files, the web server, stdin and signals, and
/// waits until the run is over. Exit status: 0 ok, 1 runtime failure, 2 usage or config.
public enum Runner {
    public static func main(_ arguments: [String]) -> Int32 {
        let invocation: Invocation
        do { invocation = try CommandLineParser.parse(arguments) } catch {
            printError("onair: \(error)")
            return 2
        }
        switch invocation {
        case .help(let text): print(text, terminator: ""); return 0
        case .usage(let text): writeStandardError(text); return 2
        case .version: print(VersionReport.text, terminator: ""); return 0
        case .validate(let directory): return validate(directory)
        case .validateLive(let url, let seconds): return validateLive(url, seconds: seconds)
        case .timeConfig(let time, let output): return timeConfig(time, output: output)
        case .wifiConfig(let wifi, let interface, let output): return wifiConfig(wifi, interface: interface, output: output)
        case .networkConfig(let network, let wifi, let output): return networkConfig(network, wifi: wifi, output: output)
        case .names(let settings, let setHostname, let dnssd): return names(settings, setHostname: setHostname, dnssd: dnssd)
        case .fetch(let options): return fetch(options)
        case .forget(let id, let settings): return forget(id, settings)
        case .passwd(let options): return Passwd.run(options)
        case .selftest(let seconds): return SelfTest.run(displaySeconds: seconds)
        case .update(let options): return Update.run(options)
        case .fetchList(let directory): print(OfflineStore.table(OfflineStore.list(dataDirectory: directory)), terminator: ""); return 0
        case .run(let settings, _): return run(settings, arguments: arguments)
        }
    }

    static func printError(_ line: String) { writeStandardError(line + "\n") }

    /// `onair fetch`: 0 when the copy is complete, 1 when it stopped (it resumes from there).
    static func fetch(_ options: FetchOptions) -> Int32 {
        let terminal = StandardError.isTerminal
        let progress = FetchProgress(clock: MonotonicClock(), write: { writeStandardError(terminal ? $0 : $0 + "\n") }, terminal: terminal)
        do {
            let result = try Fetcher(options, say: { printError($0) }, progress: progress).run()
            print("\(result.path)  \(FetchProgress.clockTime(result.seconds))  \(result.fetched) segments fetched, \(result.resumed) already here")
            return 0
        } catch {
            if terminal { writeStandardError("\n") }
            printError("onair: fetch: \(error)")
            return 1
        }
    }

    /// `onair forget ID`: 0 once the index no longer lists it; 2 when there is nothing to
    /// forget it from (no destination, or a stream the board never published there).
    static func forget(_ id: String, _ configured: Settings) -> Int32 {
        var settings = configured
        return exitStatus("forget") {
            guard let destination = try publishDestination(settings, log: .silent()) else {
                throw RunFailure.configuration("forget: publish.url is not set: this board publishes nowhere")
            }
            if settings.deviceName == nil { settings.deviceName = DeviceName.automatic(dataDirectory: settings.dataDirectory) }
            let device = settings.deviceName ?? "onair"
            let key = Publisher.journalKey(destination: destination.description, folder: device)
            // A stream still open is being recorded (or was cut by a crash, which the next
            // start closes): a running onair must not lose it from under its live output.
            if StreamLayout.isID(id), let playlist = StreamWriter.mainPlaylist(in: StreamLayout(root: settings.dataDirectory).stream(id)),
               !ParsedPlaylist(text: playlist).isEnded {
                throw RunFailure.configuration("forget: \(id) is still being recorded (its playlist has no EXT-X-ENDLIST): stop it first")
            }
            guard try PublishedIndex.forget(id, root: settings.dataDirectory, key: key) else {
                throw RunFailure.configuration("forget: \(id) is not a stream this board published to \(destination) \(device)/")
            }
            print("forgot \(id): \(device)/\(StreamLayout.catalog) at \(destination) no longer lists it (the files there are left as they are)")
        }
    }

    /// `onair time-config`: the drop-in written whole (atomically) or printed.
    static func timeConfig(_ time: TimeSettings, output: String?) -> Int32 {
        for problem in time.problems { printError("onair: \(problem)") }
        guard let output else { print(time.timesyncdConfig, terminator: ""); return 0 }
        do {
            try writeFile(Array(time.timesyncdConfig.utf8), to: output)
            return 0
        } catch {
            printError("onair: time-config --write \(output): \(error)")
            return 1
        }
    }

    /// `onair wifi-config`: 0 written (with no network when [wifi] names none: the radio
    /// still scans, for the setup page's list), 1 another interface than the board's.
    static func wifiConfig(_ wifi: WiFiSettings, interface: String?, output: String?) -> Int32 {
        if let interface, interface != wifi.interface {
            printError("onair: wifi-config: \(interface) is not wifi.interface (\(wifi.interface)): left alone")
            return 1
        }
        let text = SupplicantConfig.render(wifi)
        guard let output else { print(text, terminator: ""); return 0 }
        do {
            // Keys derived from the passwords: root's alone.
            try writeFile(Array(text.utf8), to: output, permissions: 0o600)
            return 0
        } catch {
            printError("onair: wifi-config --write \(output): \(error)")
            return 2
        }
    }

    /// `onair network-config`: the `.network` written whole (atomically) or printed; with
    /// no fixed address, the file removed (DHCP again) and `dhcp` printed.
    static func networkConfig(_ network: StaticAddress, wifi: WiFiSettings, output: String?) -> Int32 {
        let text = network.networkdFile(wifiInterface: wifi.interface, wifiConfigured: wifi.isConfigured)
        guard let output else { print(text ?? "dhcp", terminator: text == nil ? "\n" : ""); return 0 }
        do {
            if let text { try writeFile(Array(text.utf8), to: output) } else if FileSystem.exists(output) { try FileSystem.remove(output) }
            return 0
        } catch {
            printError("onair: network-config --write \(output): \(error)")
            return 1
        }
    }

    /// `onair names`: 0 with the name printed (and set, and the services written, when
    /// asked); 1 when one of those cannot be done (the line says which).
    static func names(_ configured: Settings, setHostname: Bool, dnssd: String?) -> Int32 {
        let device = configured.deviceName ?? DeviceName.automatic(dataDirectory: configured.dataDirectory)
        let label = NetworkNames.label(device)
        print(label)
        do {
            if setHostname {
                do { try ThisProcess.setHostname(label) } catch { throw RunFailure.runtime("names: the hostname \(label) cannot be set: \(error)") }
                try writeFile(Array((label + "\n").utf8), to: NetworkNames.announcedFile)
            }
            if let dnssd {
                var services: [(file: String, type: String, port: UInt16, path: String)] = []
                if let port = configured.listen.flatMap(Self.port) {
                    services.append(("onair-http.dnssd", "_http._tcp", port, "/"))
                    if let rtsp = configured.rtspPort, rtsp > 0 { services.append(("onair-rtsp.dnssd", "_rtsp._tcp", rtsp, "/live")) }
                }
                for name in ["onair-http.dnssd", "onair-rtsp.dnssd"] where !services.contains(where: { $0.file == name }) {
                    try? FileSystem.remove(dnssd + "/" + name)
                }
                for service in services {
                    try writeFile(Array(NetworkNames.serviceFile(type: service.type, port: service.port, path: service.path).utf8),
                                  to: dnssd + "/" + service.file)
                }
            }
            return 0
        } catch {
            printError("onair: \(error)")
            return 1
        }
    }

    /// The port of `server.listen` to announce; nil for 0 (any).
    static func port(_ listen: String) -> UInt16? {
        (try? ListenAddress(listen)).flatMap { $0.port > 0 ? $0.port : nil }
    }

    /// `bytes` at `path`, whole or not at all (AtomicFile), its folder made first: the
    /// files the board's units write into /run at boot.
    static func writeFile(_ bytes: [UInt8], to path: String, permissions: UInt32 = 0o644) throws {
        let directory = AtomicFile.directory(of: path)
        if !directory.isEmpty { try AtomicFile.makeDirectories(directory) }
        try AtomicFile.write(bytes, to: path, permissions: permissions)
    }

    /// All of `text` to stderr, unbuffered (it is what a failing start says last).
    static func writeStandardError(_ text: String) { StandardError.write(text) }

    /// Why `path` cannot be the data directory, or nil: it is one, or has been made.
    static func dataDirectoryProblem(_ path: String) -> String? {
        if let status = try? Path.status(path) { return status.kind == .directory ? nil : "not a directory" }
        do { try AtomicFile.makeDirectories(path) } catch let error as FileError { return "cannot be made (\(error.code))" } catch {
            return "cannot be made"
        }
        return nil
    }

    /// `onair run`: the one place a run's outcome becomes an exit status (0 ok, 1 runtime
    /// failure, 2 usage or configuration), with the reason on one line.
    static func run(_ configured: Settings, arguments: [String] = []) -> Int32 {
        exitStatus {
            var settings = configured
            // Saved settings: the same command line read again, its files as they are now.
            while try runChecked(settings) {
                guard case .run(let again, _) = try CommandLineParser.parse(arguments) else { return }
                settings = again
            }
        }
    }

    /// 0 when `body` succeeds; else its reason on one line and the status: a RunFailure's
    /// own (2 for usage or configuration), 1 for anything else.
    static func exitStatus(_ command: String? = nil, _ body: () throws -> Void) -> Int32 {
        do {
            try body()
            return 0
        } catch let failure as RunFailure {
            printError("onair: \(failure)")
            return failure.status
        } catch {
            printError("onair: " + (command.map { $0 + ": " } ?? "") + "\(error)")
            return 1
        }
    }

    /// True when the run ended to start again on saved settings.
    private static func runChecked(_ configured: Settings) throws -> Bool {
        var settings = configured
        // The data directory is checked before anything starts: a file in its place, or a
        // place it cannot be made, is a usage error said at once.
        if let problem = dataDirectoryProblem(settings.dataDirectory) {
            throw RunFailure.configuration("storage.dir (--out) \(settings.dataDirectory): \(problem)")
        }
        if settings.deviceName == nil { settings.deviceName = DeviceName.automatic(dataDirectory: settings.dataDirectory) }
        // Signals are taken by one thread with sigwait, so every other thread (libav,
        // libmicrohttpd) runs with them blocked and nothing is interrupted mid-write.
        let signals = SignalSet([.interrupt, .terminate, .user1])
        signals.blockInEveryThread()
        ThisProcess.ignore(.brokenPipe)

        let log = Log(format: settings.logFormat)
        let destination = try publishDestination(settings, log: log)
        // video.quality = auto: the talk's test upload, before the camera starts and before
        // anything else uses the uplink.
        if settings.quality == .auto {
            settings.quality = chooseQuality(settings, destination: destination, log: log)
        }
        return try Run(settings, destination: destination, log: log, signals: signals).execute()
    }

    /// `publish.*` as a destination (credentials from the environment when not set), or
    /// nil without a URL.
    static func publishDestination(_ settings: Settings, log: Log) throws -> Destination? {
        guard let url = settings.publish.url else { return nil }
        let environment = Environment.variables
        let destination: Destination
        do {
            destination = try Destination.parse(
                url: url, headers: settings.publish.headers, insecure: settings.publish.insecure,
                timeoutMilliseconds: settings.publish.timeoutMilliseconds,
                s3Endpoint: settings.publish.s3Endpoint,
                s3Region: settings.publish.s3Region ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"],
                s3AccessKey: settings.publish.s3AccessKey ?? environment["AWS_ACCESS_KEY_ID"],
                s3SecretKey: settings.publish.s3SecretKey ?? environment["AWS_SECRET_ACCESS_KEY"],
                s3PathStyle: settings.publish.s3PathStyle)
        } catch {
            throw RunFailure.configuration(error)
        }
        if destination.insecure { log(.publishInsecure, level: .warn, ("note", "TLS certificates are not checked")) }
        return destination
    }

    /// Probes the uplink and picks the highest preset whose video + audio rate is at most
    /// half of it; `low` when the probe fails (publishing then spools), `medium` when there
    /// is no destination to probe.
    static func chooseQuality(_ settings: Settings, destination: Destination?, log: Log) -> Settings.Quality {
        guard let destination else {
            log(.uplinkProbe, ("result", "no destination"), ("chosen", "medium"))
            return .medium
        }
        let audio = settings.audioEnabled ? settings.audioBitrate : 0
        let presets: [(option: Settings.Quality, bitrate: Int)] = [Settings.Quality.low, .medium, .high].map { ($0, $0.preset.bitrate + audio) }
        do {
            let throughput = try UplinkProbe.measure(with: CurlTransport(destination: destination))
            let chosen = UplinkProbe.choose(presets, throughput: throughput)
            log(.uplinkProbe, ("bits_per_second", throughput), ("chosen", chosen.rawValue))
            return chosen
        } catch {
            log(.uplinkProbe, level: .warn, ("error", "\(error)"), ("chosen", "low"))
            return .low
        }
    }
}
