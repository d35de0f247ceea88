import Foundation
import XCTest
import Basics
import TestSupport

/// `/settings` as its owner uses it: headless Chromium on a phone-sized screen fills the
/// form, a bad value is said as at start and nothing is written, a good one is written
/// back keeping the file's comments and the run starts again on it; curl logs in with
/// Digest, and no one else gets in.
final class SettingsBrowserTests: XCTestCase {
    let token = "kitchen-operator-0123"

    func testTheOwnerChangesSettingsFromAPhoneAndTheCameraTakesThem() throws {
        let out = try temporaryDirectory("settings-browser")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let config = out + "/onair.conf"
        let original = "# The kitchen camera: onair.conf on the card.\n[device]\nname = cam1  # the kitchen\n\n[video]\nfps = 30\n"
            + "quality = low\n\n[server]\ntoken = \(token)\n\n# the owner's own note\n"
        try original.write(toFile: config, atomically: true, encoding: .utf8)
        let port = try NginxOrigin.freePort()
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--config", config, "--listen", "127.0.0.1:\(port)",
                                              "--out", out + "/var", "--start", "button", "--set", "rtsp.port=off", "--set", "webrtc.port=off"])
        defer { onair.signal(SIGTERM); onair.wait() }
        XCTAssertNotNil(onair.waitForLog("event=server.listening"), onair.stderr)

        // No one but the operator: no credentials, a wrong token, a viewer's bearer.
        let refused = try HTTPClient.request(port: port, "/settings")
        XCTAssertEqual(refused.status, 401)
        XCTAssertEqual(refused.header("Cache-Control"), "no-store")
        XCTAssertEqual(try HTTPClient.request(port: port, "/settings", headers: ["Authorization": basic("operator", "wrong-wrong-wrong")]).status, 401)
        let unasked = try HTTPClient.request(port: port, "/settings", method: "POST", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                             body: Array("video.fps=5".utf8))
        XCTAssertEqual(unasked.status, 401, "a form posted without the operator's password")
        // curl answers the Digest challenge as a browser does.
        let digest = try runTool("/usr/bin/curl", ["-s", "--digest", "-u", "operator:\(token)", "-o", "/dev/null", "-w", "%{http_code}",
                                                   "http://127.0.0.1:\(port)/settings"])
        XCTAssertEqual(String(decoding: digest.stdout, as: UTF8.self), "200")

        let browser = try Chromium()
        browser.extraHeaders = ["Authorization": basic("operator", token)]
        try browser.open("about:blank")
        _ = try browser.call("Emulation.setDeviceMetricsOverride", ["width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true])
        try browser.open("http://127.0.0.1:\(port)/settings")
        XCTAssertEqual(try browser.settled("document.readyState == 'complete' && document.forms.length ? document.getElementById('device.name').value : null"), "cam1")
        let weight = try XCTUnwrap(browser.evaluate("performance.getEntriesByType('navigation')[0].transferSize") as? Int)
        let outside = try XCTUnwrap(browser.evaluate("JSON.stringify(performance.getEntriesByType('resource').map(r => r.name)"
                                                     + ".filter(n => !n.startsWith(location.origin)))") as? String)
        XCTAssertEqual(outside, "[]", "nothing is fetched from anywhere else")
        XCTAssertLessThanOrEqual(try XCTUnwrap(browser.evaluate("document.documentElement.scrollWidth") as? Int), 390, "no sideways scrolling on a phone")
        let shot = try browser.call("Page.captureScreenshot", ["format": "png"])
        let png = try XCTUnwrap(Data(base64Encoded: try XCTUnwrap(shot["data"] as? String)))
        XCTAssertEqual(png.prefix(4), Data([0x89, 0x50, 0x4E, 0x47]))
        if let keep = ProcessInfo.processInfo.environment["ONAIR_SCREENSHOTS"] { try png.write(to: URL(fileURLWithPath: keep + "/settings-390x844.png")) }
        print("settings page: \(weight) bytes over the wire, screenshot \(png.count) bytes at 390x844")

        // A bad value: said with the same words as at start, nothing written.
        let bad = try submit(browser, ["video.fps": "0", "wifi.ssid": "Home", "wifi.password": "7 chars"])
        XCTAssertTrue(bad.contains("video.fps") && bad.hasSuffix("nothing was saved"), bad)
        XCTAssertFalse(bad.contains("7 chars"))
        XCTAssertEqual(try String(contentsOfFile: config, encoding: .utf8), original)
        let typed = try XCTUnwrap(browser.evaluate("document.getElementById('wifi.ssid').value") as? String)
        XCTAssertEqual(typed, "Home", "what was typed is kept for the next try")

        let saved = try submit(browser, ["device.name": "kitchen2", "video.fps": "25", "wifi.ssid": "Home", "wifi.password": "correct horse",
                                         "wifi.country": "GB", "new.destination": "yt", "new.preset": "youtube", "new.key": "abcd-efgh-ijkl"])
        XCTAssertTrue(saved.hasPrefix("Saved."), saved)
        let text = try String(contentsOfFile: config, encoding: .utf8)
        XCTAssertEqual(text, "# The kitchen camera: onair.conf on the card.\n[device]\nname = kitchen2  # the kitchen\n\n[video]\nfps = 25\n"
                       + "quality = low\n\n[server]\ntoken = \(token)\n\n# the owner's own note\n\n[wifi]\nssid = Home\npassword = correct horse\n"
                       + "country = GB\n\n[destination.yt]\npreset = youtube\nkey = abcd-efgh-ijkl\n")
        let page = try XCTUnwrap(browser.evaluate("document.documentElement.outerHTML") as? String)
        XCTAssertFalse(page.contains("correct horse") || page.contains("abcd-efgh-ijkl") || page.contains(token), "secrets are write-only")
        XCTAssertFalse(onair.stderr.contains("correct horse") || onair.stderr.contains("abcd-efgh-ijkl"), "and never logged")

        // Nothing is being recorded: the run starts again on the saved file.
        XCTAssertNotNil(onair.waitForLog("event=settings.restart"), onair.stderr)
        let deadline = Date().addingTimeInterval(60)
        var status: [String: Any] = [:]
        while Date() < deadline {
            // Refused while the run starts again.
            if let reply = try? HTTPClient.request(port: port, "/api/status"), reply.status == 200,
               let now = try? JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any], now["device"] as? String == "kitchen2" {
                status = now
                break
            }
            usleep(200_000)
        }
        XCTAssertEqual(status["device"] as? String, "kitchen2", onair.stderr)
        XCTAssertEqual(logLines(onair.stderr, "event=source.started").last.flatMap { logValue($0, "fps") }, "25")

        // Two browsers with the same page: the second to save is told the file changed.
        let first = try version(port), second = try version(port)
        XCTAssertEqual(try post(port, ["version": first, "video.rotation": "180"]).status, 200)
        let late = try post(port, ["version": second, "video.rotation": "90"])
        XCTAssertEqual(late.status, 409)
        XCTAssertTrue(String(decoding: late.body, as: UTF8.self).contains("changed since this page was opened"))
        XCTAssertTrue(try String(contentsOfFile: config, encoding: .utf8).contains("rotation = 180\n"))
    }

    private func basic(_ user: String, _ password: String) -> String { "Basic " + Base64.encode(Array("\(user):\(password)".utf8)) }

    /// Fills the form's fields, presses Save, and returns the new page's message.
    private func submit(_ browser: Chromium, _ fields: [String: String]) throws -> String {
        let values = String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
        // Pressed after the call returns: a navigation inside it ends the call with an error.
        _ = try browser.evaluate("""
            (function(v){ for (const k in v) { document.getElementById(k).value = v[k]; } window.before = true;
              setTimeout(function(){ document.querySelector('button[type=submit]').click(); }, 0); return true; })(\(values))
            """)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            // While the page is replaced, a call may fail: asked again.
            if let message = try? browser.evaluate("!window.before && document.readyState == 'complete' && document.getElementById('message') "
                                                   + "? document.getElementById('message').textContent : null") as? String {
                return message
            }
            usleep(50_000)
        }
        throw Chromium.Failure(description: "no page came back from Save")
    }

    private func version(_ port: UInt16) throws -> String {
        let page = String(decoding: try HTTPClient.request(port: port, "/settings", headers: ["Authorization": basic("operator", token)]).body, as: UTF8.self)
        let marker = "name=\"version\" value=\""
        let start = try XCTUnwrap(page.range(of: marker))
        return String(page[start.upperBound...].prefix(64))
    }

    private func post(_ port: UInt16, _ fields: [String: String]) throws -> HTTPResponse {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._")
        let body = fields.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&")
        return try HTTPClient.request(port: port, "/settings", method: "POST",
                                      headers: ["Authorization": basic("operator", token), "Content-Type": "application/x-www-form-urlencoded"],
                                      body: Array(body.utf8))
    }
}
