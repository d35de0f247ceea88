import Access
import Media
import Destinations
import Devices
import Export
import Fetch
import Files
import HLS
import Layout
import Live
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
import ONVIF
import RTSP
import WebRTC

/// Everything after the preview: what the deferred start brings up once the first frame
/// is on screen (the microphone, crash recovery, the publisher, storage keeping, the
/// session with its encoders and recording writer, the web server), and takes down at the
/// end of a run.
final class Pipeline: Sendable {
    let settings: Settings
    let session: Session
    let publisher: Publisher?
    let microphone: ALSAMicrophone?
    /// The web server, once it listens.
    var server: WebServer? { served.withLock { $0 } }
    private let served = Locked<WebServer?>(nil)
    let telemetry = Telemetry()
    let history = History()
    private let scheduler: Scheduler
    /// The history sampler and the retention sweep, cancelled by `stop`.
    private let tasks = Locked<[Scheduler.Task]>([])
    let recordings: Recordings
    /// The live stream's parts, from the session to the web server's low-latency
    /// playlist (only when there is a web server to serve them).
    let liveEdge: LiveEdge?
    /// WHEP viewers of the live stream (only with a web server to take their offers).
    /// The live stream as the session publishes it, which WebRTC and RTSP read.
    let feed: LiveFeed
    let webrtc: WebRTCServer?
    let rtsp: RTSPServer?
    /// The platforms and RTMP servers the live stream goes to (`[destination.NAME]`).
    let destinations: Destinations?
    /// What the Wi-Fi of `[wifi]` does (wpa_supplicant joins; this says so); nil without one.
    let wifi: WiFiMonitor?
    /// The setup network the board opens when it has none (on the board, with a radio).
    let setupNetwork: SetupNetwork?
    /// ONVIF's SOAP services on the web server, and WS-Discovery once it listens.
    let onvif: ONVIFService?
    /// Who may watch (`[access]`); nil: anyone who reaches the board.
    let access: AccessGate?
    /// What the appliance goes on without (a held button line, a missing sensor).
    let devices: DeviceRetries?
    private let discovery = Locked<Discovery?>(nil)
    /// Whether the wall clock can be trusted; dates streams and retention.
    let clockWatch: ClockWatch
    private let camera: (@Sendable () -> V4L2Camera.Statistics)?
    /// The newest frame as JPEG (`/api/snapshot.jpg`), when frames are kept for it.
    private let snapshots: Snapshots?
    /// The root slot (A/B images) and an update's confirmation (UpdateSlots.swift).
    let update = Locked<SlotWatch?>(nil)
    /// `POST /api/update`, and what the console and /api/status say of installs.
    let updates: UpdateService
    /// Keys saved from /settings since the start, and when the last save was: the run
    /// starts again on them when idle.
    let restartWanted = Locked<(keys: [String], at: Int64)>(([], 0))
    let log: Log

    /// `onIdle` is called when a stream has ended or the session failed.
    init(_ requested: Settings, audioDevice: DeviceChoice, publisher: Publisher?, scheduler: Scheduler, log: Log,
         clock: any WallClock = SystemWallClock(), camera: (@Sendable () -> V4L2Camera.Statistics)? = nil,
         snapshots: Snapshots? = nil, devices: DeviceRetries? = nil, onIdle: @escaping @Sendable (Session) -> Void) throws {
        self.devices = devices
        self.log = log
        for problem in requested.time.problems { log(.configIgnored, level: .warn, ("problem", problem)) }
        clockWatch = ClockWatch(clock: clock, servers: requested.time.usable, log: log)
        self.scheduler = scheduler
        self.camera = camera
        self.snapshots = snapshots
        let telemetry = self.telemetry
        log.listen { event, level, fields in
            if level == .error { telemetry.error("\(event) " + fields.map { "\($0.0)=\($0.1)" }.joined(separator: " ")) }
        }
        var settings = requested
        microphone = try Self.openMicrophone(&settings, device: audioDevice, log: log)
        self.settings = settings
        self.publisher = publisher
        // The storage keeper first: a full card must not stop the start at its first write
        // (issue 13), so space is made before anything is written, and again whenever a
        // write finds the disk full.
        recordings = Recordings(root: settings.dataDirectory)
        let storage = Self.keepStorage(settings, publisher: publisher, recordings: recordings, log: log)
        Self.recover(settings, publisher: publisher, recordings: recordings, log: log)
        liveEdge = settings.listen != nil && settings.partMilliseconds > 0 ? LiveEdge() : nil
        access = Self.accessGate(settings, log: log)
        feed = LiveFeed(audioBitrate: settings.audioBitrate, log: log)
        webrtc = Self.openWebRTC(settings, feed: feed, log: log)
        rtsp = Self.openRTSP(settings, feed: feed, access: access, log: log)
        onvif = ONVIFSetup.service(settings, rtspPort: rtsp?.port, snapshots: snapshots != nil, clock: clock, access: access, log: log)
        updates = UpdateService(.init(directory: settings.dataDirectory + "/update", reboot: settings.updateReboot), log: log)
        session = Self.makeSession(settings, storage: storage, publisher: publisher, telemetry: telemetry, clock: clock,
                                   liveEdge: liveEdge, feed: feed, log: log)
        destinations = Self.openDestinations(settings, profile: session.profile.live, feed: feed, log: log)
        wifi = settings.wifi.isConfigured ? try? WiFiMonitor(settings: settings.wifi, log: log) : nil
        wifi?.start()
        setupNetwork = SetupNetwork.possible(settings) ? SetupNetwork(settings: settings, wifi: wifi, log: log) : nil
        // Asked for before the camera's first frame reaches the session, so the stream
        // begins with that frame.
        if settings.start == .now { session.startRecording() }
        do { try session.start(onIdle: onIdle) } catch {
            // An estimate that refuses is a configuration problem; an encoder that fails, not.
            throw error is SessionError ? RunFailure.configuration(error) : RunFailure.runtime(error)
        }
        if let listen = settings.listen {
            do {
                let server = try serve(listen)
                served.withLock { $0 = server }
                if let onvif { discovery.withLock { $0 = ONVIFSetup.discovery(onvif, settings: settings, httpPort: server.port, log: log) } }
            } catch {
                session.shutdown()
                throw RunFailure.configuration(error)
            }
        }
        startHistory()
        setupNetwork?.start(on: scheduler)
        clockWatch.start(on: scheduler)
        expireByAge()
        if let microphone {
            microphone.start(into: session.queue)
            log(.audioSelected, ("device", audioDevice.description), ("rate", microphone.sampleRate),
                ("channels", settings.channels), ("period_frames", microphone.periodFrames))
        }
    }

    /// An ALSA device replaces the synthetic source's own microphone. audio.enabled = auto
    /// means "on when the capture PCM opens": without one the stream is video only, with a
    /// warning; audio.enabled = on makes it an error.
    private static func openMicrophone(_ settings: inout Settings, device choice: DeviceChoice, log: Log) throws -> ALSAMicrophone? {
        guard settings.audioEnabled, let device = choice.name else { return nil }
        do {
            return try ALSAMicrophone(device: device, sampleRate: settings.sampleRate, channels: settings.channels)
        } catch {
            if settings.audio == .on { throw RunFailure.configuration(error) }
            log(.audioUnavailable, level: .warn, ("error", "\(error)"), ("note", "recording video only"))
            settings.audio = .off
            return nil
        }
    }

    /// The storage keeper, after a first pass that makes room before anything is written.
    private static func keepStorage(_ settings: Settings, publisher: Publisher?, recordings: Recordings, log: Log) -> StorageKeeper {
        // A stream counts as published once its journal for this destination says ENDLIST.
        let storage = StorageKeeper(
            root: settings.dataDirectory, minimum: settings.minimumFree,
            isPublished: { [publisher] id in publisher?.isPublished(id) ?? false },
            log: log,
            deleted: { [publisher] id in publisher?.forget(id) },
            recordings: {
                // Offline copies (onair fetch) before the device's own recordings: their sources still have them.
                OfflineStore.evictable(dataDirectory: settings.dataDirectory).map { copy in
                    .init(id: "offline/" + (copy.path.split(separator: "/").last.map(String.init) ?? copy.path), remove: { try OfflineStore.remove(copy) })
                } + recordings.evictable().map { entry in .init(id: entry.id, remove: { try recordings.remove(entry.id) }) }
            })
        storage.prune(recording: nil)
        return storage
    }

    /// Streams an earlier run left open (crash, kill -9, power cut) are closed with what
    /// was completely stored, and published to the end, before anything new starts. A file
    /// that cannot be used is set aside and said once; the start goes on. Recordings a
    /// crash left as `.part` become playable MP4s from their complete fragments; old ones
    /// go by record.keep_days.
    private static func recover(_ settings: Settings, publisher: Publisher?, recordings: Recordings, log: Log) {
        let skipped: (Recovery.Skipped) -> Void = { log(.recoverySkipped, level: .error, ("path", $0.path), ("reason", $0.reason)) }
        let removed: (String) -> Void = { log(.recoveryRemovedEmpty, level: .warn, ("path", $0), ("reason", "the stream had no segment yet")) }
        for stream in Recovery.closeAll(root: settings.dataDirectory, skipped: skipped, removed: removed) {
            if stream.wasInterrupted { log(.streamRecovered, level: .warn, ("id", stream.id), ("segments", stream.segments)) }
            if let pending = publisher?.resume(stream.id, segments: stream.segments, multivariantRewritten: stream.multivariantRewritten),
               pending > 0 {
                log(.publishResumed, ("id", stream.id), ("pending_segments", pending))
            }
        }
        recordings.recoverAll(priority: settings.record.priority, log: log)
        // An export's scratch files are unlinked as soon as they are made; one a crash
        // caught in between has no reader, and goes.
        let scratch = settings.dataDirectory + "/.export"
        for name in FileSystem.names(in: scratch) ?? [] where name.hasPrefix(".scratch-") { try? FileSystem.remove(scratch + "/" + name) }
    }

    /// `record.keep_days` and offline copies' `--keep-days`, at the start and every ten
    /// minutes, on a clock that is synchronised and settled (`ClockWatch.settled`): never
    /// on a guess, never just after a step.
    private func expireByAge() {
        let days = settings.record.keepDays
        let (recordings, watch, log, root) = (self.recordings, self.clockWatch, self.log, settings.dataDirectory)
        let expire: @Sendable () -> Void = {
            guard watch.settled else { return }
            if let days { recordings.expire(keepDays: days, nowMs: watch.reading.wallMs, log: log) }
            for copy in OfflineStore.expire(dataDirectory: root, nowMs: watch.reading.wallMs) {
                log(.offlineExpired, ("path", copy.path), ("keep_days", copy.keepDays ?? 0))
            }
        }
        expire()
        let retention = scheduler.every(600, "retention") { _ in expire() }
        tasks.withLock { $0.append(retention) }
    }

    /// The session on the settings' profiles; what it stores goes to the publisher, the
    /// storage keeper and the live bit rate.
    private static func makeSession(_ settings: Settings, storage: StorageKeeper, publisher: Publisher?, telemetry: Telemetry,
                                    clock: any WallClock, liveEdge: LiveEdge?, feed: LiveFeed, log: Log) -> Session {
        Session(profile: settings.sessionProfile, log: log, clock: clock, liveEdge: liveEdge, feed: feed,
                makeRoom: { storage.makeRoom(recording: $0) }) { [publisher] event in
            publisher?.observe(event)
            guard case .segmentStored(let id, _, let bytes, _) = event else { return }
            // The stream that stored it is the one being recorded: spared.
            storage.checkSoon(recording: id)
            telemetry.segmentStored(bytes: bytes)
        }
    }

    /// The web server: the stream files, the viewer, /api/*, /metrics, /status and control.
    private func serve(_ listen: String) throws -> WebServer {
        let (session, log, recordings, history) = (self.session, self.log, self.recordings, self.history)
        let snapshot: @Sendable () -> StatusSnapshot = { [unowned self] in self.snapshot() }
        let control: @Sendable (Bool) -> [UInt8] = { start in
            if start { session.startRecording() } else { session.stopRecording() }
            log(.buttonPressed, ("source", "api"), ("action", start ? "start" : "stop"))
            return Array("{\"accepted\":\"\(start ? "start" : "stop")\"}".utf8)
        }
        var api: [String: WebServer.Endpoint] = [
            "/api/status": .json { snapshot().json },
            "/api/recordings": .json { recordings.json },
            "/metrics": .init(contentType: "text/plain; version=0.0.4; charset=utf-8") { Array(snapshot().metrics.utf8) },
            "/status": .init(contentType: "text/html; charset=utf-8") { Array(StatusPage.html(snapshot()).utf8) },
            "/status/plots.svg": .init(contentType: "image/svg+xml") { Array(StatusPage.svg(history.all).utf8) }
        ]
        let settingsPages = Self.settingsPages(settings, setupNetwork: setupNetwork, restartWanted: restartWanted, log: log)
        if let snapshots { api[Self.snapshotPath] = .init(contentType: "image/jpeg", whenReady: { snapshots.jpeg() }) }
        let server = try WebServer(listen: listen, root: settings.dataDirectory, api: api, control: ["/api/record/start": { _ in control(true) }, "/api/record/stop": { _ in control(false) },
                     "/api/forget": Self.forget(publisher: publisher, live: { session.currentStream }, log: log)],
           downloads: ["/api/export": Self.export(root: settings.dataDirectory, log: log)], token: settings.serverToken,
           liveEdge: liveEdge, bodyRoutes: [updates.route] + settingsPages + (webrtc.map { [Self.whep($0)] } ?? []) + (onvif.map { service in ONVIFService.paths.map { ONVIFSetup.route(service, prefix: $0) } } ?? []),
           whep: webrtc == nil ? nil : WHEPResource.prefix, poster: snapshots == nil ? nil : Self.snapshotPath, device: settings.deviceName,
           access: access, log: log)
        // Say what is bound: one address, or every interface.
        let address = server.listenAddress, port = server.port
        log(.serverListening, ("bound", address.isWildcard ? "\(address.host) port \(port) (every interface)" : "\(address.host) port \(port)"),
            ("url", address.browserURL(port: port)))
        return server
    }

    /// The WebRTC server on the web server's address, its certificate kept in the data
    /// directory. One that cannot be had (the port taken, the certificate unwritable)
    /// does not stop the appliance: it says why once, and the viewer plays LL-HLS.
    private static func openWebRTC(_ settings: Settings, feed: LiveFeed, log: Log) -> WebRTCServer? {
        guard let listen = settings.listen, let port = settings.webrtcPort, let address = try? ListenAddress(listen) else { return nil }
        do {
            let kept = try DTLSCertificate.kept(at: StreamLayout(root: settings.dataDirectory).dtlsCertificate)
            if let replaced = kept.replaced { log(.webrtcUnavailable, level: .warn, ("problem", replaced), ("action", "made a new certificate")) }
            return try WebRTCServer(settings: .init(host: address.host, port: port, maxViewers: settings.webrtcViewers,
                                                    perAddress: settings.webrtcViewersPerAddress),
                                    certificate: kept.certificate, feed: feed, log: log)
        } catch {
            log(.webrtcUnavailable, level: .error, ("problem", "\(error)"), ("action", "viewers play LL-HLS; WHEP answers 404"))
            return nil
        }
    }

    /// The gate of `[access]`, and one console line saying who may watch: with nobody
    /// named, anyone who reaches the board (issue 32: the owner is told once).
    private static func accessGate(_ settings: Settings, log: Log) -> AccessGate? {
        guard settings.listen != nil else { return nil }
        if settings.access.isOpen {
            log(.accessOpen, ("who", "anyone who can reach the board may watch"), ("action", "onair passwd USER adds a viewer"))
            return nil
        }
        log(.accessUsers, ("viewers", settings.access.viewers.count), ("devices", settings.access.devices.count))
        return AccessGate(list: settings.access, token: settings.serverToken, log: log)
    }

    /// Where the newest picture is served as JPEG (ONVIF's GetSnapshotUri names it too).
    static let snapshotPath = "/api/snapshot.jpg"

    /// The RTSP server on the web server's address; one that cannot be had (the port
    /// taken) does not stop the appliance: it says why once.
    private static func openRTSP(_ settings: Settings, feed: LiveFeed, access: AccessGate?, log: Log) -> RTSPServer? {
        guard let listen = settings.listen, let port = settings.rtspPort, let address = try? ListenAddress(listen) else { return nil }
        do {
            return try RTSPServer(settings: .init(host: address.host, port: port, maxClients: settings.rtspClients,
                                                  perAddress: settings.rtspClientsPerAddress, access: access), feed: feed, log: log)
        } catch {
            log(.rtspUnavailable, level: .error, ("problem", "\(error)"), ("action", "no RTSP; HLS and WebRTC are served"))
            return nil
        }
    }

    /// Every enabled destination, reading the feed from now on (a stream that begins with
    /// the camera's first frame is theirs from its start); a rung the ladder does not have,
    /// and what a platform's preset asks that its rung does not meet, are said once, here.
    private static func openDestinations(_ settings: Settings, profile: LiveProfile, feed: LiveFeed, log: Log) -> Destinations? {
        var enabled = settings.destinations.values.filter(\.enabled)
        guard !enabled.isEmpty else { return nil }
        let rungs = profile.rungSettings
        for index in enabled.indices {
            var destination = enabled[index]
            if destination.rung >= rungs.count {
                log(.destinationUnsuited, level: .warn, ("name", destination.name),
                    ("problem", "rung \(destination.rung + 1), but video.ladder has \(rungs.count == 1 ? "one rung" : "\(rungs.count) rungs"): it sends the lowest"))
                destination.rung = rungs.count - 1
                enabled[index] = destination
            }
            guard let platform = destination.preset else { continue }
            let problems = platform.problems(keyframeSeconds: Double(profile.segmentTicks) / Double(Timescale.video),
                                             videoBitrate: rungs[destination.rung].bitrate, audioBitrate: profile.output.audio?.bitrate,
                                             sampleRate: profile.output.audio?.sampleRate)
            for problem in problems { log(.destinationUnsuited, level: .warn, ("name", destination.name), ("problem", problem)) }
        }
        return Destinations(enabled, feed: feed, log: log)
    }

    /// The /status plots: a sample every five seconds (a task on the control scheduler).
    private func startHistory() {
        var last = (frames: session.framesIn, at: scheduler.clock.now())
        let sampler = scheduler.every(5, "history") { [unowned self] now in
            let state = snapshot()
            let fps = Double(state.framesIn - last.frames) / max(0.001, Double(now - last.at) / 1e9)
            last = (state.framesIn, now)
            history.add(.init(seconds: state.uptimeSeconds, fps: fps, temperatureC: state.temperatureC,
                              bitsPerSecond: state.liveBitsPerSecond, queue: state.publish?.pendingSegments ?? 0))
        }
        let (updates, session) = (self.updates, self.session)
        let installs = scheduler.every(1, "update") { _ in updates.check(idle: ![.recording, .finishing].contains(session.state)) }
        tasks.withLock { $0 += [sampler, installs] }
    }

    /// Everything there is to know, now.
    func snapshot() -> StatusSnapshot {
        let dropped = session.dropped
        let counts = telemetry.counts
        let finished = recordings.list()
        let camera = self.camera?()
        return StatusSnapshot(
            state: session.state.rawValue, stream: session.currentStream, uptimeSeconds: counts.uptimeSeconds, fps: session.rate,
            framesIn: session.framesIn, segmentsStored: counts.segments, segmentBytes: counts.segmentBytes,
            liveBitsPerSecond: counts.liveBitsPerSecond, droppedVideoFrames: dropped.video, droppedAudioChunks: dropped.audio,
            streamsEnded: session.streamsEnded, recordings: finished.filter { !$0.recording }.count,
            recordingBytes: finished.filter { !$0.recording }.reduce(0) { $0 + $1.bytes },
            recordingNowBytes: finished.last(where: \.recording)?.bytes, cameraFrames: camera?.frames,
            cameraDriverDropped: camera?.driverDropped, cameraReopened: camera?.reopened, cameraCorrupt: camera?.corruptBuffers, update: update.withLock { $0?.status.withLock { $0 } }, install: updates.install, lastError: counts.lastError,
            publish: publisher?.status, temperatureC: counts.temperatureC, clock: clockWatch.reading, device: settings.deviceName,
            ladder: ladder, webrtc: webrtc.map {
                StatusSnapshot.WebRTCStatus(port: $0.port, fingerprint: $0.certificate.sdpFingerprint, maxViewers: settings.webrtcViewers,
                                            sessions: $0.sessions, pictureAfterCaptureMs: $0.pictureAfterCaptureMs)
            }, rtsp: rtsp.map {
                StatusSnapshot.RTSPStatus(port: $0.port, mediaPorts: [$0.mediaPorts.rtp, $0.mediaPorts.rtcp], maxClients: settings.rtspClients,
                                          sessions: $0.sessions)
            }, liveReaders: feed.readers, access: access.map { ($0.list.viewers.count, $0.list.devices.count) }, unavailable: devices?.unavailable ?? [],
            destinations: destinations?.statuses ?? [], wifi: wifi?.status, reach: Self.reach())
    }

    /// The `.local` name, when `onair names` set the hostname to it (systemd-resolved
    /// announces the hostname), and the up interfaces' IPv4 addresses.
    static func reach() -> StatusSnapshot.Reach {
        let announced = FileSystem.readText(NetworkNames.announcedFile)?.trimmingWhitespace()
        let hostname = ThisProcess.hostname
        let name = announced.flatMap { !$0.isEmpty && $0 == hostname ? $0 + ".local" : nil }
        return .init(localName: name, addresses: NetworkInterfaces.ipv4().map { $0.address.map(String.init).joined(separator: ".") })
    }

    /// The live ladder's rungs as the thermal ladder leaves them; nil without a ladder.
    private var ladder: (live: [String], dropped: [String])? {
        let rungs = session.profile.live.rungNames
        guard rungs.count > 1 else { return nil }
        let dropped = min(session.droppedRungs, rungs.count - 1)
        return (Array(rungs[dropped...]), Array(rungs[..<dropped]))
    }

    /// Finishes the stream in progress, stops the microphone, drains the uploads (up to
    /// publish.drain_seconds) and stops the server. Returns the session's failure, if any.
    func stop() -> Error? {
        for task in tasks.withLock({ $0 }) { scheduler.cancel(task) }
        clockWatch.stop(on: scheduler)
        session.shutdown()
        if let microphone {
            microphone.stop()
            if microphone.xruns > 0 { log(.audioXruns, level: .warn, ("count", microphone.xruns)) }
        }
        if let publisher {
            // Whatever cannot be published in time stays in the spool (the data directory).
            if publisher.pendingSegments > 0 { log(.publishDraining, ("pending_segments", publisher.pendingSegments),
                                                   ("seconds", Double(settings.publish.drainMilliseconds) / 1000),
                                                   ("note", "signal again to stop waiting")) }
            let drained = publisher.drain(seconds: Double(settings.publish.drainMilliseconds) / 1000)
            log(drained ? Event.publishDrained : Event.publishIncomplete, level: drained ? .info : .warn,
                ("pending_segments", publisher.pendingSegments), ("last_error", publisher.lastError ?? "none"))
            publisher.stop()
        }
        server?.stop()
        webrtc?.stop()
        rtsp?.stop()
        // After the session: its stream's end has reached them, and each broadcast ended.
        destinations?.stop()
        setupNetwork?.stop()
        wifi?.stop()
        feed.stop()
        discovery.withLock { $0?.stop() }
        update.withLock { $0?.stop() }
        updates.stop()
        return session.error
    }

}

extension Pipeline {
    /// Says which slot runs (A/B images); on an update's first boot, confirms it once
    /// healthy: the session armed or streaming and the web server answering a request (any
    /// status: with `[access]` a 401 is an answer).
    func watchSlot(_ slots: BootSlots?) {
        guard let slots else { return }
        let session = self.session
        let watch = SlotWatch(slots, dataDirectory: settings.dataDirectory, confirmSeconds: settings.updateConfirmSeconds, healthy: { [weak self] in
            guard [.armed, .recording].contains(session.state) else { return false }
            guard let server = self?.server else { return true }
            return SlotConfirmation.webServerAnswers(server.listenAddress.browserURL(port: server.port) + "api/status")
        }, log: log)
        update.withLock { $0 = watch }
    }
}
