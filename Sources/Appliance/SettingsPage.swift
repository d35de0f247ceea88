import Destinations

/// `/settings`: what an owner sets from a phone — the board's name, its Wi-Fi network,
/// the picture, where it goes live, the recording, viewers, the operator's token and
/// time servers — as one plain HTML form (no script, nothing from elsewhere), each field
/// named by its onair.conf key. A field shows the file's value (empty: the default, shown
/// as its placeholder); a secret's field is always empty and left as it is unless typed.
enum SettingsPage {
    enum Kind: Equatable {
        case text(placeholder: String)
        case number(placeholder: String)
        /// Never shown back: empty keeps the file's value.
        case secret
        case choice([String])
    }

    struct Field {
        var key: String
        var label: String
        var kind: Kind
        var help: String = ""
    }

    struct Group {
        var title: String
        var fields: [Field]
    }

    /// The fields of the form; destinations and viewers are added from the file.
    static let groups: [Group] = [
        Group(title: "This camera", fields: [
            Field(key: "device.name", label: "Name", kind: .text(placeholder: "auto"),
                  help: "how it is found: NAME.local on the network, and its folder where it publishes"),
        ]),
        Group(title: "Wi-Fi", fields: [
            Field(key: "wifi.ssid", label: "Network", kind: .text(placeholder: "none")),
            Field(key: "wifi.password", label: "Password", kind: .secret),
            Field(key: "wifi.security", label: "Security", kind: .choice(["", "auto", "wpa2", "wpa3", "open"])),
            Field(key: "wifi.hidden", label: "Hidden (it does not say its name)", kind: .choice(["", "true", "false"])),
            Field(key: "wifi.country", label: "Country", kind: .text(placeholder: "GB, US, DE…"), help: "two letters: the channels allowed there"),
        ]),
        Group(title: "Fixed address (instead of DHCP)", fields: [
            Field(key: "network.address", label: "Address", kind: .text(placeholder: "dhcp"), help: "with its prefix length: 192.168.1.50/24"),
            Field(key: "network.gateway", label: "Gateway", kind: .text(placeholder: "none")),
            Field(key: "network.dns", label: "DNS servers", kind: .text(placeholder: "none")),
            Field(key: "network.link", label: "On", kind: .choice(["", "auto", "wired", "wifi"]), help: "auto: Wi-Fi when a network is set, else the cable"),
        ]),
        Group(title: "Picture", fields: [
            Field(key: "video.quality", label: "Quality", kind: .choice(["", "auto", "low", "medium", "high"])),
            Field(key: "video.fps", label: "Frames per second", kind: .number(placeholder: "30")),
            Field(key: "video.rotation", label: "Rotation", kind: .choice(["", "0", "90", "180", "270"])),
        ]),
        Group(title: "Where it goes live", fields: [
            Field(key: "publish.url", label: "Publish to (HTTP or S3)", kind: .text(placeholder: "off")),
        ]),
        Group(title: "Recording", fields: [
            Field(key: "record.enabled", label: "Keep a recording", kind: .choice(["", "true", "false"])),
            Field(key: "record.keep_days", label: "Keep for (days)", kind: .text(placeholder: "off"), help: "off: until the card needs room"),
        ]),
        Group(title: "Operator and time", fields: [
            Field(key: "server.token", label: "Operator token", kind: .secret,
                  help: "at least 16 characters: this page's password (name operator) and the API's bearer token"),
            Field(key: "time.servers", label: "Time servers", kind: .text(placeholder: "the distribution's")),
        ]),
    ]

    /// A destination's fields under `prefix`: `destination.NAME.` for an existing one,
    /// `new.` for the one the form offers (its name typed into `new.destination`).
    static func destinationFields(_ prefix: String) -> [Field] {
        [
            Field(key: prefix + "preset", label: "Platform", kind: .choice([""] + Platform.all.map(\.name))),
            Field(key: prefix + "url", label: "Or a URL (rtmp://, rtmps://, srt://)", kind: .text(placeholder: "the platform's")),
            Field(key: prefix + "key", label: "Stream key", kind: .secret),
            Field(key: prefix + "enabled", label: "On", kind: .choice(["", "true", "false"])),
        ]
    }

    /// Another Wi-Fi network's fields under `prefix`: `wifi.NAME.` for one of the file's
    /// `[wifi.NAME]`, `new.wifi.` for the one the form offers (its name in `new.wifi`).
    static func wifiFields(_ prefix: String) -> [Field] {
        [
            Field(key: prefix + "ssid", label: "Network", kind: .text(placeholder: "its name")),
            Field(key: prefix + "password", label: "Password", kind: .secret),
            Field(key: prefix + "security", label: "Security", kind: .choice(["", "auto", "wpa2", "wpa3", "open"])),
            Field(key: prefix + "hidden", label: "Hidden (it does not say its name)", kind: .choice(["", "true", "false"])),
            Field(key: prefix + "priority", label: "Priority", kind: .number(placeholder: "0"), help: "the higher, the sooner it is tried"),
        ]
    }

    /// The form's names that are not keys.
    static let newPrefix = "new.", newDestination = "new.destination", newViewer = "new.viewer", newViewerPassword = "new.viewer.password",
               removeViewer = "remove.viewer", versionField = "version", newWiFi = "new.wifi", newWiFiPrefix = "new.wifi."

    /// Which page: the owner's `/settings`, or the setup network's `/setup` (the few
    /// fields a board needs to be reached and go live, the networks the radio sees, and
    /// the operator password when there is none yet).
    enum Form: Equatable {
        case settings
        case setup(askOperator: Bool)

        var path: String { self == .settings ? "/settings" : "/setup" }
        var groups: [Group] {
            switch self {
            case .settings: return SettingsPage.groups
            case .setup(let askOperator):
                return [
                    Group(title: "Your Wi-Fi", fields: [
                        Field(key: "wifi.ssid", label: "Network", kind: .text(placeholder: "pick or type its name")),
                        Field(key: "wifi.password", label: "Password", kind: .secret),
                        Field(key: "wifi.country", label: "Country", kind: .text(placeholder: "GB, US, DE…"), help: "two letters: the channels allowed there"),
                    ]),
                    Group(title: "This camera", fields: [
                        Field(key: "device.name", label: "Name", kind: .text(placeholder: "auto"), help: "then find it at http://NAME.local:8080"),
                    ] + (askOperator ? [Field(key: "server.token", label: "Operator password", kind: .secret,
                                              help: "at least 16 characters: it guards /settings (name operator) and this network from now on")] : [])),
                    Group(title: "Where it goes live", fields: [
                        Field(key: "publish.url", label: "Publish to (HTTP or S3)", kind: .text(placeholder: "off")),
                    ]),
                ]
            }
        }
    }

    /// The whole page: `values` are the file's (secrets only as whether they are set),
    /// `message` what the last save did, `version` the file's digest the form was made from,
    /// `seen` the networks for the Wi-Fi name's list.
    static func html(_ kind: Form = .settings, device: String?, values: [String: String], destinations: [String], viewers: [String],
                     wifiNetworks: [String] = [], seen: [String] = [], version: String, message: (text: String, failed: Bool)?) -> String {
        var sections = kind.groups
        if kind == .settings {
            // The file's other networks just after its own.
            let after = (sections.firstIndex { $0.title == "Wi-Fi" } ?? sections.count - 1) + 1
            sections.insert(contentsOf: wifiNetworks.sorted().map { Group(title: "Wi-Fi: \($0)", fields: wifiFields("wifi.\($0).")) }, at: after)
            for name in destinations.sorted() {
                sections.append(Group(title: "Going live: \(name)", fields: destinationFields("destination.\(name).")))
            }
        }
        let fieldsets = sections.map { group in
            "<fieldset><legend>\(e(group.title))</legend>" + group.fields.map { field(values, $0) }.joined() + "</fieldset>"
        }.joined()
        let viewerRows = viewers.map { "<label class=\"row\"><input type=\"checkbox\" name=\"\(removeViewer)\" value=\"\(e($0))\"> remove \(e($0))</label>" }.joined()
        let notice = message.map { "<p id=\"message\" class=\"\($0.failed ? "bad" : "good")\" role=\"status\">\(e($0.text))</p>" } ?? ""
        let name = e(device.map { "onair · " + $0 } ?? "onair")
        let newDestinationSet = """
            <fieldset><legend>Go live somewhere new</legend><label for="\(newDestination)">Name (a-z, 0-9, - or _)</label>
            <input id="\(newDestination)" name="\(newDestination)" maxlength="32" placeholder="youtube"><small>then its platform and stream key</small>
            \(destinationFields(newPrefix).map { field([:], $0) }.joined())</fieldset>
            """
        let newWiFiSet = """
            <fieldset><legend>Another Wi-Fi network</legend><label for="\(newWiFi)">Name (a-z, 0-9, - or _)</label>
            <input id="\(newWiFi)" name="\(newWiFi)" maxlength="32" placeholder="office"><small>a network tried when the first is not in range</small>
            \(wifiFields(newWiFiPrefix).map { field([:], $0) }.joined())</fieldset>
            """
        let viewerSet = """
            <fieldset><legend>Who may watch</legend>\(viewerRows.isEmpty ? "<small>anyone who can reach the camera</small>" : viewerRows)
            <label for="\(newViewer)">Add a viewer</label><input id="\(newViewer)" name="\(newViewer)" maxlength="32" placeholder="name">
            <label for="\(newViewerPassword)">Their password</label><input id="\(newViewerPassword)" type="password" name="\(newViewerPassword)" maxlength="128" autocomplete="new-password">
            </fieldset>
            """
        // The networks the radio sees, offered as the Wi-Fi name's choices.
        let list = seen.isEmpty ? "" : "<datalist id=\"seen\">" + seen.map { "<option value=\"\(e($0))\">" }.joined() + "</datalist>"
        let intro = kind == .settings ? "" : "<p>Set up the camera: the Wi-Fi it joins, its name, and where it goes live. "
            + "On Save it joins that network and this one closes.</p>"
        return """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><title>\(name) \(kind == .settings ? "settings" : "setup")</title>
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <style>body{font:16px system-ui,sans-serif;margin:0 auto;padding:1em;max-width:36em;background:#111;color:#eee}
        fieldset{border:1px solid #444;border-radius:8px;margin:0 0 1em}legend{color:#aaa}label{display:block;margin:.6em 0 .2em}
        input,select{box-sizing:border-box;width:100%;font:inherit;padding:.5em;border-radius:6px;border:1px solid #555;background:#222;color:#eee}
        .row input{width:auto;margin-right:.5em}small{color:#999;display:block}button{font:inherit;padding:.7em 2em;border-radius:6px;border:0;background:#c22;color:#fff}
        .good{background:#163;padding:.7em}.bad{background:#622;padding:.7em}a{color:#8cf}</style>
        </head><body><h1>\(name)</h1>\(notice)\(intro)
        <form method="post" action="\(kind.path)" autocomplete="off"><input type="hidden" name="\(versionField)" value="\(e(version))">
        \(fieldsets)\(kind == .settings ? newWiFiSet + newDestinationSet + viewerSet : "")<button type="submit">Save</button></form>\(list)
        \(kind == .settings ? "<p><a href=\"/\">the live picture</a> · <a href=\"/status\">status</a></p>" : "")</body></html>

        """
    }

    private static func field(_ values: [String: String], _ field: Field) -> String {
        let id = e(field.key)
        let current = values[field.key] ?? ""
        let control: String
        switch field.kind {
        case .text(let placeholder):
            let list = field.key.hasPrefix("wifi.") && field.key.hasSuffix(".ssid") || field.key == newWiFiPrefix + "ssid" ? " list=\"seen\"" : ""
            control = "<input id=\"\(id)\" name=\"\(id)\"\(list) value=\"\(e(current))\" placeholder=\"\(e(placeholder))\" maxlength=\"512\">"
        case .number(let placeholder):
            control = "<input id=\"\(id)\" name=\"\(id)\" inputmode=\"numeric\" value=\"\(e(current))\" placeholder=\"\(e(placeholder))\" maxlength=\"8\">"
        case .secret:
            // The value itself never leaves the board: only whether there is one.
            control = "<input id=\"\(id)\" name=\"\(id)\" type=\"password\" maxlength=\"512\" autocomplete=\"new-password\" placeholder=\""
                + (current.isEmpty ? "not set" : "set: type to change") + "\">"
        case .choice(let choices):
            // A value the file has that the list lacks (`yes` for true) stays as it is.
            let options = choices.contains(current) ? choices : choices + [current]
            control = "<select id=\"\(id)\" name=\"\(id)\">" + options.map { option in
                "<option value=\"\(e(option))\"\(option == current ? " selected" : "")>\(option.isEmpty ? "default" : e(option))</option>"
            }.joined() + "</select>"
        }
        return "<label for=\"\(id)\">\(e(field.label))</label>\(control)" + (field.help.isEmpty ? "" : "<small>\(e(field.help))</small>")
    }

    private static func e(_ text: String) -> String { StatusPage.escape(text) }
}
