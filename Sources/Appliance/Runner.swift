import Devices
import Files
import HLS
import Logging
import Publishing
import Recording
import Server
import Streaming
import Threading
#if canImport(Glibc)
import Glibc
#endif

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
        case .run(let settings, _): return run(settings)
        }
    }

    static func printError(_ line: String) { writeStandardError(line + "\n") }

    /// All of `text` to stderr, unbuffered (it is what a failing start says last).
    static func writeStandardError(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// Why `path` cannot be the data directory, or nil: it is one, or has been made.
    static func dataDirectoryProblem(_ path: String) -> String? {
        var info = stat()
        if stat(path, &info) == 0 { return (info.st_mode & S_IFMT) == S_IFDIR ? nil : "not a directory" }
        do { try AtomicFile.makeDirectories(path) } catch let error as FileError { return "cannot be made (\(String(cString: strerror(error.code))))" } catch {
            return "cannot be made"
        }
        return nil
    }

    static func run(_ configured: Settings) -> Int32 {
        var settings = configured
        // The data directory is checked before anything starts: a file in its place, or a
        // place it cannot be made, is a usage error said at once.
        if let problem = dataDirectoryProblem(settings.dataDirectory) {
            printError("onair: storage.dir (--out) \(settings.dataDirectory): \(problem)")
            return 2
        }
        // Signals are taken by one thread with sigwait, so every other thread (libav,
        // libmicrohttpd) runs with them blocked and nothing is interrupted mid-write.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGUSR1)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)

        let log = Log(format: settings.logFormat)
        var publisherDestination: Destination?
        if let url = settings.publish.url {
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
                printError("onair: \(error)")
                return 2
            }
            if destination.insecure { log(.publishInsecure, level: .warn, ("note", "TLS certificates are not checked")) }
            publisherDestination = destination
        }
        // video.quality = auto: the talk's test upload, before the camera starts and before
        // anything else uses the uplink.
        if settings.quality == .auto {
            settings.quality = chooseQuality(settings, destination: publisherDestination, log: log)
        }
        let publishing = settings
        // Made in the deferred start, after the preview.
        let makePublisher: () -> Publisher? = {
            guard let destination = publisherDestination else { return nil }
            log(.publishDestination, ("url", destination.description), ("parallel", publishing.publish.parallel))
            return Publisher(root: publishing.dataDirectory, destination: destination.description, parallel: publishing.publish.parallel,
                             retry: RetryPolicy(maximumMilliseconds: Int64(publishing.publish.maximumBackoffMilliseconds)),
                             log: log,
                             // A plain bucket or web directory becomes a complete viewing site.
                             siteFiles: ["index.html": Array(Viewer.page(streams: "streams.json").utf8)],
                             makeTransport: { CurlTransport(destination: destination) })
        }
        return record(settings, makePublisher: makePublisher, log: log, signals: signals)
    }

    /// The rest of a run, once the settings are final. The start-up order is the talk's:
    /// camera → first frame → preview, and only then the rest (`Pipeline`), while frames
    /// wait in the start-up buffer; `startup.deferred = off` brings the rest up first.
    static func record(_ configured: Settings, makePublisher: () -> Publisher?, log: Log, signals: sigset_t) -> Int32 {
        var configured = configured
        // x264's capacity on this CPU is measured once per machine (about a second), before
        // the camera, so a first boot's deferred start does not wait for it.
        if configured.performance.capacity[.x264] == nil && configured.encoder != .vaapi && configured.encoder != .v4l2m2m {
            configured.performance.capacity[.x264] = X264Calibration.capacity(dataDirectory: configured.dataDirectory, log: log)
        }
        // A configured GPIO button or tally that does not open is a configuration error:
        // said now.
        var tallyLine: GPIOOutput?
        if let line = configured.button.tally {
            do { tallyLine = try GPIOOutput(line: line, activeLow: configured.button.tallyActiveLow) } catch {
                printError("onair: \(error)")
                return 2
            }
        }
        var gpioButton: GPIOButton?
        if let line = configured.button.gpio {
            do {
                gpioButton = try GPIOButton(line: line, activeLow: configured.button.activeLow, bias: configured.button.bias,
                                            debounceMilliseconds: configured.button.debounceMs)
            } catch {
                printError("onair: \(error)")
                return 2
            }
        }
        // The camera first: its granted size and rate are what everything else is made for.
        let camera: V4L2Camera?
        let settings: Settings
        do { (camera, settings) = try Capture.openCamera(configured, log: log) } catch {
            printError("onair: \(error)")
            return 2
        }
        // With a real camera `audio.device = auto` means ALSA's `default` PCM; with the
        // synthetic one, its own tone.
        let audioDevice = settings.audioDevice == "auto" && camera != nil ? "default" : settings.audioDevice
        let source: VideoSource = camera ?? SyntheticSource(
            width: settings.captureWidth, height: settings.captureHeight, fps: settings.fps,
            audio: settings.audioEnabled && audioDevice == "auto" ? (settings.sampleRate, settings.channels) : nil, pace: settings.pace)
        // The screen, when there is one (auto finds none on a headless board or a server:
        // the first captured frame counts as presented then).
        let sessionBox = SessionBox()
        var display: DisplayPreview?
        if let device = settings.previewDevice {
            do {
                // The camera's own buffers can go on an overlay when it lends them (DMABUFs)
                // in a format the pipeline does not have to decode.
                let granted = camera?.opened?.granted.format
                let lends = camera?.sharesBuffers == true && granted != .mjpeg
                if let screen = try DRMDisplay.open(device == "auto" ? nil : device, picture: (settings.captureWidth, settings.captureHeight),
                                                    camera: lends ? granted : nil, mode: settings.previewMode, atomic: settings.previewAtomic,
                                                    log: log) {
                    let preview = DisplayPreview(display: screen, log: log) {
                        DRMDisplay.Indicators(recording: sessionBox.recording, uplinkFailing: sessionBox.uplinkFailing)
                    }
                    if let camera, screen.importsCameraBuffers {
                        screen.giveBuffersBack(to: { camera.release($0) })
                        camera.share(with: preview)
                    }
                    display = preview
                } else {
                    log(.previewNone, ("reason", "no connected display"), ("note", "headless"))
                }
            } catch {
                if device != "auto" {
                    camera?.stop()
                    printError("onair: \(error)")
                    return 2
                }
                log(.previewNone, level: .warn, ("reason", "\(error)"))
            }
        }
        let preview: PreviewSink = display ?? FirstFramePreview(log: log)
        // With --pace fast the source waits for room, so two frames are enough to hold: a
        // full two seconds would only cost memory (60 pictures at 720p are 83 MB).
        let fast = settings.pace == .fast && camera == nil
        let gate = StartupGate(capacity: fast ? 2 : Int((settings.startup.bufferSeconds * Double(settings.fps)).rounded(.up)),
                               blocking: fast, preview: preview, log: log)
        // A start that ends before the pipeline runs: the camera and the screen go, in the
        // reverse of the order they came.
        func abandonStart() {
            gate.close()
            source.stop()
            display?.stop()
        }
        let deferred = settings.startup.deferred
        if deferred != .off {
            startSource(source, into: gate, settings: settings, log: log)
            if deferred == .auto {
                preview.waitForFirstFrame()
            } else if !waitForStartSignal(signals, log: log) {
                abandonStart()
                log(.onairExit, ("streams", 0))
                return 0
            }
        }
        log(.deferredStartBegan, ("mode", deferred.rawValue))
        let done = Completion()
        let pipeline: Pipeline
        do {
            var cameraStatistics: (@Sendable () -> V4L2Camera.Statistics)?
            if let camera { cameraStatistics = { camera.statistics } }
            pipeline = try Pipeline(settings, audioDevice: audioDevice, makePublisher: makePublisher, log: log,
                                    camera: cameraStatistics) { session in
                if session.error != nil || settings.durationMilliseconds != nil { done.signal() }
            }
        } catch {
            abandonStart()
            printError("onair: \(error)")
            return (error as? Pipeline.StartError)?.status ?? 1
        }
        gate.open(into: pipeline.session.queue)
        // The operator's view: the serial console's status line, and systemd's READY=1.
        let notifier = SystemdNotifier()
        let session = pipeline.session
        let report = OperatorReport(
            device: settings.consoleDevice == "auto" ? OperatorReport.autoDevice() : settings.consoleDevice,
            interval: settings.consoleIntervalSeconds, notifier: notifier, log: log,
            snapshot: { [pipeline] in pipeline.snapshot() },
            alive: { session.error == nil && session.state != .stopped })
        if deferred == .off { startSource(source, into: gate, settings: settings, log: log) }
        // The record button: GPIO and evdev keys, each edge through the toggle/hold logic.
        let shutdown = Completion()
        let buttons = ButtonController(settings: settings.button, log: log) { [button = settings.button] action in
            switch action {
            case .start: session.startRecording()
            case .stop: session.stopRecording()
            case .toggle: session.toggle()
            case .longPress:
                session.stopRecording()
                if button.longPress == .shutdown { shutdown.signal(); done.signal() }
            }
        }
        gpioButton?.start { edge in buttons.edge(edge, source: "gpio") }
        sessionBox.set(session, publisher: pipeline.publisher)
        let telemetry = pipeline.telemetry
        let thermal = ThermalWatch(settings: settings.thermal, fps: settings.fps, log: log, dropped: { session.dropped.video },
                                   temperature: { telemetry.temperature($0) }, setRate: { session.setRate($0) })
        let tally = tallyLine.map { line in
            TallyLight(output: line) { [publisher = pipeline.publisher] in
                TallyPattern.of(state: session.state, publish: publisher?.status, failed: session.error != nil)
            }
        }
        var keys: EvdevButtons?
        if let input = settings.button.input {
            do {
                keys = try EvdevButtons(device: input == "auto" ? nil : input, keys: settings.button.keys,
                                        log: log)
                keys?.start { edge in buttons.edge(edge, source: "evdev") }
            } catch {
                log(.buttonUnavailable, level: .warn, ("error", "\(error)"))
            }
        }
        // Ready only now that the buttons listen: a press right after READY=1 (or after the
        // console says so) must not be lost. The start-up's two times since the process
        // started go on the console as well.
        log(.deferredStartDone, ("mode", deferred.rawValue), ("first_frame_ms", preview.firstFrameMilliseconds.map { "\($0)" } ?? "none"),
            ("done_ms", log.elapsedMilliseconds))
        notifier?.send("READY=1\nSTATUS=onair: \(session.state.rawValue)")
        report.start()
        watchStandardInput(pipeline.session, log: log)
        // A SIGINT/SIGTERM finishes the stream; one that comes while the run is already
        // finishing (uploads draining) stops waiting for them: the rest stays in the spool.
        WorkerThread.detached(name: "onair-signals") { [publisher = pipeline.publisher] in
            while true {
                var received: Int32 = 0
                var waitFor = signals
                sigwait(&waitFor, &received)
                guard received == SIGINT || received == SIGTERM else { continue }
                let finishing = done.hasFired
                log(.signalReceived, ("signal", received == SIGINT ? "INT" : "TERM"), ("stops", finishing ? "drain" : "recording"))
                if finishing { publisher?.cancelDrain() } else { done.signal() }
            }
        }

        done.wait()
        notifier?.send("STOPPING=1")
        defer { display?.stop() }
        gpioButton?.stop()
        keys?.stop()
        tally?.stop()
        thermal.stop()
        buttons.stop()
        report.stop()
        source.stop()
        gate.join()
        if let camera {
            let stats = camera.statistics
            log(.cameraStats, ("frames", stats.frames), ("copies_per_frame", stats.copiesPerFrame),
                ("driver_dropped", stats.driverDropped), ("timestamps_replaced", stats.timestampsReplaced),
                ("corrupt_buffers", stats.corruptBuffers), ("reopened", stats.reopened))
        }
        if let error = pipeline.stop() {
            printError("onair: \(error)")
            return 1
        }
        log(.onairExit, ("streams", pipeline.session.streamsEnded))
        if shutdown.hasFired {
            // A long press asked for power-off: only now, with the uploads drained (or
            // publish.drain_seconds spent) and every file closed.
            log(.onairShutdown, ("command", settings.button.shutdownCommand))
            sync()
            runShell(settings.button.shutdownCommand)
        }
        return 0
    }

    static func startSource(_ source: VideoSource, into gate: StartupGate, settings: Settings, log: Log) {
        source.start(into: gate)
        log(.sourceStarted, ("source", source.name), ("width", settings.captureWidth), ("height", settings.captureHeight),
            ("fps", settings.fps), ("pace", source is V4L2Camera ? "camera" : settings.pace.rawValue))
    }

    /// `startup.deferred = manual`: the preview runs until SIGUSR1 says to start the rest
    /// (a UI's call); SIGINT/SIGTERM end the run instead (false).
    static func waitForStartSignal(_ signals: sigset_t, log: Log) -> Bool {
        log(.deferredStartWaiting, ("for", "SIGUSR1"))
        while true {
            var received: Int32 = 0
            var waitFor = signals
            sigwait(&waitFor, &received)
            if received == SIGUSR1 { return true }
            if received == SIGINT || received == SIGTERM { return false }
        }
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

    /// Each line on a terminal or pipe toggles recording; end of input changes nothing.
    static func watchStandardInput(_ session: Session, log: Log) {
        var info = stat()
        guard fstat(0, &info) == 0, isatty(0) == 1 || (info.st_mode & S_IFMT) == S_IFIFO else { return }
        WorkerThread.detached(name: "onair-stdin") {
            while let _ = readLine() {
                log(.buttonPressed, ("source", "stdin"))
                session.toggle()
            }
        }
    }
}

/// The id of the stream being written, shared with the storage keeper's thread.
final class CurrentStream: @unchecked Sendable {  // `id` under `lock`
    private let lock = Lock()
    private var id: String?
    func set(_ value: String?) { lock.withLock { id = value } }
    func get() -> String? { lock.withLock { id } }
}

/// The session for whoever is made before it (the preview's recording indicator).
final class SessionBox: @unchecked Sendable {  // both vars under `lock`
    private let lock = Lock()
    private var session: Session?
    private var publisher: Publisher?
    func set(_ session: Session, publisher: Publisher?) { lock.withLock { self.session = session; self.publisher = publisher } }
    /// Nothing confirmed by the destination for 30 s (the tally's fast blink, too).
    var uplinkFailing: Bool { (lock.withLock { publisher }?.status.oldestPendingSeconds ?? 0) > 30 }
    var recording: Bool {
        let state = lock.withLock { session?.state }
        return state == .recording || state == .finishing
    }
}

/// Runs `command` with /bin/sh and waits for it (posix_spawn(3): no fork of a process with
/// threads running).
func runShell(_ command: String) {
    var pid = pid_t()
    let arguments: [UnsafeMutablePointer<CChar>?] = ["/bin/sh", "-c", command].map { (argument: String) in strdup(argument) } + [nil]
    defer { for argument in arguments { free(argument) } }
    guard posix_spawn(&pid, "/bin/sh", nil, nil, arguments, environ) == 0 else { return }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
}
