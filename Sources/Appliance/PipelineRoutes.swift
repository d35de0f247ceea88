import Basics
import Export
import Layout
import Logging
import Publishing
import Server
import System
import Threading
import WebRTC

/// The web server's routes that act for someone else's module: WHEP's offers, the
/// operator's forget, the export download, the settings and setup pages.
extension Pipeline {
    /// `POST /whep`, `DELETE /whep/session/<id>`, … on the web server.
    static func whep(_ webrtc: WebRTCServer) -> WebServer.BodyRoute {
        WebServer.BodyRoute(prefix: WHEPResource.prefix, maximumBody: WHEPResource.maximumOffer, methods: WHEPResource.methods) { request in
            let reply = WHEPResource.respond(method: request.method, path: request.path, contentType: request.contentType,
                                             body: request.body, client: request.client, server: webrtc)
            return WebServer.BodyReply(status: reply.status, headers: reply.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                                       body: reply.body)
        }
    }

    /// `/settings` for the owner's onair.conf (the last --config), and `/setup` while the
    /// board has a setup network. What a save changes applies: the board's units at once
    /// (`BoardUnits`), the pipeline when it is idle (`restartWanted`).
    static func settingsPages(_ settings: Settings, setupNetwork: SetupNetwork?, restartWanted: Locked<(keys: [String], at: Int64)>, log: Log) -> [WebServer.BodyRoute] {
        guard !settings.configFiles.isEmpty else { return [] }
        let saved: @Sendable ([String]) -> Void = { keys in
            let units = BoardUnits.units(for: keys, wifiInterface: settings.wifi.interface)
            // While the setup network is open the radio is the phone's: the units start
            // again when it has closed, after the page's answer reached the phone.
            if let setupNetwork, setupNetwork.isOpen { setupNetwork.saved(units: units) } else { BoardUnits.restart(units, log: log) }
            restartWanted.withLock { $0 = ($0.keys + keys, KernelClock.monotonic()) }
        }
        var routes = [SettingsService(files: settings.configFiles, log: log, restart: saved).route]
        if let setupNetwork {
            let setup = SettingsService.Setup(isOpen: { setupNetwork.isOpen }, seen: { setupNetwork.seen.map(\.ssid) })
            routes.append(SettingsService(files: settings.configFiles, kind: .setup(askOperator: settings.serverToken == nil),
                                          setup: setup, log: log, restart: saved).route)
        }
        return routes
    }

    /// `POST /api/forget?stream=ID`: the owner deleted a published stream at the
    /// destination; the board's streams.json stops listing it (and it is not published
    /// again). The stream being recorded is refused (409): its owner stops it first, so
    /// a forget never pulls the ground from under the live output.
    static func forget(publisher: Publisher?, live: @escaping @Sendable () -> String?, log: Log) -> WebServer.Control {
        { argument in
            guard let publisher else { throw WebServer.ControlRefusal(409, "this board publishes nowhere (publish.url is not set)") }
            guard let id = argument("stream"), !id.isEmpty else { throw WebServer.ControlRefusal(400, "stream=ID is required") }
            guard id != live() else {
                throw WebServer.ControlRefusal(409, "\(id) is being recorded now: stop it first (POST /api/record/stop), then forget it")
            }
            do { try publisher.forgetPublished(id) } catch { throw WebServer.ControlRefusal(404, "\(error)") }
            log(.streamForgotten, ("id", id), ("source", "api"))
            return JSON.fields(["forgotten": id]).bytes
        }
    }

    /// `GET /api/export`: a stored stream, or part of it, as one progressive MP4.
    static func export(root: String, log: Log) -> WebServer.Download {
        WebServer.Download { argument in
            do {
                let made = try StreamExport.make(root: root, try ExportRequest(arguments: argument))
                log(.exportStarted, ("name", made.name), ("segments", made.segments), ("bytes", made.file.size))
                return .file(made.file, name: made.name, contentType: "video/mp4")
            } catch let error as ExportError {
                return .refused(error.status, error.description)
            } catch {
                log(.exportFailed, level: .error, ("error", "\(error)"))
                return .refused(500, "\(error)")
            }
        }
    }
}
