import Appliance
import Basics
import Foundation
import Logging
import Network
import Server

extension FuzzTargets {
    /// The owner's file the settings target saves into (in memory: each case writes it).
    static let settingsFile = "/dev/shm/onair-fuzz-settings/onair.conf"
    static let settingsText = "# mine\n[device]\nname = cam1  # kitchen\n[wifi]\nssid = Home\npassword = \(secret)\n[server]\ntoken = \(secret)\n"
        + "[destination.yt]\npreset = youtube\nkey = \(secret)\n"

    /// `POST /settings` bodies as a browser sends them, with the file's own version: the
    /// answer never shows a secret, is one the page gives (200, 400, 409), and the file
    /// is the old one or one that parses — never half, never one onair could not start on.
    static let settings = FuzzTarget(name: "settings", seeds: [
        "video.fps=25&device.name=cam%202&wifi.ssid=Home+Net&wifi.password=&wifi.country=GB",
        "new.destination=tw&new.preset=twitch&new.key=live_123&new.enabled=true&video.rotation=180",
        "new.viewer=grandma&new.viewer.password=long+enough+pw&remove.viewer=nobody&publish.url=https%3A%2F%2Forigin%2Flive%2F",
        "wifi.password=%22%23+x%22&time.servers=pool.ntp.org+time.example&record.keep_days=7&destination.yt.enabled=false",
    ].map { Array(("version=" + SHA256.hex(Array(settingsText.utf8)) + "&" + $0).utf8) }, textual: true, prepare: {
        try? FileManager.default.createDirectory(atPath: (settingsFile as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    }) { bytes in
        _ = FileManager.default.createFile(atPath: settingsFile, contents: Data(settingsText.utf8))
        let service = SettingsService(files: [settingsFile], log: .silent()) { _ in }
        let reply = service.save(bytes, client: "127.0.0.1")
        let page = String(decoding: reply.body, as: UTF8.self)
        if page.contains(secret) || page.contains(String(secret.prefix(10))) { broken("a secret on the page (\(reply.status))") }
        if ![200, 400, 409].contains(reply.status) { broken("status \(reply.status)") }
        guard let now = FileManager.default.contents(atPath: settingsFile) else { broken("the file is gone") }
        if String(decoding: now, as: UTF8.self) != settingsText {
            do { _ = try CommandLineParser.parse(["run", "--config", settingsFile]) } catch { broken("a saved file onair cannot start on: \(error)") }
        }
    }

    /// The setup network's DNS questions (RFC 1035): an answer keeps the question's id, is
    /// a response, and is the question with at most one 16-byte record after it.
    static let dns = FuzzTarget(name: "dns", seeds: [
        dnsQuestion(["connectivitycheck", "gstatic", "com"], type: 1, edns: true),
        dnsQuestion(["captive", "apple", "com"], type: 28, edns: false),
    ], textual: false) { bytes in
        guard let reply = SetupDNS.answer(bytes, address: [192, 168, 4, 1]) else { return }
        if reply.count < 12 || reply[0] != bytes[0] || reply[1] != bytes[1] || reply[2] & 0x80 == 0 { broken("an answer that is not this question's response") }
        if reply.count > bytes.count + 16 { broken("an answer of \(reply.count) bytes to \(bytes.count)") }
    }

    /// A question as a resolver sends it (RFC 1035 §4.1.1–2; EDNS's OPT, RFC 6891, after it).
    static func dnsQuestion(_ labels: [String], type: UInt8, edns: Bool) -> [UInt8] {
        var bytes: [UInt8] = [0xBE, 0xEF, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, edns ? 1 : 0]
        for label in labels {
            bytes.append(UInt8(label.utf8.count))
            bytes.append(contentsOf: Array(label.utf8))
        }
        bytes.append(contentsOf: [0, 0, type, 0, 1] as [UInt8])
        if edns { bytes.append(contentsOf: [0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0] as [UInt8]) }
        return bytes
    }
}
