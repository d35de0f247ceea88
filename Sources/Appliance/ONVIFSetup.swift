import Access
import Basics
import Files
import Layout
import Logging
import ONVIF
import Server
import System
import Threading

/// The board as an ONVIF device: who it is (its name, its hardware from the firmware's
/// tables, a stable identity), the live stream's profile from the settings, and the
/// SOAP services as a body route of the web server.
enum ONVIFSetup {
    /// The board's identity. The UUID (WS-Discovery's endpoint reference, which an NVR
    /// remembers a camera by) is derived from the device name and serial, so it stays the
    /// same across restarts and re-flashes that keep the name.
    static func device(name: String, version: String) -> ONVIFDevice {
        let hardware = firstLine("/sys/firmware/devicetree/base/model") ?? firstLine("/sys/class/dmi/id/product_name") ?? "Linux"
        let serial = firstLine("/sys/firmware/devicetree/base/serial-number") ?? name
        // RFC 9562 §5.8: a name-based identity (version 8) from a hash of the name.
        let uuid = Discovery.uuid(SHA256.digest(Array("onair-onvif:\(name):\(serial)".utf8)), version: 8)
        return ONVIFDevice(name: name, hardware: hardware, firmware: version, serial: serial, uuid: uuid)
    }

    /// A firmware table's text (device tree strings end in NUL), trimmed; nil when absent.
    static func firstLine(_ path: String) -> String? {
        guard let text = FileSystem.readText(path) else { return nil }
        let line = String(text.split(whereSeparator: { $0 == "\0" || $0 == "\n" }).first ?? "").trimmingWhitespace()
        return line.isEmpty ? nil : String(line.prefix(120))
    }

    /// The LAN interfaces as GetNetworkInterfaces reports them (names, MAC, MTU from
    /// /sys/class/net; DHCP when systemd-networkd holds a lease for it).
    static func interfaces() -> [ONVIFInterface] {
        var byName: [String: ONVIFInterface] = [:]
        for (name, address, prefix) in NetworkInterfaces.ipv4() {
            let base = "/sys/class/net/" + name
            var interface = byName[name] ?? ONVIFInterface(
                name: name, hardwareAddress: firstLine(base + "/address") ?? "00:00:00:00:00:00", mtu: firstLine(base + "/mtu").flatMap { Int($0) } ?? 1500,
                ipv4: [], dhcp: firstLine(base + "/ifindex").map { FileSystem.readText("/run/systemd/netif/leases/" + $0) != nil } ?? false)
            interface.ipv4.append((SocketAddress.host(address), prefix))
            byName[name] = interface
        }
        return byName.values.sorted { $0.name < $1.name }
    }

    /// ONVIF's services (`onvif.enabled`): the board, the live stream as the settings make
    /// it, the clock, the interfaces.
    static func service(_ settings: Settings, rtspPort: UInt16?, snapshots: Bool, clock: any WallClock, access: AccessGate?, log: Log) -> ONVIFService? {
        guard settings.onvifEnabled, settings.listen != nil else { return nil }
        let size = settings.encodedSize, fps = settings.fps
        let stream = ONVIFStream(width: size.width, height: size.height, fps: fps, bitrate: settings.videoBitrate,
                                 govLength: max(1, settings.segmentMilliseconds * fps / 1000), h264Profile: "High",
                                 audio: settings.audioEnabled ? .init(sampleRate: settings.sampleRate, bitrate: settings.audioBitrate, channels: settings.channels) : nil)
        let environment = ONVIFService.Environment(
            live: { stream }, clock: { let now = clock.read(); return ONVIFClock(unixMilliseconds: now.wallMs, synchronized: now.synchronized) },
            interfaces: { ONVIFSetup.interfaces() }, rtspPort: rtspPort, snapshotPath: snapshots ? Pipeline.snapshotPath : nil, access: access)
        return ONVIFService(device: ONVIFSetup.device(name: settings.deviceName ?? "onair", version: CommandLineParser.version),
                            environment: environment, nonceFile: StreamLayout(root: settings.dataDirectory).onvifNonces, log: log)
    }

    /// WS-Discovery on the LAN the web server listens on: every LAN interface for a
    /// wildcard address, the one interface of a LAN address, none on loopback (nothing on
    /// the LAN could reach the services then, so nothing is announced there). One that
    /// cannot listen (the port taken) is one line; the services still answer whoever
    /// knows the address.
    static func discovery(_ onvif: ONVIFService, settings: Settings, httpPort: UInt16, log: Log) -> Discovery? {
        guard let listen = settings.listen, let address = try? ListenAddress(listen), !address.isLoopback else { return nil }
        // Asked again every few seconds: the interface of a LAN address, or every one,
        // may get its address (DHCP) after onair has started.
        let interfaces: @Sendable () -> [InterfaceAddress] = {
            let lan = NetworkInterfaces.ipv4().map { InterfaceAddress(address: $0.address, prefixLength: $0.prefixLength) }
            return address.isWildcard ? lan : lan.filter { SocketAddress.host($0.address) == address.host }
        }
        do {
            return try Discovery(device: onvif.device, port: settings.onvifDiscoveryPort, interfaces: interfaces, xaddrs: { interfaces, loopback in
                let addresses = interfaces.map { SocketAddress.host($0) } + (loopback ? ["127.0.0.1"] : [])
                return addresses.map { "http://\($0):\(httpPort)\(ONVIFService.devicePath)" }
            }, log: log)
        } catch {
            log(.onvifUnavailable, level: .warn, ("problem", "\(error)"), ("action", "no WS-Discovery; ONVIF answers at \(ONVIFService.devicePath)"))
            return nil
        }
    }

    /// `POST /onvif/device_service` and `/onvif/media_service`.
    static func route(_ service: ONVIFService, prefix: String) -> WebServer.BodyRoute {
        WebServer.BodyRoute(prefix: prefix, maximumBody: ONVIFService.maximumRequest, methods: ["POST"]) { request in
            guard request.path.isEmpty else { return WebServer.BodyReply(status: 404) }
            let answer = service.respond(path: prefix, body: request.body, host: request.host, port: request.port, client: request.client)
            return WebServer.BodyReply(status: UInt32(answer.status), headers: [("Content-Type", "application/soap+xml; charset=utf-8")],
                                       body: Array(answer.xml.utf8))
        }
    }
}
