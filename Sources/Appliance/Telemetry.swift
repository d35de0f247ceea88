import Basics
import Destinations
import Devices
import Media
import Network
import Publishing
import Recording
import Threading
import RTSP
import Updates
import WebRTC

/// What a run has done so far, from every part of it, for `/api/status`, `/metrics` and
/// the console line. Counters only grow; rates are over the last ten seconds.
final class Telemetry: Sendable {
    private struct State {
        var segments = 0
        var segmentBytes = 0
        var recentSegments: [(at: Int64, bytes: Int)] = []
        var lastErrorText: String?
        var temperature: Double?
    }
    private let state = Locked(State())
    private let clock = MonotonicClock()
    let started: Int64

    func temperature(_ celsius: Double?) { state.withLock { $0.temperature = celsius } }

    init() { started = MonotonicClock().now() }

    func segmentStored(bytes: Int) {
        let now = clock.now()
        state.withLock { state in
            state.segments += 1
            state.segmentBytes += bytes
            state.recentSegments.append((now, bytes))
            state.recentSegments.removeAll { now - $0.at > 10_000_000_000 }
        }
    }

    func error(_ text: String) { state.withLock { $0.lastErrorText = text } }

    struct Counts: Sendable {
        var segments: Int
        var segmentBytes: Int
        var liveBitsPerSecond: Double
        var lastError: String?
        var uptimeSeconds: Double
        var temperatureC: Double?
    }

    var counts: Counts {
        let now = clock.now()
        return state.withLock { [started] state in
            let window = state.recentSegments.filter { now - $0.at <= 10_000_000_000 }
            let seconds = min(10, Double(now - started) / 1e9)
            return Counts(segments: state.segments, segmentBytes: state.segmentBytes,
                          liveBitsPerSecond: seconds > 0 ? Double(window.reduce(0) { $0 + $1.bytes } * 8) / seconds : 0,
                          lastError: state.lastErrorText, uptimeSeconds: Double(now - started) / 1e9, temperatureC: state.temperature)
        }
    }
}

/// One look at the whole appliance.
struct StatusSnapshot {
    var state: String
    var stream: String?
    var uptimeSeconds: Double
    var fps: Int
    var framesIn: Int
    var segmentsStored: Int
    var segmentBytes: Int
    var liveBitsPerSecond: Double
    var droppedVideoFrames: Int
    var droppedAudioChunks: Int
    var streamsEnded: Int
    var recordings: Int
    var recordingBytes: Int64
    var recordingNowBytes: Int64?
    var cameraFrames: Int?
    var cameraDriverDropped: Int?
    var cameraReopened: Int?
    var cameraCorrupt: Int? = nil
    var update: UpdateStatus? = nil
    /// A bundle's install, running or the last one since boot.
    var install: InstallState? = nil
    var lastError: String?
    var publish: Publisher.Status?
    /// The hottest thermal zone, when the board has one.
    var temperatureC: Double? = nil
    /// The wall clock, and whether it is synchronised.
    var clock: ClockReading? = nil
    /// `device.name`: which board of a fleet this is.
    var device: String? = nil
    /// A quality ladder's rungs (`WxH@RATE`, top first): those encoded now, and those the
    /// heat left out.
    var ladder: (live: [String], dropped: [String])? = nil
    /// WebRTC: the port, the certificate's fingerprint, the limit and the sessions now.
    var webrtc: WebRTCStatus? = nil
    /// RTSP: the ports, the limit and the sessions now.
    var rtsp: RTSPStatus? = nil
    /// The live feed's readers now (WebRTC while it has viewers, RTSP while a client plays),
    /// and what each lost because it fell a whole ring behind.
    var liveReaders: [(name: String, discarded: Int)] = []
    /// `[access]`: how many viewers and device accounts; nil: anyone may watch.
    var access: (viewers: Int, devices: Int)? = nil
    /// Devices configured but not to be had now (a button line another driver holds).
    var unavailable: [DeviceRetries.Problem] = []
    /// The platforms and servers the live stream goes to, in name order.
    var destinations: [DestinationStatus] = []
    /// The Wi-Fi of `[wifi]`; nil without one.
    var wifi: WiFiStatus? = nil
    /// Where a viewer reaches the board: its `.local` name while systemd-resolved announces
    /// it (`onair names --set-hostname` set it), and its IPv4 addresses.
    var reach = Reach()

    struct Reach {
        var localName: String?
        var addresses: [String] = []
        /// For the console: the name, then the addresses (at most three).
        var text: String { ([localName].compactMap { $0 } + addresses.prefix(3)).joined(separator: ",") }
    }

    struct RTSPStatus {
        var port: UInt16
        var mediaPorts: [UInt16]
        var maxClients: Int
        var sessions: [RTSPServer.SessionStatus]

        var json: JSON {
            JSON.fields(["port": Int(port), "rtp_ports": mediaPorts.map(Int.init), "max_clients": maxClients,
                         "sessions": sessions.map { session in
                             JSON.fields(["id": session.id, "client": session.client, "transport": session.transport, "playing": session.playing,
                                          "age_seconds": Double(session.ageMs / 100) / 10, "packets": session.packets, "bytes": session.bytes,
                                          "dropped_pictures": session.dropped])
                         }])
        }
    }

    struct WebRTCStatus {
        var port: UInt16
        var fingerprint: String
        var maxViewers: Int
        var sessions: [WebRTCServer.SessionStatus]
        var pictureAfterCaptureMs: Double?

        var json: JSON {
            JSON.fields(["port": Int(port), "fingerprint": fingerprint, "max_viewers": maxViewers,
                         "picture_after_capture_ms": pictureAfterCaptureMs.map { ($0 * 10).rounded() / 10 },
                         "sessions": sessions.map { session in
                             JSON.fields(["id": session.id, "client": session.client, "media": session.media,
                                          "age_seconds": Double(session.ageMs / 100) / 10, "connected": session.connected,
                                          "packets": session.packets, "bytes": session.bytes, "audio_packets": session.audioPackets, "nacks": session.nacks,
                                          "retransmitted": session.retransmitted, "picture_losses": session.pictureLosses,
                                          "rtt_ms": session.roundTripMs.map { ($0 * 10).rounded() / 10 },
                                          "first_picture_ms": session.firstPictureMs.map(Int.init)])
                         }])
        }
    }

    /// `GET /api/status`.
    var json: [UInt8] {
        JSON.fields([
            "device": device, "local_name": reach.localName, "addresses": reach.addresses, "state": state, "stream": stream, "fps": fps, "recordings": recordings, "publish": publish?.json,
            "uptime_seconds": uptimeSeconds, "frames_in": framesIn, "segments_stored": segmentsStored,
            "segment_bytes": segmentBytes, "live_bits_per_second": liveBitsPerSecond,
            "dropped_video_frames": droppedVideoFrames, "dropped_audio_chunks": droppedAudioChunks,
            "streams_ended": streamsEnded, "recording_bytes": recordingBytes, "recording_now_bytes": recordingNowBytes,
            "camera_frames": cameraFrames, "camera_driver_dropped": cameraDriverDropped, "camera_reopened": cameraReopened,
            "camera_corrupt": cameraCorrupt,
            "update": update == nil && install == nil ? nil
                : JSON.fields(["slot": update?.slot, "version": update?.version, "state": update?.state, "reason": update?.reason,
                               "install": install.map { JSON.fields(["phase": $0.phase.rawValue, "source": $0.source, "percent": $0.percent,
                                                                     "step": $0.step, "bytes": $0.bytes, "error": $0.error]) }]),
            "last_error": lastError, "temperature_c": temperatureC,
            "ladder": ladder.map { JSON.fields(["live": $0.live, "dropped": $0.dropped]) }, "webrtc": webrtc?.json, "rtsp": rtsp?.json,
            "live_readers": liveReaders.map { JSON.fields(["name": $0.name, "discarded": $0.discarded]) },
            "access": JSON.fields(["open": access == nil, "viewers": access?.viewers ?? 0, "devices": access?.devices ?? 0]),
            "destinations": destinations.map { destination in
                JSON.fields(["name": destination.name, "kind": destination.kind, "host": destination.host, "state": destination.state.rawValue,
                             "bits_per_second": destination.bitsPerSecond, "bytes": destination.totalBytes, "frames": destination.totalFrames,
                             "dropped_frames": destination.totalDropped, "reconnects": destination.reconnects, "last_error": destination.lastError,
                             "rung": destination.rung + 1, "rung_sent": destination.rungSent.map { $0 + 1 }])
            },
            "wifi": wifi.map { JSON.fields(["state": $0.state.rawValue, "interface": $0.interface, "network": $0.network, "ssid": $0.ssid,
                                            "address": $0.address, "problem": $0.problem]) },
            "unavailable": unavailable.map { JSON.fields(["key": $0.key, "device": $0.device, "problem": $0.problem]) },
            "clock": clock.map { JSON.fields(["synchronized": $0.synchronized, "source": $0.source,
                                              "now": UTCDate.iso8601(milliseconds: $0.wallMs)]) },
        ]).bytes
    }

    /// Prometheus text exposition format 0.0.4: `onair_*` counters and gauges, each with
    /// the board's `device` label, so a fleet's samples stay apart wherever they are sent.
    var metrics: String {
        var lines: [String] = []
        // device.name is letters, digits and ._- only: nothing to escape in a label value.
        let labels = device.map { "{device=\"\($0)\"}" } ?? ""
        func metric(_ name: String, _ type: String, _ help: String, _ value: Double?) {
            guard let value else { return }
            lines.append("# HELP onair_\(name) \(help)")
            lines.append("# TYPE onair_\(name) \(type)")
            let text = value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
            lines.append("onair_\(name)\(labels) \(text)")
        }
        metric("up_seconds", "gauge", "Seconds since onair started.", (uptimeSeconds * 1000).rounded() / 1000)
        metric("recording", "gauge", "1 while a stream is being recorded.", state == "recording" || state == "finishing" ? 1 : 0)
        metric("fps_target", "gauge", "The frame rate streams are made at now (the thermal ladder lowers it).", Double(fps))
        metric("ladder_rungs_live", "gauge", "Rungs of the quality ladder encoded now (the heat leaves out the top ones).",
               ladder.map { Double($0.live.count) })
        metric("clock_synchronized", "gauge", "1 while an NTP daemon keeps the wall clock synchronised.",
               clock.map { $0.synchronized ? 1 : 0 })
        metric("webrtc_viewers", "gauge", "WebRTC (WHEP) sessions now.", webrtc.map { Double($0.sessions.count) })
        metric("rtsp_clients", "gauge", "RTSP sessions now.", rtsp.map { Double($0.sessions.count) })
        metric("frames_in_total", "counter", "Frames handed to the outputs.", Double(framesIn))
        metric("segments_stored_total", "counter", "Live media segments stored.", Double(segmentsStored))
        metric("segment_bytes_total", "counter", "Bytes of live media segments stored.", Double(segmentBytes))
        metric("live_bits_per_second", "gauge", "Live stream bit rate over the last 10 seconds.", liveBitsPerSecond.rounded())
        metric("dropped_video_frames_total", "counter", "Frames dropped because a thread fell behind.", Double(droppedVideoFrames))
        metric("dropped_audio_chunks_total", "counter", "Sound chunks dropped because a thread fell behind.", Double(droppedAudioChunks))
        metric("streams_total", "counter", "Streams ended in this run.", Double(streamsEnded))
        metric("recordings", "gauge", "Finished local recordings on disk.", Double(recordings))
        metric("recordings_bytes", "gauge", "Bytes of finished local recordings.", Double(recordingBytes))
        metric("camera_frames_total", "counter", "Frames delivered by the V4L2 camera.", cameraFrames.map(Double.init))
        metric("camera_driver_dropped_total", "counter", "Frames the camera driver dropped (sequence gaps).", cameraDriverDropped.map(Double.init))
        metric("camera_reopened_total", "counter", "Times the camera was reopened after it was lost.", cameraReopened.map(Double.init))
        metric("camera_corrupt_total", "counter", "Broken buffers the camera gave and onair skipped.", cameraCorrupt.map(Double.init))
        destinationMetrics(&lines)
        if let publish {
            metric("publish_pending_segments", "gauge", "Segments not yet confirmed by the destination.", Double(publish.pendingSegments))
            metric("publish_pending_bytes", "gauge", "Bytes not yet confirmed by the destination.", Double(publish.pendingBytes))
            metric("publish_oldest_pending_seconds", "gauge", "Age of the oldest unconfirmed segment.", publish.oldestPendingSeconds ?? 0)
            metric("publish_attempts_total", "counter", "Upload requests made.", Double(publish.attempts))
            metric("publish_failures_total", "counter", "Upload requests that failed.", Double(publish.failures))
            metric("publish_bytes_total", "counter", "Bytes uploaded and confirmed.", Double(publish.bytes))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Each destination's samples, labelled with its name (letters, digits, '-' and '_':
    /// nothing to escape) beside the device.
    private func destinationMetrics(_ lines: inout [String]) {
        guard !destinations.isEmpty else { return }
        let device = self.device.map { "device=\"\($0)\"," } ?? ""
        let series: [(String, String, String, (DestinationStatus) -> Int)] = [
            ("destination_live", "gauge", "1 while the destination's server takes the stream.", { $0.state == .live ? 1 : 0 }),
            ("destination_bits_per_second", "gauge", "Bit rate sent to the destination over the last seconds.", { $0.bitsPerSecond }),
            ("destination_bytes_total", "counter", "Bytes sent to the destination.", { $0.totalBytes }),
            ("destination_frames_total", "counter", "Pictures sent to the destination.", { $0.totalFrames }),
            ("destination_dropped_frames_total", "counter", "Pictures not sent: the destination took the stream too slowly, or was between connections.", { $0.totalDropped }),
            ("destination_reconnects_total", "counter", "Connections made again after one failed.", { $0.reconnects }),
        ]
        for (name, type, help, value) in series {
            lines += ["# HELP onair_\(name) \(help)", "# TYPE onair_\(name) \(type)"]
            lines += destinations.map { "onair_\(name){\(device)destination=\"\($0.name)\"} \(value($0))" }
        }
    }

    /// The serial console's status line: plain ASCII, one line, readable at 115200 baud.
    func consoleLine(fpsActual: Double) -> String {
        func size(_ bytes: Int64) -> String {
            bytes >= 1 << 30 ? ((Double(bytes) / Double(1 << 30)).fixed(1) + "G")
                : bytes >= 1 << 20 ? ((Double(bytes) / Double(1 << 20)).fixed(1) + "M") : "\(bytes / 1024)K"
        }
        let up = Int(uptimeSeconds)
        var parts = ["onair:", state] + (device.map { ["device=\($0)"] } ?? [])
        parts += ["stream=\(stream ?? "-")", "up=\(up / 3600)h\((up / 60 % 60).zeroPadded(2))m\((up % 60).zeroPadded(2))s",
                  "fps=\(fpsActual.fixed(1))/\(fps)"]
        if let ladder { parts.append("rungs=\(ladder.live.count)/\(ladder.live.count + ladder.dropped.count)") }
        parts += ["temp=\(temperatureC.map { ($0.fixed(0) + "C") } ?? "-")",
                  "clock=\(clock.map { $0.synchronized ? "synced" : "unsynced" } ?? "-")", "rate=\((liveBitsPerSecond / 1e6).fixed(2))M"]
        parts.append("seg=\(segmentsStored)/\(publish.map { "\(segmentsStored - min(segmentsStored, $0.pendingSegments))" } ?? "-")")
        if let publish {
            parts.append("queue=\(publish.pendingSegments)(\((publish.oldestPendingSeconds ?? 0).fixed(0))s)")
        }
        parts.append("rec=\(recordingNowBytes.map(size) ?? "-")")
        if !destinations.isEmpty {
            // `dest=youtube:live,own:retrying`: which platforms have the stream.
            parts.append("dest=" + destinations.map { "\($0.name):\($0.state.rawValue)" }.joined(separator: ","))
        }
        // `wifi=joined`, `wifi=wrong-password`: the Wi-Fi of [wifi], in a word.
        if let wifi { parts.append("wifi=\(wifi.consoleWord)" + (wifi.address.map { "(\($0))" } ?? "")) }
        // Where to point a browser: `at=cam1.local,192.168.1.23` (after the fields
        // readers of the line have always found first).
        if !reach.text.isEmpty { parts.append("at=\(reach.text)") }
        parts.append("dropped=\(droppedVideoFrames)")
        parts.append("err=\(lastError.map { String($0.prefix(60)) } ?? "-")")
        return String(parts.joined(separator: " ").unicodeScalars.map { $0.isASCII ? Character($0) : "?" })
    }
}
