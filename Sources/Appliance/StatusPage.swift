import Basics
import Destinations
import Devices
import Network
import Threading

/// The last ten minutes, one sample every five seconds, for the /status plots.
final class History: Sendable {
    struct Sample: Equatable, Sendable {
        var seconds: Double       // since onair started
        var fps: Double
        var temperatureC: Double?
        var bitsPerSecond: Double
        var queue: Int
    }
    static let capacity = 120
    private let samples = Locked<[Sample]>([])

    func add(_ sample: Sample) {
        samples.withLock { samples in
            samples.append(sample)
            if samples.count > Self.capacity { samples.removeFirst(samples.count - Self.capacity) }
        }
    }

    var all: [Sample] { samples.withLock { $0 } }
}

/// `/status`: the state at a glance, the live stream, and plots of the last ten minutes
/// drawn by onair itself as SVG (no scripts from anywhere else).
enum StatusPage {
    static func html(_ status: StatusSnapshot) -> String {
        let rows: [(String, String)] = [
            ("state", status.state), ("stream", status.stream ?? "none"),
            ("reach it at", ([status.reach.localName] + status.reach.addresses.map(Optional.some)).compactMap { $0 }.joined(separator: ", ")),
            ("up", "\(Int(status.uptimeSeconds) / 3600) h \(Int(status.uptimeSeconds) / 60 % 60) min"),
            ("live bit rate", ((status.liveBitsPerSecond / 1e6).fixed(2) + " Mb/s")),
            ("segments stored", "\(status.segmentsStored)"),
            ("upload queue", status.publish.map { "\($0.pendingSegments) segments" } ?? "no destination"),
            ("recordings", "\(status.recordings)"), ("dropped frames", "\(status.droppedVideoFrames)"),
            ("WebRTC viewers", status.webrtc.map { "\($0.sessions.count) of \($0.maxViewers)" } ?? "off"),
            ("RTSP clients", status.rtsp.map { "\($0.sessions.count) of \($0.maxClients) (port \($0.port))" } ?? "off"),
            // Which platforms have the stream now, and why one does not.
            ("live on", status.destinations.isEmpty ? "no destination" : status.destinations.map { destination in
                "\(destination.name): \(destination.state.rawValue)"
                    + (destination.state == .live ? " (\((Double(destination.bitsPerSecond) / 1e6).fixed(2)) Mb/s)" : "")
                    + (destination.lastError.map { " — \($0)" } ?? "")
            }.joined(separator: "; ")),
            ("Wi-Fi", status.wifi.map { wifi in
                [wifi.state.rawValue, wifi.ssid.map { "'\($0)'" }, wifi.address, wifi.problem].compactMap { $0 }.joined(separator: " — ")
            } ?? "off"),
            ("unavailable", status.unavailable.isEmpty ? "nothing" : status.unavailable.map { "\($0.key) \($0.device): \($0.problem)" }.joined(separator: "; ")),
            ("who may watch", status.access.map { "\($0.viewers) viewers, \($0.devices) device accounts" } ?? "anyone on the network"),
            ("last error", status.lastError ?? "none")
        ]
        let table = rows.map { "<tr><th>\(escape($0.0))</th><td>\(escape($0.1))</td></tr>" }.joined()
        let viewers = (status.webrtc?.sessions ?? []).map { session -> String in
            let rtt = session.roundTripMs.map { $0.fixed(1) + " ms" } ?? "-"
            let cells = [session.client, session.media ?? "connecting", "\(session.ageMs / 1000) s", "\(session.bytes / 1024) KiB",
                         "\(session.nacks)", rtt]
            return "<tr>" + cells.map { "<td>\(escape($0))</td>" }.joined() + "</tr>"
        }.joined()
        let sessions = viewers.isEmpty ? "" : "<table id=\"webrtc\"><tr><th>viewer</th><th>media</th><th>since</th><th>sent</th>"
            + "<th>NACKs</th><th>RTT</th></tr>\(viewers)</table>"
        // The stream being recorded, as one MP4: all of it, or its last ten minutes.
        let downloads = status.stream.map { id in
            let export = escape("/api/export?stream=\(id)")
            return "<p id=\"downloads\"><a href=\"\(export)\">download this stream</a> · "
                + "<a href=\"\(export)&amp;last=600\">the last 10 minutes</a></p>"
        } ?? ""
        let name = escape(status.device.map { "onair · " + $0 } ?? "onair")
        return """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><title>\(name) status</title>
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <style>body{font:14px system-ui,sans-serif;margin:1em;background:#111;color:#eee}th{text-align:left;padding-right:1em;color:#aaa}
        iframe{border:0;width:100%;max-width:640px;aspect-ratio:16/9}img{width:100%;max-width:640px;display:block;margin-top:1em}</style>
        </head><body><h1>\(name)</h1><table id="status">\(table)</table>\(sessions)
        \(downloads)<iframe src="/" title="live stream"></iframe>
        <img id="plots" src="/status/plots.svg" alt="frame rate, temperature, bit rate and upload queue over the last ten minutes">
        <script>setInterval(function(){document.getElementById('plots').src='/status/plots.svg?'+Date.now();
        fetch('/api/status').then(function(r){return r.json()}).then(function(s){document.title='onair: '+s.state})},5000)</script>
        </body></html>
        """
    }

    /// Four stacked plots, each scaled to its own range, with the latest value printed.
    static func svg(_ samples: [History.Sample]) -> String {
        let width = 600.0, plotHeight = 90.0, gap = 30.0
        let series: [(String, String, [Double?], (Double) -> String)] = [
            ("frame rate", "#6cf", samples.map(\.fps), { ($0.fixed(1) + " fps") }),
            ("temperature", "#f96", samples.map(\.temperatureC), { ($0.fixed(0) + " °C") }),
            ("live bit rate", "#9e6", samples.map(\.bitsPerSecond), { (($0 / 1e6).fixed(2) + " Mb/s") }),
            ("upload queue", "#fc6", samples.map { Double($0.queue) }, { ($0.fixed(0) + " segments") })
        ]
        var body = ""
        for (index, (name, colour, values, label)) in series.enumerated() {
            let top = Double(index) * (plotHeight + gap) + gap
            let known = values.compactMap { $0 }
            let low = min(0, known.min() ?? 0), high = max(known.max() ?? 1, low + 1e-9)
            let latest = known.last.map(label) ?? "no data"
            body += "<text x=\"0\" y=\"\(fmt(top - 8))\" fill=\"#aaa\">\(escape(name)): \(escape(latest))</text>"
            body += "<rect x=\"0\" y=\"\(fmt(top))\" width=\"\(fmt(width))\" height=\"\(fmt(plotHeight))\" fill=\"#1b1b1b\"/>"
            let step = width / Double(max(1, History.capacity - 1))
            let offset = Double(History.capacity - values.count) * step
            let points = values.enumerated().compactMap { i, v in
                v.map { "\(fmt(offset + Double(i) * step)),\(fmt(top + plotHeight - ($0 - low) / (high - low) * plotHeight))" }
            }
            if !points.isEmpty {
                body += "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\" points=\"\(points.joined(separator: " "))\"/>"
            }
        }
        let height = 4 * (plotHeight + gap) + 10
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(fmt(width)) \(fmt(height))\" font-family=\"sans-serif\" "
            + "font-size=\"13\"><rect width=\"100%\" height=\"100%\" fill=\"#111\"/>\(body)</svg>\n"
    }

    static func fmt(_ value: Double) -> String { value.fixed(1) }

    static func escape(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;")
            .replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
    }
}
