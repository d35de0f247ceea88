import Basics
import Devices
import Layout
import Logging
import Publishing
import Server
import Streaming
import System
import Threading
import Updates

/// One `onair run` once the settings are final, in its phases: open devices → preview →
/// armed → streaming → stopping → teardown. The start-up order is the talk's: camera →
/// first frame → preview, and only then the rest (`Pipeline`), while frames wait in the
/// start-up buffer; `startup.deferred = off` brings the rest up first. Everything opened
/// goes on one `Teardown` list, closed in reverse exactly once on every path.
final class Run {
    private let log: Log
    private let signals: SignalSet
    private let teardown = Teardown()
    /// Set when the stream ends (`--duration`), the session fails, a signal or a long press.
    private let done = Completion()
    /// A long press asked for power-off.
    private let shutdown = Completion()
    /// Settings were saved and the pipeline went idle: the run ends to start again on them.
    private let restart = Completion()
    private var failure: RunFailure?

    // Opened by `openDevices`.
    private var settings: Settings
    private var camera: V4L2Camera?
    private var source: VideoSource?
    private var display: DisplayPreview?
    private var audioDevice = DeviceChoice.auto
    /// Where a stream is published, if anywhere; the publisher is made in phase 3.
    private let destination: Destination?
    /// The newest frame, for `GET /api/snapshot.jpg`.
    private let snapshots: Snapshots
    /// The button and tally lines, input devices and sensor the appliance goes on without.
    private let devices: DeviceRetries

    init(_ settings: Settings, destination: Destination?, log: Log, signals: SignalSet) {
        self.settings = settings
        self.destination = destination
        self.log = log
        snapshots = Snapshots(rotation: settings.rotation, log: log)
        devices = DeviceRetries(log: log)
        self.signals = signals
    }

    /// The whole run; returns when it is over and everything is closed: true when it ended
    /// to start again on saved settings. Throws what ended it early, or what failed on the
    /// way out.
    func execute() throws -> Bool {
        do {
            try openDevices()
            let (gate, preview) = startPreview()
            guard waitForTheRest(preview) else {
                teardown.run()
                log(.onairExit, ("streams", 0))
                return false
            }
            let (pipeline, scheduler) = try startPipeline(gate: gate)
            let notifier = arm(pipeline, gate: gate, preview: preview, scheduler: scheduler)
            done.wait()
            notifier?.send("STOPPING=1")
            teardown.run()
            if let failure { throw failure }
            log(.onairExit, ("streams", pipeline.session.streamsEnded))
        } catch {
            teardown.run()
            throw error
        }
        if shutdown.hasFired {
            // A long press asked for power-off: only now, with the uploads drained (or
            // publish.drain_seconds spent) and every file closed.
            log(.onairShutdown, ("command", settings.button.shutdownCommand))
            ThisProcess.syncFileSystems()
            ThisProcess.runShell(settings.button.shutdownCommand)
        }
        return restart.hasFired && !shutdown.hasFired
    }

    // MARK: Phase 1: open devices

    /// The camera (its granted size and rate are what everything else is made
    /// for), then the screen.
    private func openDevices() throws {
        // x264's capacity on this CPU is measured once per machine (about a second), before
        // the camera, so a first boot's deferred start does not wait for it.
        if settings.performance.capacity[.x264] == nil && settings.encoder != .vaapi && settings.encoder != .v4l2m2m {
            settings.performance.capacity[.x264] = X264Calibration.capacity(dataDirectory: settings.dataDirectory, log: log)
        }
        do { (camera, settings) = try Capture.openCamera(settings, log: log) } catch { throw RunFailure.configuration(error) }
        if let problem = settings.ladderProblem { throw RunFailure.configuration(problem) }
        // `--pace fast` is for the synthetic source: a camera keeps its own time. Decided
        // here once, for the start-up buffer and the session alike.
        if camera != nil { settings.pace = .realtime }
        // With a real camera `audio.device = auto` means ALSA's `default` PCM; with the
        // synthetic one, its own tone.
        audioDevice = settings.audioDevice == .auto && camera != nil ? .named("default") : settings.audioDevice
        let source: VideoSource = camera ?? SyntheticSource(
            width: settings.captureWidth, height: settings.captureHeight, fps: settings.fps,
            audio: settings.audioEnabled && audioDevice == .auto ? (settings.sampleRate, settings.channels) : nil, pace: settings.pace)
        self.source = source
        teardown.add("capture") { source.stop() }
        try openScreen()
    }

    /// The screen, when there is one (auto finds none on a headless board or a server: the
    /// first captured frame counts as presented then).
    private func openScreen() throws {
        guard let device = settings.previewDevice else { return }
        do {
            // The camera's own buffers can go on an overlay when it lends them (DMABUFs) in a
            // format the pipeline does not have to decode.
            let granted = camera?.opened?.granted.format
            let lends = camera?.sharesBuffers == true && granted != .mjpeg
            guard let screen = try DRMDisplay.open(device.name, picture: (settings.captureWidth, settings.captureHeight),
                                                   camera: lends ? granted : nil, mode: settings.previewMode,
                                                   atomic: settings.previewAtomic, log: log) else {
                log(.previewNone, ("reason", "no connected display"), ("note", "headless"))
                return
            }
            let preview = DisplayPreview(display: screen, log: log)
            if let camera, screen.importsCameraBuffers {
                screen.giveBuffersBack(to: { camera.release($0) })
                camera.share(with: preview)
            }
            display = preview
            // The screen goes after the capture that feeds it.
            teardown.add("screen", before: "capture") { preview.stop() }
        } catch {
            if device != .auto { throw RunFailure.configuration(error) }
            log(.previewNone, level: .warn, ("reason", "\(error)"))
        }
    }

    // MARK: Phase 2: preview

    /// The start-up buffer between the capture and the pipeline to come, and the capture
    /// started into it (unless `startup.deferred = off`).
    private func startPreview() -> (StartupGate, PreviewSink) {
        let preview: PreviewSink = display ?? FirstFramePreview(log: log)
        // With --pace fast the source waits for room, so two frames are enough to hold: a
        // full two seconds would only cost memory (60 pictures at 720p are 83 MB).
        let fast = settings.pace == .fast
        let gate = StartupGate(capacity: fast ? 2 : Int((settings.startup.bufferSeconds * Double(settings.fps)).rounded(.up)),
                               blocking: fast, preview: preview, snapshots: settings.listen == nil && destination == nil ? nil : snapshots, log: log)
        if let source { teardown.add("capture") { gate.close(); source.stop() } }
        if settings.startup.deferred != .off { startSource(into: gate) }
        return (gate, preview)
    }

    /// `auto`: until the first frame is on the screen; `manual`: until SIGUSR1, a UI's call
    /// (false when SIGINT/SIGTERM come first); `off`: not at all.
    private func waitForTheRest(_ preview: PreviewSink) -> Bool {
        switch settings.startup.deferred {
        case .auto: preview.waitForFirstFrame()
        case .manual: if !waitForStartSignal() { return false }
        case .off: break
        }
        log(.deferredStartBegan, ("mode", settings.startup.deferred.rawValue))
        return true
    }

    private func waitForStartSignal() -> Bool {
        log(.deferredStartWaiting, ("for", "SIGUSR1"))
        while true {
            let received = signals.wait()
            if received == .user1 { return true }
            if received == .interrupt || received == .terminate { return false }
        }
    }

    private func startSource(into gate: StartupGate) {
        guard let source else { return }
        var fields: [(String, Any)] = [("source", source.name), ("width", settings.captureWidth),
                                                ("height", settings.captureHeight), ("fps", settings.fps),
                                                ("pace", source is V4L2Camera ? "camera" : settings.pace.rawValue)]
        if let synthetic = source as? SyntheticSource {
            // When frame 0 was captured, on the wall clock: with the frame index each
            // picture carries, a viewer can tell how old what it shows is (make bench's
            // glass-to-glass latency).
            let origin: Int64 = synthetic.start(into: gate)
            fields.append(("frame0_wall_ms", SystemWallClock().read().offsetMs + origin / 1_000_000))
        } else {
            source.start(into: gate)
        }
        log.emit(.sourceStarted, level: .info, fields)
    }

    // MARK: Phase 3: the pipeline

    /// Made in the deferred start, after the preview: uploads wait for the picture.
    private func makePublisher() -> Publisher? {
        guard let destination else { return nil }
        // Each board in its own folder, which is a complete viewing site for that board.
        let device = settings.deviceName ?? "onair"
        log(.publishDestination, ("url", destination.description), ("folder", device + "/"), ("parallel", settings.publish.parallel))
        return Publisher(root: settings.dataDirectory, destination: destination.description, folder: device,
                         parallel: settings.publish.parallel,
                         retry: RetryPolicy(maximumMilliseconds: Int64(settings.publish.maximumBackoffMilliseconds)),
                         log: log,
                         // The root lists every board publishing there (devices.json).
                         siteFiles: [device + "/" + StreamLayout.viewerPage: Array(Viewer.page(streams: StreamLayout.catalog, device: device,
                                                                                               poster: StreamLayout.poster).utf8),
                                     StreamLayout.viewerPage: Array(FleetPage.html.utf8)],
                         lastSeen: {
                             let now = SystemWallClock().read()
                             return now.synchronized ? UTCDate.iso8601(milliseconds: now.wallMs) : nil
                         },
                         makeTransport: { CurlTransport(destination: destination) })
    }

    /// The session, its outputs, storage, publishing and the web server; the buffered
    /// frames flow into it from now on.
    private func startPipeline(gate: StartupGate) throws -> (Pipeline, Scheduler) {
        let pipeline: Pipeline
        // The control loops' one thread; it stops after everything that schedules on it.
        let scheduler = Scheduler()
        scheduler.start()
        teardown.add("scheduler") { scheduler.stop() }
        teardown.add("device retries") { [devices] in devices.stop() }
        let publisher = makePublisher()
        do {
            var statistics: (@Sendable () -> V4L2Camera.Statistics)?
            if let camera { statistics = { camera.statistics } }
            let (done, oneShot) = (self.done, settings.durationMilliseconds != nil)
            pipeline = try Pipeline(settings, audioDevice: audioDevice, publisher: publisher, scheduler: scheduler, log: log,
                                    camera: statistics, snapshots: snapshots, devices: devices) { session in
                if session.error != nil || oneShot { done.signal() }
            }
        } catch {
            publisher?.stop()
            throw error
        }
        teardown.add("pipeline") { [unowned self] in
            if let error = pipeline.stop() { failure = .runtime(error) }
        }
        if let publisher { publishPosters(publisher, session: pipeline.session, on: scheduler) }
        gate.open(into: pipeline.session.queue)
        // Once the pipeline takes the frames, the capture stops before it (and says what it
        // saw), so the stream finishes with everything captured.
        let (source, camera, log) = (self.source, self.camera, self.log)
        teardown.add("capture") {
            source?.stop()
            gate.join()
            if let camera {
                let stats = camera.statistics
                log(.cameraStats, ("frames", stats.frames), ("copies_per_frame", stats.copiesPerFrame),
                    ("driver_dropped", stats.driverDropped), ("timestamps_replaced", stats.timestampsReplaced),
                    ("corrupt_buffers", stats.corruptBuffers), ("reopened", stats.reopened))
            }
        }
        return (pipeline, scheduler)
    }

    /// While a stream is live, its newest picture goes to the destination every
    /// `posterSeconds` (the published viewer's poster, and so the fleet page's); a JPEG of
    /// 720p is some 50 KB, a few per cent of the stream at that pace.
    private func publishPosters(_ publisher: Publisher, session: Session, on scheduler: Scheduler) {
        let snapshots = self.snapshots
        _ = scheduler.schedule("poster", at: scheduler.clock.now() + 1_000_000_000) { now in
            if session.currentStream != nil, let jpeg = snapshots.jpeg() { publisher.publishPoster(jpeg) }
            return now + Self.posterSeconds * 1_000_000_000
        }
    }

    static let posterSeconds: Int64 = 10

    // MARK: Phase 4: armed

    /// The operator's side around the running pipeline: the console and systemd, the
    /// buttons, the thermal ladder, the tally light, stdin and the signals. Ready
    /// (READY=1, deferred_start.done) only once the buttons listen: a press right after it
    /// must not be lost.
    private func arm(_ pipeline: Pipeline, gate: StartupGate, preview: PreviewSink, scheduler: Scheduler) -> SystemdNotifier? {
        let session = pipeline.session
        let notifier = SystemdNotifier()
        let report = OperatorReport(
            device: settings.consoleDevice.flatMap { $0.name ?? OperatorReport.autoDevice() },
            interval: settings.consoleIntervalSeconds, notifier: notifier, log: log,
            snapshot: { [pipeline] in pipeline.snapshot() },
            alive: { session.error == nil && session.state != .stopped })
        // After the pipeline: what it says as it stops (the drain, the setup network
        // closing) still reaches the console.
        teardown.add("console report", before: "pipeline") { report.stop() }
        if settings.startup.deferred == .off { startSource(into: gate) }
        armButtons(session, scheduler: scheduler)
        restartWhenIdle(pipeline, scheduler: scheduler)
        display?.showIndicators { [publisher = pipeline.publisher, destinations = pipeline.destinations, setup = pipeline.setupNetwork] in
            // Nothing confirmed by the origin for 30 s, or a stream no destination takes:
            // the amber corner (and the tally's fast blink). With destinations, the red
            // frame is on air: a platform has the stream.
            let recording = session.state == .recording || session.state == .finishing
            let notLive = session.state == .recording && destinations?.anyLive == false
            return DRMDisplay.Indicators(recording: recording && !notLive,
                                         uplinkFailing: (publisher?.status.oldestPendingSeconds ?? 0) > 30 || notLive, card: setup?.card)
        }
        let telemetry = pipeline.telemetry
        let thermal = ThermalWatch(settings: settings.thermal, fps: settings.fps, rungs: session.profile.live.rungNames, scheduler: scheduler, log: log,
                                   dropped: { session.dropped.video }, temperature: { telemetry.temperature($0) },
                                   setRate: { session.setRate($0) }, setDroppedRungs: { session.setDroppedRungs($0) },
                                   availability: { [devices, sensor = settings.thermal.sensor?.name ?? ""] problem in
                                       devices.set("thermal.sensor", device: sensor, problem: problem, others: "the encoder's pressure alone lowers the rate")
                                   })
        teardown.add("thermal") { thermal.stop() }
        armTally(pipeline, scheduler: scheduler)
        pipeline.watchSlot(BootSlots.current())  // once the console listens
        log(.deferredStartDone, ("mode", settings.startup.deferred.rawValue),
            ("first_frame_ms", preview.firstFrameMilliseconds.map { "\($0)" } ?? "none"), ("done_ms", log.elapsedMilliseconds))
        notifier?.send("READY=1\nSTATUS=onair: \(session.state.rawValue)")
        report.start(on: scheduler)
        if let stdin = StandardInputButton(log: log, toggle: { session.toggle() }) {
            teardown.add("stdin") { stdin.stop() }
        }
        watchSignals(publisher: pipeline.publisher)
        return notifier
    }

    /// The record button: GPIO and evdev edges into the button logic, its actions on the
    /// session (a long press may shut the appliance down).
    private func armButtons(_ session: Session, scheduler: Scheduler) {
        let (done, shutdown) = (self.done, self.shutdown)
        let buttons = ButtonController(settings: settings.button, scheduler: scheduler, log: log) { [button = settings.button] action in
            switch action {
            case .start: session.startRecording()
            case .stop: session.stopRecording()
            case .toggle: session.toggle()
            case .longPress:
                session.stopRecording()
                if button.longPress == .shutdown { shutdown.signal(); done.signal() }
            }
        }
        teardown.add("buttons") { buttons.stop() }
        if let line = settings.button.gpio {
            // A line another driver or program holds, or a chip not there, does not stop
            // the appliance: the other buttons work meanwhile, and the line is taken once free.
            let held = Locked<GPIOButton?>(nil)
            teardown.add("gpio button") { held.withLock { $0?.stop() } }
            let button = settings.button
            let others = otherButtons
            devices.keepTrying("button.gpio", device: line, on: scheduler, others: { others }, open: {
                try GPIOButton(line: line, activeLow: button.activeLow, bias: button.bias, debounceMilliseconds: button.debounceMs)
            }, took: { [log] gpio in
                held.withLock { $0 = gpio }
                if gpio.startedPressed { log(.buttonFloating, level: .warn, ("line", gpio.description), ("action", "presses count once it reads released")) }
                gpio.start { edge in buttons.edge(edge, source: "gpio") }
            })
        }
        if let input = settings.button.input {
            let devices = self.devices, name = input.name ?? "auto"
            let keys = EvdevButtons(device: input.name, keys: settings.button.keys, log: log) { problem in
                devices.set("button.input", device: name, problem: problem, others: "the other buttons")
            }
            keys.start { edge in buttons.edge(edge, source: "evdev") }
            teardown.add("keys") { keys.stop() }
        }
    }

    /// The buttons that work whatever becomes of the GPIO line (said with its problem).
    private var otherButtons: String {
        var sources: [String] = []
        if let input = settings.button.input { sources.append("keys (\(input.name ?? "any keyboard"))") }
        if StandardInputButton.usable { sources.append("Enter on stdin") }
        if settings.serverToken != nil && settings.listen != nil { sources.append("POST /api/record/start") }
        return sources.isEmpty ? "no other button" : sources.joined(separator: ", ")
    }

    /// The tally light, once its line can be had (`DeviceRetries`); dark at the stop.
    private func armTally(_ pipeline: Pipeline, scheduler: Scheduler) {
        guard let line = settings.button.tally else { return }
        let session = pipeline.session, publisher = pipeline.publisher, destinations = pipeline.destinations
        let activeLow = settings.button.tallyActiveLow
        let held = Locked<TallyLight?>(nil)
        teardown.add("tally") { held.withLock { $0?.stop() } }
        devices.keepTrying("tally.gpio", device: line, on: scheduler, others: { "the console and /api/status say the state" }, open: {
            try GPIOOutput(line: line, activeLow: activeLow)
        }, took: { output in
            held.withLock {
                $0 = TallyLight(output: output, scheduler: scheduler) {
                    TallyPattern.of(state: session.state, publish: publisher?.status, failed: session.error != nil,
                                    destinationsLive: destinations?.anyLive)
                }
            }
        })
    }

    /// Settings saved from /settings are taken by starting again, once nothing is being
    /// recorded (a recording is never cut for a setting; with `session.start = now` the
    /// owner stops it first, or restarts the board).
    private func restartWhenIdle(_ pipeline: Pipeline, scheduler: Scheduler) {
        let (done, restart, log, session) = (self.done, self.restart, self.log, pipeline.session)
        _ = scheduler.every(1, "settings restart") { _ in
            let (keys, at) = pipeline.restartWanted.withLock { $0 }
            // A few seconds after the save: the page that says so reaches the browser first
            // (from the setup network, once it has closed: SetupNetwork.afterSave).
            guard !keys.isEmpty, KernelClock.monotonic() - at > 3_000_000_000, !restart.hasFired, pipeline.setupNetwork?.isClosing != true,
                  ![.recording, .finishing].contains(session.state) else { return }
            log(.settingsRestart, ("keys", keys.joined(separator: ",")))
            restart.signal()
            done.signal()
        }
    }

    /// A SIGINT/SIGTERM finishes the stream; one that comes while the run is already
    /// finishing (uploads draining) stops waiting for them: the rest stays in the spool.
    /// The thread waits in sigwait; its teardown wakes it with SIGUSR1 and joins it, after
    /// the pipeline has drained (a signal must still be able to cut the drain short).
    private func watchSignals(publisher: Publisher?) {
        let (signals, done, log) = (self.signals, self.done, self.log)
        let ending = Completion()
        let thread = WorkerThread(name: "onair-signals") {
            while true {
                let received = signals.wait()
                if ending.hasFired { return }
                guard received == .interrupt || received == .terminate else { continue }
                let finishing = done.hasFired
                log(.signalReceived, ("signal", received.description), ("stops", finishing ? "drain" : "recording"))
                if finishing { publisher?.cancelDrain() } else { done.signal() }
            }
        }
        teardown.add("signals", before: "pipeline") {
            ending.signal()
            thread.interrupt(with: Signal.user1.rawValue)
            thread.join()
        }
    }
}
