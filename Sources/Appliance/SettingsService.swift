import Access
import Basics
import Destinations
import Files
import Logging
import Network
import Server
import System
import Threading

/// `GET /settings` and `POST /settings`, for the operator alone (the server's operator
/// door: `operator` and server.token): the owner's onair.conf shown as a form and written
/// back — checked by the same rules and messages as at start (with the board's own files
/// before it), edited line by line so its comments, order and unknown lines stay
/// (`ConfigEdit`), and replaced whole (`AtomicFile`: a power cut leaves the old file or
/// the new). A form made from an older file (another browser saved meanwhile, or the card
/// was edited) is refused and shown again as the file is now. A saved change takes
/// effect when the pipeline restarts, which `restart` asks for at the next idle moment.
public final class SettingsService: Sendable {
    /// The owner's file (the last `--config`), and those before it.
    let file: String
    let baseFiles: [String]
    private let restart: @Sendable (_ keys: [String]) -> Void
    private let log: Log
    /// One save at a time: the second of two at once finds the file changed.
    private let saving = Locked(())
    private let kind: SettingsPage.Form
    private let setup: Setup?

    /// The setup network's side of `/setup`: whether it is open, the networks the radio
    /// sees, and what to do once settings are saved (close it).
    struct Setup: Sendable {
        var isOpen: @Sendable () -> Bool
        var seen: @Sendable () -> [String]
    }

    static let path = "/settings", setupPath = "/setup"
    /// A form of every field filled to its bound is some 10 KB.
    static let maximumBody = 64 << 10

    public convenience init(files: [String], log: Log, restart: @escaping @Sendable (_ keys: [String]) -> Void) {
        self.init(files: files, kind: .settings, setup: nil, log: log, restart: restart)
    }

    init(files: [String], kind: SettingsPage.Form, setup: Setup?, log: Log, restart: @escaping @Sendable (_ keys: [String]) -> Void) {
        file = files.last ?? ""
        baseFiles = Array(files.dropLast())
        self.kind = kind
        self.setup = setup
        self.log = log
        self.restart = restart
    }

    /// `/settings` is the operator's alone; so is `/setup` once there is an operator. A
    /// board never set up has none yet: its `/setup` answers only on the open setup
    /// network, to the phone that joined it (and asks for an operator password first).
    var route: WebServer.BodyRoute {
        let askOperator = kind == .setup(askOperator: true)
        return WebServer.BodyRoute(prefix: kind.path, maximumBody: Self.maximumBody, methods: ["GET", "POST"], operatorOnly: !askOperator) { [self] request in
            guard request.path.isEmpty else { return WebServer.BodyReply(status: 404, body: Array("not found\n".utf8)) }
            if let setup, !setup.isOpen() || (askOperator && !Self.onSetupNetwork(request.client)) {
                return WebServer.BodyReply(status: 404, headers: [("Content-Type", "text/plain")],
                                           body: Array("the setup page is on the camera's own setup network, while it is open\n".utf8))
            }
            return request.method == "POST" ? save(request.body, client: request.client) : page()
        }
    }

    /// A client of the setup network (192.168.4.0/24).
    static func onSetupNetwork(_ client: String) -> Bool {
        guard let address = StaticAddress.ipv4(client) else { return false }
        return InterfaceAddress(address: SetupAccessPoint.address, prefixLength: 24).contains(address) && address != SetupAccessPoint.address
    }

    /// What the file holds now, or why it cannot be read or parsed.
    private struct Current {
        var text: String
        var version: String
        var entries: [ConfigFile.Entry]
    }

    private func current() -> Result<Current, SettingsFailure> {
        let bytes: [UInt8]
        if FileSystem.exists(file) {
            do { bytes = try CommandLineParser.readWholeFile(file) } catch { return .failure(.init(500, "\(error)")) }
        } else {
            bytes = []
        }
        do {
            let entries = try ConfigFile.parse(bytes, file: file)
            return .success(Current(text: String(decoding: bytes, as: UTF8.self), version: SHA256.hex(bytes), entries: entries))
        } catch {
            // The board runs on the settings it started with; the owner mends the line.
            return .failure(.init(409, "\(error): the camera keeps its last good settings; mend that line on the card, then reload"))
        }
    }

    public func page(message: (text: String, failed: Bool)? = nil, status: UInt32 = 200, typed: [String: String] = [:]) -> WebServer.BodyReply {
        switch current() {
        case .failure(let failure):
            return html(failure.status, SettingsPage.html(kind, device: nil, values: [:], destinations: [], viewers: [], version: "",
                                                          message: (failure.message, true)))
        case .success(let now):
            var values: [String: String] = [:]
            var destinations: Set<String> = [], wifiNetworks: Set<String> = []
            var viewers: [String] = []
            for entry in now.entries {
                if entry.key == "access.viewer" || entry.key == "access.device" {
                    viewers += entry.value.split(separator: " ").first.map { [String($0)] } ?? []
                    continue
                }
                // A secret is said to be set, never shown.
                values[entry.key] = ConfigFile.isSecret(entry.key) ? (entry.value.isEmpty ? "" : "set") : entry.value
                let section = ConfigEdit.split(entry.key).section
                if let name = ConfigFile.destinationName(section: section) { destinations.insert(name) }
                if let name = ConfigFile.wifiName(section: section) { wifiNetworks.insert(name) }
            }
            values.merge(typed) { $1 }
            return html(status, SettingsPage.html(kind, device: values["device.name"], values: values, destinations: destinations.sorted(),
                                                  viewers: viewers, wifiNetworks: wifiNetworks.sorted(), seen: setup?.seen() ?? [],
                                                  version: now.version, message: message))
        }
    }

    private func html(_ status: UInt32, _ text: String) -> WebServer.BodyReply {
        WebServer.BodyReply(status: status, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")],
                            body: Array(text.utf8))
    }

    public func save(_ body: [UInt8], client: String) -> WebServer.BodyReply {
        guard let pairs = FormBody.decode(body) else {
            return page(message: ("the form could not be read (not a form a browser sends): nothing was saved", true), status: 400)
        }
        var form: [String: String] = [:]
        var removed: [String] = []
        for (name, value) in pairs {
            if name == SettingsPage.removeViewer { removed.append(value) } else { form[name] = value }
        }
        // What was typed comes back on a refusal, secrets never.
        let typed = form.filter { !ConfigFile.isSecret($0.key) && !$0.key.hasPrefix(SettingsPage.newPrefix) && $0.key != SettingsPage.versionField }
        return saving.withLock { _ in
            guard case .success(let now) = current() else { return page(status: 409) }
            guard form[SettingsPage.versionField] == now.version else {
                return page(message: ("onair.conf changed since this page was opened (another browser, or the card): nothing was saved; "
                                      + "this is the file as it is now", true), status: 409)
            }
            let text: String, keys: [String]
            do { (text, keys) = try edited(now, form: form, removedViewers: removed) } catch {
                return page(message: ("\(error): nothing was saved", true), status: 400, typed: typed)
            }
            guard !keys.isEmpty else { return page(message: ("nothing changed", false)) }
            do {
                let base = try baseFiles.map { ($0, try CommandLineParser.readWholeFile($0)) }
                _ = try CommandLineParser.settings(files: base + [(file, Array(text.utf8))])
            } catch {
                return page(message: ("\(Self.formProblem(error)): nothing was saved", true), status: 400, typed: typed)
            }
            do { try BootPartition.writing(file) { try AtomicFile.write(Array(text.utf8), to: file, permissions: 0o600) } } catch {
                return page(message: (Self.writeProblem(error, file: file), true), status: 507, typed: typed)
            }
            // Which keys, never their values.
            log(.settingsSaved, ("file", file), ("keys", keys.joined(separator: ",")), ("client", client))
            restart(keys)
            if let setup {
                let ssid = (try? ConfigFile.parse(Array(text.utf8), file: file))?.last { $0.key == "wifi.ssid" }?.value
                return page(message: ("Saved. The camera now joins " + (ssid.map { "'\($0)'" } ?? "its network")
                                      + " and closes this one; on that network find it at http://NAME.local:8080 (its address is on the console).", false))
            }
            return page(message: ("Saved. Wi-Fi, the name and the time servers take it now; the camera restarts to take the rest "
                                  + "as soon as nothing is being recorded.", false))
        }
    }

    /// The file's text with the form's changes, and the keys they touch. Only what differs
    /// from the file is written: an emptied field takes its key out (its default again),
    /// an empty secret keeps the file's.
    private func edited(_ now: Current, form: [String: String], removedViewers: [String]) throws -> (String, [String]) {
        var edit = ConfigEdit(now.text)
        var values: [String: String] = [:]
        for entry in now.entries { values[entry.key] = entry.value }
        var changed: [String] = []
        func apply(_ key: String, _ value: String?, secret: Bool) {
            guard let value else { return }
            if secret && value.isEmpty { return }
            guard values[key] != value, !(value.isEmpty && values[key] == nil) else { return }
            edit.set(key, value.isEmpty ? nil : value)
            changed.append(key)
        }
        let sections = now.entries.map { ConfigEdit.split($0.key).section }
        let destinations = Set(sections.compactMap { ConfigFile.destinationName(section: $0) }), networks = Set(sections.compactMap { ConfigFile.wifiName(section: $0) })
        let named = destinations.sorted().flatMap { SettingsPage.destinationFields("destination.\($0).") }
            + networks.sorted().flatMap { SettingsPage.wifiFields("wifi.\($0).") }
        let fields = kind.groups.flatMap(\.fields) + (kind == .settings ? named : [])
        for field in fields { apply(field.key, form[field.key], secret: field.kind == .secret) }
        // A board set up from its setup network gets an operator from then on.
        if kind == .setup(askOperator: true), values["server.token"] == nil, (form["server.token"] ?? "").isEmpty {
            throw SettingsFailure(400, "choose an operator password (at least 16 characters): it guards this camera's settings from now on")
        }
        // A new destination or Wi-Fi network: its name typed, its fields under `prefix`,
        // written as `section.NAME.KEY`.
        func addNamed(_ name: String?, section: String, what: String, existing: Set<String>, prefix: String, fields: [SettingsPage.Field]) throws {
            guard let name, !name.isEmpty else { return }
            guard ConfigFile.name(section: section + "." + name, of: section + ".") != nil else {
                throw SettingsFailure(400, "a \(what)'s name is 1 to 32 of a-z, 0-9, '-' and '_', got \(quoted(String(name.prefix(40))))")
            }
            guard !existing.contains(name) else { throw SettingsFailure(400, "there is a \(what) \(name) already") }
            for field in fields {
                let key = "\(section).\(name)." + field.key.dropFirst(prefix.count)
                if let value = form[field.key], !value.isEmpty { edit.set(key, value); changed.append(key) }
            }
        }
        try addNamed(form[SettingsPage.newDestination], section: "destination", what: "destination", existing: destinations,
                     prefix: SettingsPage.newPrefix, fields: SettingsPage.destinationFields(SettingsPage.newPrefix))
        if kind == .settings {
            try addNamed(form[SettingsPage.newWiFi], section: "wifi", what: "Wi-Fi network", existing: networks,
                         prefix: SettingsPage.newWiFiPrefix, fields: SettingsPage.wifiFields(SettingsPage.newWiFiPrefix))
        }
        var access = try AccessEdit(edit.text, file: file)
        for user in removedViewers where try access.set(user, line: nil) { changed.append("access") }
        if let user = form[SettingsPage.newViewer], !user.isEmpty {
            guard AccessList.validName(user) else {
                throw SettingsFailure(400, "a viewer's name is 1 to 32 letters, digits, '.', '_' or '-', got \(quoted(String(user.prefix(40))))")
            }
            let password = form[SettingsPage.newViewerPassword] ?? ""
            if let problem = Passwd.problem(password) { throw SettingsFailure(400, "the viewer's password: \(problem)") }
            _ = try access.set(user, line: "viewer = " + AccessList.viewerValue(name: user, password: password, realm: access.realm))
            changed.append("access")
        }
        return (access.text, Array(Set(changed)).sorted())
    }

    /// A value's problem as the form shows it: by the field's label and key, with the
    /// same words as at start; the line it would have had in the file means nothing here.
    static func formProblem(_ error: Error) -> String {
        guard case ConfigError.at(_, let key?, let problem) = error else { return "\(error)" }
        let label = (SettingsPage.groups.flatMap(\.fields) + SettingsPage.destinationFields("destination.")).first {
            $0.key == key || (key.hasPrefix("destination.") && key.hasSuffix("." + $0.key.dropFirst("destination.".count)))
        }?.label
        return (label.map { "\($0) (\(key))" } ?? key) + ": \(problem)"
    }

    /// A write that failed, in the owner's words.
    static func writeProblem(_ error: Error, file: String) -> String {
        switch (error as? FileError)?.code {
        case .readOnlyFileSystem?: return "the card is read-only (\(file)): nothing was saved"
        case .noSpace?: return "the card is full (\(file)): nothing was saved"
        default: return "\(file) cannot be written (\(error)): nothing was saved"
        }
    }
}

struct SettingsFailure: Error, CustomStringConvertible {
    var status: UInt32
    var message: String
    init(_ status: UInt32, _ message: String) { (self.status, self.message) = (status, message) }
    var description: String { message }
}

extension Event {
    /// The settings page wrote onair.conf: which keys (never their values).
    static let settingsSaved = Event("settings.saved", console: true)
    /// The pipeline restarts to take saved settings.
    static let settingsRestart = Event("settings.restart", console: true)
}
