import Devices
#if canImport(Glibc)
import Glibc
#endif
import HLS
import Logging
import Publishing
import Recording
import Server
import Streaming
import Threading

/// Everything after the preview: what the deferred start brings up once the first frame
/// is on screen (the microphone, crash recovery, the publisher, storage keeping, the
/// session with its encoders and recording writer, the web server), and takes down at the
/// end of a run.
final class Pipeline: @unchecked Sendable {  // `server`, `sampler` set in init, stopped by stop() on the run's thread; the rest immutable
    let settings: Settings
    let session: Session
    let publisher: Publisher?
    let microphone: ALSAMicrophone?
    private(set) var server: WebServer?
    let telemetry = Telemetry()
    let history = History()
    private let sampling = Completion()
    private var sampler: WorkerThread?
    let recordings: Recordings
    private let camera: (@Sendable () -> V4L2Camera.Statistics)?
    private let log: Log

    struct StartError: Error, CustomStringConvertible {
        var description: String
        /// 2: usage or configuration (a device that will not open, a port in use); 1: runtime.
        var status: Int32
    }

    /// `onIdle` is called when a stream has ended or the session failed.
    init(_ requested: Settings, audioDevice: String, makePublisher: () -> Publisher?, log: Log,
         camera: (@Sendable () -> V4L2Camera.Statistics)? = nil, onIdle: @escaping @Sendable (Session) -> Void) throws {
        self.log = log
        self.camera = camera
        let telemetry = self.telemetry
        log.listen { event, level, fields in
            if level == .error { telemetry.error("\(event) " + fields.map { "\($0.0)=\($0.1)" }.joined(separator: " ")) }
        }
        var adjusted = requested
        // An ALSA device replaces the synthetic source's own microphone. audio.enabled = auto
        // means "on when the capture PCM opens": without one the stream is video only, with
        // a warning; audio.enabled = on makes it an error.
        var microphone: ALSAMicrophone?
        if adjusted.audioEnabled && audioDevice != "auto" {
            do {
                microphone = try ALSAMicrophone(device: audioDevice, sampleRate: adjusted.sampleRate, channels: adjusted.channels)
            } catch {
                if adjusted.audio == .on { throw StartError(description: "\(error)", status: 2) }
                log(.audioUnavailable, level: .warn, ("error", "\(error)"), ("note", "recording video only"))
                adjusted.audio = .off
            }
        }
        self.microphone = microphone
        let settings = adjusted
        self.settings = settings
        let publisher = makePublisher()
        self.publisher = publisher
        // The storage keeper first: a full card must not stop the start at its first write
        // (issue 13), so space is made before anything is written, and again whenever a
        // write finds the disk full.
        let recordings = Recordings(root: settings.dataDirectory)
        self.recordings = recordings
        // A stream counts as published once its journal for this destination says ENDLIST.
        let destinationName = publisher?.destination
        let storage = StorageKeeper(
            root: settings.dataDirectory, minimum: settings.minimumFree,
            isPublished: { id in
                destinationName.flatMap { Journal.read("\(settings.dataDirectory)/streams/\(id)", destination: $0)?.endlist } ?? false
            },
            log: log,
            deleted: { [publisher] id in publisher?.forget(id) },
            recordings: { recordings.evictable().map { entry in .init(id: entry.id, remove: { try recordings.remove(entry.id) }) } })
        storage.prune(recording: nil)
        // Streams an earlier run left open (crash, kill -9, power cut) are closed with what
        // was completely stored, and published to the end, before anything new starts.
        // A file that cannot be used is set aside and said once; the start goes on.
        let skipped: (Recovery.Skipped) -> Void = { log(.recoverySkipped, level: .error, ("path", $0.path), ("reason", $0.reason)) }
        for stream in Recovery.closeAll(root: settings.dataDirectory, skipped: skipped) {
            if stream.wasInterrupted { log(.streamRecovered, level: .warn, ("id", stream.id), ("segments", stream.segments)) }
            if let pending = publisher?.resume(stream.id, segments: stream.segments, multivariantRewritten: stream.multivariantRewritten), pending > 0 {
                log(.publishResumed, ("id", stream.id), ("pending_segments", pending))
            }
        }
        // Recordings a crash left as `.part` become playable MP4s from their complete
        // fragments; old ones go by record.keep_days.
        recordings.recoverAll(priority: settings.record.priority, log: log)
        if let days = settings.record.keepDays {
            recordings.expire(keepDays: days, nowMs: wallClockMilliseconds(), log: log)
        }
        let current = CurrentStream()
        session = Session(profile: settings.sessionProfile, log: log, makeRoom: { storage.makeRoom(recording: current.get()) }, observer: { [publisher] event in
            publisher?.observe(event)
            switch event {
            case .started(let id): current.set(id)
            case .segmentStored(let id, let sequence):
                storage.checkSoon(recording: current.get())
                let path = "\(settings.dataDirectory)/streams/\(id)/\(MediaPlaylist.segmentURI(sequence))"
                var info = stat()
                let size = stat(path, &info) == 0 ? Int(info.st_size) : 0
                telemetry.segmentStored(bytes: size)
            case .ended: current.set(nil)
            case .multivariantRewritten: break
            }
        })
        // Asked for before the camera's first frame reaches the session, so the stream
        // begins with that frame.
        if settings.start == .now { session.startRecording() }
        do { try session.start(onIdle: onIdle) } catch {
            // An estimate that refuses is a configuration problem; an encoder that fails, not.
            throw StartError(description: "\(error)", status: error is SessionError ? 2 : 1)
        }
        let session = self.session
        if let listen = settings.listen {
            do {
                let snapshot: @Sendable () -> StatusSnapshot = { [unowned self] in self.snapshot() }
                let control: @Sendable (Bool) -> [UInt8] = { start in
                    if start { session.startRecording() } else { session.stopRecording() }
                    log(.buttonPressed, ("source", "api"), ("action", start ? "start" : "stop"))
                    return Array("{\"accepted\":\"\(start ? "start" : "stop")\"}".utf8)
                }
                server = try WebServer(listen: listen, root: settings.dataDirectory, api: [
                    "/api/status": .json { snapshot().json },
                    "/api/recordings": .json { recordings.json },
                    "/metrics": .init(contentType: "text/plain; version=0.0.4; charset=utf-8") { Array(snapshot().metrics.utf8) },
                    "/status": .init(contentType: "text/html; charset=utf-8") { Array(StatusPage.html(snapshot()).utf8) },
                    "/status/plots.svg": .init(contentType: "image/svg+xml") { [history] in Array(StatusPage.svg(history.all).utf8) }
                ], control: ["/api/record/start": { control(true) }, "/api/record/stop": { control(false) }], token: settings.serverToken,
                   log: log)
                // Say what is bound: one address, or every interface.
                let address = server!.listenAddress, port = server!.port
                log(.serverListening, ("bound", address.isWildcard ? "\(address.host) port \(port) (every interface)" : "\(address.host) port \(port)"),
                    ("url", address.browserURL(port: port)))
            } catch {
                session.shutdown()
                throw StartError(description: "\(error)", status: 2)
            }
        }
        // The /status plots: a sample every five seconds.
        sampler = WorkerThread(name: "onair-history") { [unowned self] in
            var last = (frames: session.framesIn, at: MonotonicClock().now())
            while !sampling.wait(seconds: 5) {
                let now = MonotonicClock().now(), state = snapshot()
                let fps = Double(state.framesIn - last.frames) / max(0.001, Double(now - last.at) / 1e9)
                last = (state.framesIn, now)
                history.add(.init(seconds: state.uptimeSeconds, fps: fps, temperatureC: state.temperatureC,
                                  bitsPerSecond: state.liveBitsPerSecond, queue: state.publish?.pendingSegments ?? 0))
            }
        }
        if let microphone {
            microphone.start(into: session.queue)
            log(.audioSelected, ("device", audioDevice), ("rate", microphone.sampleRate),
                ("channels", settings.channels), ("period_frames", microphone.periodFrames))
        }
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
            cameraDriverDropped: camera?.driverDropped, cameraReopened: camera?.reopened, lastError: counts.lastError,
            publish: publisher?.status, temperatureC: counts.temperatureC)
    }

    /// Finishes the stream in progress, stops the microphone, drains the uploads (up to
    /// publish.drain_seconds) and stops the server. Returns the session's failure, if any.
    func stop() -> Error? {
        sampling.signal()
        sampler?.join()
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
        return session.error
    }
}
