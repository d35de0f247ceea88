import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A real onair as NVRs and hubs find and adopt it, through PyPI's clients (WSDiscovery,
/// onvif-zeep; `make test` installs them in .build/onvif). Discovery multicasts on the
/// LAN, so the board runs in a network namespace of the test's own, with a veth pair for
/// its LAN: nothing leaves this machine.
final class ONVIFClientTests: XCTestCase {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = package.appendingPathComponent(".build/onvif/bin/python3").path
    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Clients/onvif_client.py").path

    /// onair in a namespace with a LAN (10.77.0.1 and .2 on a veth pair), `steps` run
    /// beside it; each step's output is one line, `tag {json}`.
    func onLAN(_ name: String, settings: [String] = [], arguments: String = "", listen: String = "0.0.0.0:8080", setup: String = "",
               steps: [(tag: String, command: String)]) throws -> [String: [String: Any]] {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            throw XCTSkip("\(Self.python) is missing: run the tests with 'make test'")
        }
        let out = try temporaryDirectory(name)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: out) }
        let sets = (["video.quality=low", "webrtc.port=0", "rtsp.port=8554"] + settings).map { "--set '\($0)'" }.joined(separator: " ")
        let script = """
            set -e
            ip link set lo up
            ip link add lan0 type veth peer name lan1
            ip addr add 10.77.0.1/24 dev lan0; ip addr add 10.77.0.2/24 dev lan1
            ip link set lan0 up; ip link set lan1 up
            \(setup)
            '\(onairBinary())' run --source synthetic --out '\(out)' --listen \(listen) \(sets) \(arguments) 2> '\(out)/onair.log' &
            onair=$!
            for i in $(seq 150); do grep -q event=segment.stored '\(out)/onair.log' && grep -q event=onvif.discovery '\(out)/onair.log' && break; sleep 0.1; done
            \(steps.map { "printf '%s ' '\($0.tag)'; \($0.command) || true" }.joined(separator: "\n"))
            kill $onair; wait $onair || true
            cat '\(out)/onair.log' >&2
            """
        let result = try runTool("/usr/bin/unshare", ["--net", "/bin/sh", "-c", script], seconds: 180)
        var answers: [String: [String: Any]] = [:]
        for line in String(decoding: result.stdout, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let json = try? JSONSerialization.jsonObject(with: Data(parts[1].utf8)) as? [String: Any] else { continue }
            answers[String(parts[0])] = json
        }
        XCTAssertEqual(Set(answers.keys), Set(steps.map(\.tag)), String(decoding: result.stdout, as: UTF8.self) + result.stderr)
        return answers
    }

    func client(_ arguments: String) -> String { "'\(Self.python)' '\(Self.client)' \(arguments)" }

    /// A multicast probe on the LAN and a directed one both find the board; onvif-zeep
    /// reads its device, profile and URIs; ffprobe plays the stream URI it was given.
    func testABoardIsFoundOnItsLANAndAdoptedByAnONVIFClient() throws {
        let answers = try onLAN("onvif", settings: ["device.name=porch"], steps: [
            ("multicast", client("discover-multicast")),
            ("directed", client("discover 10.77.0.1 3702")),
            ("camera", client("camera 10.77.0.1 8080 anyone anything")),
            ("ffprobe", "printf '{\"streams\": \"%s\"}\\n' \"$(ffprobe -v error -rtsp_transport tcp -show_entries stream=codec_name -of csv=p=0 "
                + "rtsp://10.77.0.1:8554/live | sort | tr '\\n' ' ')\""),
        ])
        for probe in ["multicast", "directed"] {
            let found = try XCTUnwrap(answers[probe]?["services"] as? [[String: Any]], "\(answers)")
            let board = try XCTUnwrap(found.first { ($0["scopes"] as? [String] ?? []).contains("onvif://www.onvif.org/name/porch") }, "\(probe): \(found)")
            let xaddrs = board["xaddrs"] as? [String] ?? []
            XCTAssertTrue(xaddrs.contains("http://10.77.0.1:8080/onvif/device_service"), "\(probe): \(xaddrs)")
            XCTAssertFalse(xaddrs.contains { $0.contains("127.0.0.1") }, "a LAN probe is told LAN addresses")
            XCTAssertTrue((board["epr"] as? String ?? "").hasPrefix("urn:uuid:"), "\(board)")
            XCTAssertTrue((board["scopes"] as? [String] ?? []).contains("onvif://www.onvif.org/Profile/Streaming"))
        }
        let camera = try XCTUnwrap(answers["camera"])
        XCTAssertNil(camera["error"], "\(camera)")
        XCTAssertEqual(camera["manufacturer"] as? String, "onair")
        XCTAssertEqual(camera["clock"] as? String, "Manual", "this machine's clock is not synchronised, and the board says so")
        XCTAssertEqual(camera["profiles"] as? [String], ["live"])
        XCTAssertEqual(camera["encoding"] as? String, "H264")
        XCTAssertEqual(camera["stream"] as? String, "rtsp://10.77.0.1:8554/live")
        XCTAssertEqual(camera["snapshot"] as? String, "http://10.77.0.1:8080/api/snapshot.jpg")
        XCTAssertEqual((camera["jpeg"] as? [String: Any])?["start"] as? String, "ffd8ff", "the snapshot is a JPEG")
        XCTAssertEqual(answers["ffprobe"]?["streams"] as? String, "aac h264 ")
    }

    func ffprobe(_ credentials: String) -> String {
        "printf '{\"streams\": \"%s\"}\\n' \"$(ffprobe -v error -rtsp_transport tcp -show_entries stream=codec_name -of csv=p=0 "
            + "rtsp://\(credentials)10.77.0.1:8554/live | sort | tr '\\n' ' ')\""
    }

    /// With users in `[access]` (made by `onair passwd`): an NVR with a device account is
    /// adopted with PasswordDigest, as onvif-zeep (and Home Assistant's fork of it) send
    /// by default, gets the snapshot with HTTP Digest and plays the stream with RTSP
    /// Digest; a wrong secret is refused; a viewer is taken with PasswordText, not with
    /// PasswordDigest (its password is not kept). Discovery still finds the board.
    /// Issue 44: WS-Discovery is link-local. The board listens on lan0 (10.77.0.1/24)
    /// alone: a probe from its link is answered; one from an address outside that subnet
    /// (a spoofed source the answer would be reflected to) is not, nor is one that comes in
    /// on another interface (lan2, 10.66.0.1), where onair does not listen.
    func testDiscoveryAnswersOnlyTheLinkItListensOn() throws {
        let answers = try onLAN("onvif-scope", listen: "10.77.0.1:8080", setup: """
            ip addr add 10.99.0.2/24 dev lan1
            ip link add lan2 type veth peer name lan3
            ip addr add 10.66.0.1/24 dev lan2; ip addr add 10.66.0.2/24 dev lan3
            ip link set lan2 up; ip link set lan3 up
            """, steps: [
                ("link", client("discover 10.77.0.1 3702 10.77.0.2")),
                ("elsewhere", client("discover 10.77.0.1 3702 10.99.0.2")),
                ("unlistened", client("discover 10.66.0.1 3702 10.66.0.2")),
            ])
        XCTAssertEqual((answers["link"]?["services"] as? [Any])?.count, 1, "\(answers)")
        XCTAssertNotNil(answers["elsewhere"]?["error"], "a source outside the link is not answered: \(answers)")
        XCTAssertNotNil(answers["unlistened"]?["error"], "an interface onair does not listen on is not answered: \(answers)")
    }

    func testAnNVRIsAdoptedWithItsPasswordAndRefusedWithAWrongOne() throws {
        let scratch = try temporaryDirectory("onvif-access")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (config, secret) = try accessConfig(scratch)
        let answers = try onLAN("onvif-access", arguments: "--config '\(config)'", steps: [
            ("directed", client("discover 10.77.0.1 3702")),
            ("nvr", client("camera 10.77.0.1 8080 nvr \(secret)")),
            ("wrong", client("camera 10.77.0.1 8080 nvr not-the-secret-at-all")),
            ("viewer", client("camera 10.77.0.1 8080 alice 'correct horse' text")),
            ("viewer-digest", client("camera 10.77.0.1 8080 alice 'correct horse'")),
            ("ffprobe", ffprobe("nvr:\(secret)@")),
            ("anonymous", ffprobe("")),
        ])
        XCTAssertEqual((answers["directed"]?["services"] as? [Any])?.count, 1, "discovery needs no user")
        for tag in ["nvr", "viewer"] {
            let camera = try XCTUnwrap(answers[tag])
            XCTAssertNil(camera["error"], "\(tag): \(camera)")
            XCTAssertEqual(camera["stream"] as? String, "rtsp://10.77.0.1:8554/live", tag)
            let jpeg = camera["jpeg"] as? [String: Any]
            XCTAssertEqual(jpeg?["status"] as? Int, 200, tag)
            XCTAssertEqual(jpeg?["start"] as? String, "ffd8ff", tag)
        }
        for (tag, reason) in [("wrong", "a wrong password for nvr"), ("viewer-digest", "onair passwd --device")] {
            XCTAssertTrue((answers[tag]?["error"] as? String ?? "").contains(reason), "\(tag): \(answers[tag] ?? [:])")
        }
        XCTAssertEqual(answers["ffprobe"]?["streams"] as? String, "aac h264 ")
        XCTAssertEqual(answers["anonymous"]?["streams"] as? String, "", "RTSP asks for a user")
    }
}
