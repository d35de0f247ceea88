import Basics
import Foundation
import Access
import Logging
import Media
import System
import Threading
import TestSupport
import XCTest
@testable import ONVIF

final class XMLReaderTests: XCTestCase {
    func testElementsNamespacesAttributesAndText() throws {
        let root = try XMLReader.parse(Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment -->
            <s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns="urn:default">
              <s:Body><Op a='1' b="x &amp; y">text &lt;here&gt; &#65;&#x42;<![CDATA[<raw>]]></Op><Empty/></s:Body>
            </s:Envelope>
            """.utf8))
        XCTAssertEqual(root.name, "Envelope")
        XCTAssertEqual(root.namespace, "http://www.w3.org/2003/05/soap-envelope")
        let op = try XCTUnwrap(root.find("Body", "Op"))
        XCTAssertEqual(op.namespace, "urn:default")
        XCTAssertEqual(op.attributes, ["a": "1", "b": "x & y"])
        XCTAssertEqual(op.text, "text <here> AB<raw>")
        XCTAssertEqual(root.find("Body", "Empty")?.children, [])
    }

    /// No DTD is processed: a document type, and so every entity declaration — the billion
    /// laughs, an external entity — is refused before anything is expanded.
    func testDTDsAndEntitiesAreRefused() {
        let bomb = """
            <?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
            <lolz>&lol2;</lolz>
            """
        XCTAssertThrowsError(try XMLReader.parse(Array(bomb.utf8))) { XCTAssertEqual($0 as? XMLError, .documentType) }
        let external = "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>"
        XCTAssertThrowsError(try XMLReader.parse(Array(external.utf8))) { XCTAssertEqual($0 as? XMLError, .documentType) }
        XCTAssertThrowsError(try XMLReader.parse(Array("<x>&e;</x>".utf8))) { XCTAssertEqual($0 as? XMLError, .entity("e")) }
        XCTAssertThrowsError(try XMLReader.parse(Array("<x>&#0;</x>".utf8)))
        XCTAssertThrowsError(try XMLReader.parse(Array("<x>&#x110000;</x>".utf8)))
    }

    func testSizeDepthAndCountAreBounded() {
        XCTAssertThrowsError(try XMLReader.parse([UInt8](repeating: 0x20, count: XMLReader.byteLimit + 1))) {
            XCTAssertEqual($0 as? XMLError, .tooLarge(XMLReader.byteLimit + 1))
        }
        let deep = String(repeating: "<a>", count: 40) + String(repeating: "</a>", count: 40)
        XCTAssertThrowsError(try XMLReader.parse(Array(deep.utf8))) { XCTAssertEqual($0 as? XMLError, .tooDeep) }
        let many = "<r>" + String(repeating: "<a/>", count: 2_100) + "</r>"
        XCTAssertThrowsError(try XMLReader.parse(Array(many.utf8))) { XCTAssertEqual($0 as? XMLError, .tooManyElements) }
    }

    func testMalformedDocumentsSayWhere() {
        for text in ["", "<a>", "<a></b>", "<a b=1/>", "<a/><b/>", "text<a/>", "<p:a/>", "<a b=\"<\"/>", "<a/>trailing", "<!-- open"] {
            XCTAssertThrowsError(try XMLReader.parse(Array(text.utf8)), text) { error in
                XCTAssertFalse("\(error)".contains("\n"), text)
            }
        }
    }
}

final class ONVIFServiceTests: XCTestCase {
    static let device = ONVIFDevice(name: "porch cam", hardware: "rpi4", firmware: "0.1.0", serial: "0123abcd", uuid: "6f1d3c1e-0000-4000-8000-000000000001")

    /// With `users`, device accounts by those names and secrets, and viewer alice
    /// (password "correct horse"), whose password itself is not kept.
    func service(users: [String: String]? = nil, rtsp: UInt16? = 8554, limiter: LoginLimiter = LoginLimiter(),
                 clock: ONVIFClock = ONVIFClock(unixMilliseconds: 1_796_000_000_000, synchronized: false), nonceFile: String? = nil) -> ONVIFService {
        let access = users.map { users in
            AccessGate(list: AccessList(realm: "onair-test", viewers: [AccessList.viewer(AccessList.viewerValue(name: "alice", password: "correct horse", realm: "onair-test"))!],
                                        devices: users.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }),
                       limiter: limiter, log: .silent())
        }
        let environment = ONVIFService.Environment(
            live: { ONVIFStream(width: 1280, height: 720, fps: 30, bitrate: 3_000_000, govLength: 60, h264Profile: "High",
                                audio: .init(sampleRate: 48_000, bitrate: 64_000, channels: 1)) },
            clock: { clock },
            interfaces: { [ONVIFInterface(name: "eth0", hardwareAddress: "dc:a6:32:01:02:03", mtu: 1500, ipv4: [("192.168.1.20", 24)], dhcp: true)] },
            rtspPort: rtsp, snapshotPath: "/api/snapshot.jpg", access: access)
        return ONVIFService(device: Self.device, environment: environment, nonceFile: nonceFile, log: .silent())
    }

    static func request(_ operation: String, service: String = "device", header: String = "") -> [UInt8] {
        let namespace = service == "device" ? "http://www.onvif.org/ver10/device/wsdl" : "http://www.onvif.org/ver10/media/wsdl"
        return Array("""
            <s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Header>\(header)</s:Header>
            <s:Body><\(operation) xmlns="\(namespace)"/></s:Body></s:Envelope>
            """.utf8)
    }

    func call(_ service: ONVIFService, _ operation: String, media: Bool = false, header: String = "") throws -> (Int, XMLElement) {
        let (status, xml) = service.respond(path: media ? ONVIFService.mediaPath : ONVIFService.devicePath,
                                            body: Self.request(operation, service: media ? "media" : "device", header: header),
                                            host: "192.168.1.20:8080", port: 8080, client: "192.168.1.9")
        let envelope = try XMLReader.parse(Array(xml.utf8))
        return (status, try XCTUnwrap(envelope.child("Body")?.children.first, xml))
    }

    func testTheDeviceSaysWhoItIsAndWhereItsServicesAre() throws {
        let onvif = service()
        let (status, info) = try call(onvif, "GetDeviceInformation")
        XCTAssertEqual(status, 200)
        XCTAssertEqual(info.child("Manufacturer")?.text, "onair")
        XCTAssertEqual(info.child("Model")?.text, "rpi4")
        XCTAssertEqual(info.child("SerialNumber")?.text, "0123abcd")
        let capabilities = try call(onvif, "GetCapabilities").1
        XCTAssertEqual(capabilities.find("Capabilities", "Media", "XAddr")?.text, "http://192.168.1.20:8080/onvif/media_service")
        XCTAssertEqual(capabilities.find("Capabilities", "Device", "XAddr")?.text, "http://192.168.1.20:8080/onvif/device_service")
        let services = try call(onvif, "GetServices").1
        XCTAssertEqual(services.children.compactMap { $0.child("XAddr")?.text }.count, 2)
        // The clock is not synchronised: it says Manual, not NTP.
        let time = try call(onvif, "GetSystemDateAndTime").1
        XCTAssertEqual(time.find("SystemDateAndTime", "DateTimeType")?.text, "Manual")
        XCTAssertEqual(time.find("SystemDateAndTime", "UTCDateTime", "Date", "Year")?.text, "2026")
        let scopes = try call(onvif, "GetScopes").1.children.compactMap { $0.child("ScopeItem")?.text }
        XCTAssertTrue(scopes.contains("onvif://www.onvif.org/name/porch%20cam"), "\(scopes)")
        XCTAssertTrue(scopes.contains("onvif://www.onvif.org/hardware/rpi4"))
        XCTAssertEqual(try call(onvif, "GetHostname").1.find("HostnameInformation", "Name")?.text, "porch cam")
        XCTAssertEqual(try call(onvif, "GetServiceCapabilities").1.find("Capabilities", "System")?.attributes["DiscoveryBye"], "true")
        let interfaces = try call(onvif, "GetNetworkInterfaces").1
        XCTAssertEqual(interfaces.find("NetworkInterfaces", "IPv4", "Config", "FromDHCP", "Address")?.text, "192.168.1.20")
    }

    func testTheMediaServiceGivesTheProfileAndTheURIs() throws {
        let onvif = service()
        let profile = try XCTUnwrap(try call(onvif, "GetProfiles", media: true).1.child("Profiles"))
        XCTAssertEqual(profile.attributes["token"], "live")
        XCTAssertEqual(profile.find("VideoEncoderConfiguration", "Resolution", "Width")?.text, "1280")
        XCTAssertEqual(profile.find("VideoEncoderConfiguration", "H264", "H264Profile")?.text, "High")
        XCTAssertEqual(profile.find("AudioEncoderConfiguration", "Encoding")?.text, "AAC")
        XCTAssertEqual(try call(onvif, "GetStreamUri", media: true).1.find("MediaUri", "Uri")?.text, "rtsp://192.168.1.20:8554/live")
        XCTAssertEqual(try call(onvif, "GetSnapshotUri", media: true).1.find("MediaUri", "Uri")?.text, "http://192.168.1.20:8080/api/snapshot.jpg")
        XCTAssertEqual(try call(onvif, "GetVideoSources", media: true).1.find("VideoSources", "Resolution", "Height")?.text, "720")
        // Clients ask the service's capabilities before they use the snapshot.
        let capabilities = try call(onvif, "GetServiceCapabilities", media: true).1.child("Capabilities")
        XCTAssertEqual(capabilities?.attributes["SnapshotUri"], "true")
        XCTAssertEqual(capabilities?.child("StreamingCapabilities")?.attributes["RTP_RTSP_TCP"], "true")
        // RTSP off: no stream URI to give.
        XCTAssertEqual(try call(service(rtsp: nil), "GetStreamUri", media: true).0, 500)
    }

    func testEverythingElseIsAFault() throws {
        let (status, fault) = try call(service(), "SetSystemFactoryDefault")
        XCTAssertEqual(status, 500)
        XCTAssertEqual(fault.name, "Fault")
        XCTAssertEqual(fault.find("Code", "Subcode", "Value")?.text, "ter:ActionNotSupported")
        // A device operation sent to the media service is not one of its operations.
        XCTAssertEqual(try call(service(), "GetDeviceInformation", media: true).0, 500)
        for body in ["not xml", "<a/>", "<!DOCTYPE x [<!ENTITY a \"b\">]><x/>", "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body/></s:Envelope>"] {
            let (status, xml) = service().respond(path: ONVIFService.devicePath, body: Array(body.utf8), host: nil, port: 80, client: "x")
            XCTAssertEqual(status, 400, body)
            XCTAssertTrue(xml.contains("ter:WellFormed"), xml)
        }
    }

    /// The digest of the ONVIF Application Programmer's Guide's example (§6.1.1.3).
    func testPasswordDigestIsWSSecuritys() {
        let nonce = Base64.decode("LKqI6G/AikKCQrN0zqZFlg==")!
        XCTAssertEqual(Base64.encode(ONVIFService.digest(nonce: nonce, created: "2010-09-16T07:50:45Z", password: "userpassword")),
                       "tuOSpGlFlIXsozq4HFNeeGeFLEI=")
    }

    static func token(user: String, password: String, nonce: [UInt8] = Array("0123456789abcdef".utf8), digest: Bool = true,
                      created: String = "2026-12-05T08:00:00Z") -> String {
        let value = digest ? Base64.encode(ONVIFService.digest(nonce: nonce, created: created, password: password)) : password
        let type = digest ? "PasswordDigest" : "PasswordText"
        return """
            <Security xmlns="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"><UsernameToken>
            <Username>\(user)</Username><Password Type="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#\(type)">\(value)</Password>
            <Nonce>\(Base64.encode(nonce))</Nonce><Created xmlns="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd">\(created)</Created>
            </UsernameToken></Security>
            """
    }

    func testWithViewersEveryOperationButThePreAuthOnesWantsAUsernameToken() throws {
        let onvif = service(users: ["viewer": "secret-1"])
        XCTAssertEqual(try call(onvif, "GetSystemDateAndTime").0, 200, "a client learns the time before it authenticates")
        XCTAssertEqual(try call(onvif, "GetCapabilities").0, 200)
        let (status, fault) = try call(onvif, "GetDeviceInformation")
        XCTAssertEqual(status, 400)
        XCTAssertEqual(fault.find("Code", "Subcode", "Value")?.text, "ter:NotAuthorized")
        XCTAssertEqual(try call(onvif, "GetDeviceInformation", header: Self.token(user: "viewer", password: "secret-1")).0, 200)
        XCTAssertEqual(try call(onvif, "GetDeviceInformation", header: Self.token(user: "viewer", password: "secret-1")).0, 400, "a replayed nonce")
        XCTAssertEqual(try call(onvif, "GetDeviceInformation", header: Self.token(user: "viewer", password: "wrong", nonce: Array("n2".utf8))).0, 400)
        XCTAssertEqual(try call(onvif, "GetDeviceInformation", header: Self.token(user: "nobody", password: "secret-1", nonce: Array("n3".utf8))).0, 400)
        XCTAssertEqual(try call(onvif, "GetProfiles", media: true, header: Self.token(user: "viewer", password: "secret-1", digest: false)).0, 200,
                       "PasswordText too")
        // A viewer's password is checked as PasswordText; its digest cannot be (the
        // password is not kept), and the fault says what to do.
        XCTAssertEqual(try call(onvif, "GetProfiles", media: true, header: Self.token(user: "alice", password: "correct horse", digest: false)).0, 200)
        let (digestStatus, digestFault) = try call(onvif, "GetProfiles", media: true, header: Self.token(user: "alice", password: "correct horse", nonce: Array("n4".utf8)))
        XCTAssertEqual(digestStatus, 400)
        XCTAssertTrue(digestFault.find("Reason", "Text")?.text.contains("onair passwd --device") ?? false, "\(digestFault)")
    }

    /// Issue 44: a captured request is not taken again — not after a restart (the nonces
    /// taken are kept in a file), and, on a synchronised clock, not once its Created is more
    /// than five minutes from the board's time (1999's never).
    func testACapturedDigestIsNotTakenAgainAfterARestartOrOnceOld() throws {
        let folder = NSTemporaryDirectory() + "onair-onvif-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/onvif-nonces"
        let now = try XCTUnwrap(UTCDate.parse("2026-12-05T08:02:00Z"))
        let synchronized = ONVIFClock(unixMilliseconds: now, synchronized: true)
        let captured = Self.token(user: "viewer", password: "secret-1", nonce: Array("captured-1".utf8))
        XCTAssertEqual(try call(service(users: ["viewer": "secret-1"], clock: synchronized, nonceFile: file), "GetDeviceInformation", header: captured).0, 200)
        // onair restarts: a new service on the same data directory.
        let restarted = service(users: ["viewer": "secret-1"], clock: synchronized, nonceFile: file)
        let (status, fault) = try call(restarted, "GetDeviceInformation", header: captured)
        XCTAssertEqual(status, 400)
        XCTAssertTrue(fault.find("Reason", "Text")?.text.contains("a nonce used before") ?? false, "\(fault)")
        let old = Self.token(user: "viewer", password: "secret-1", nonce: Array("old-1".utf8), created: "1999-01-01T00:00:00Z")
        let (oldStatus, oldFault) = try call(restarted, "GetDeviceInformation", header: old)
        XCTAssertEqual(oldStatus, 400)
        XCTAssertTrue(oldFault.find("Reason", "Text")?.text.contains("more than 5 minutes") ?? false, "\(oldFault)")
        XCTAssertEqual(try call(restarted, "GetDeviceInformation", header: Self.token(user: "viewer", password: "secret-1", nonce: Array("new-1".utf8),
                                                                                   created: "2026-12-05T07:58:30Z")).0, 200, "within the window")
        // An unsynchronised clock cannot judge Created: taken, the nonce still once only.
        let unsynchronised = service(users: ["viewer": "secret-1"], nonceFile: file)
        XCTAssertEqual(try call(unsynchronised, "GetDeviceInformation", header: old).0, 200)
        XCTAssertEqual(try call(unsynchronised, "GetDeviceInformation", header: old).0, 400)
    }

    /// The file of nonces stays bounded: rewritten with the last `capacity` when it holds
    /// twice as many, and a torn line is skipped.
    func testTheNonceFileStaysBounded() throws {
        let folder = NSTemporaryDirectory() + "onair-onvif-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/onvif-nonces"
        let nonces = UsedNonces(path: file, capacity: 4)
        for n in 0..<9 { XCTAssertTrue(nonces.first(Array("n\(n)".utf8))) }
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.count, 4, "rewritten with the last 4 when it would hold 9")
        try (String(contentsOfFile: file, encoding: .utf8) + "0123abc").write(toFile: file, atomically: false, encoding: .utf8)
        let again = UsedNonces(path: file, capacity: 4)
        XCTAssertFalse(again.first(Array("n8".utf8)))
        XCTAssertFalse(again.first(Array("n5".utf8)))
        XCTAssertTrue(again.first(Array("n1".utf8)), "forgotten: past the capacity")
        // However many restarts come between, the file never holds more than it reads back.
        for round in 0..<5 {
            let restarted = UsedNonces(path: file, capacity: 4)
            for n in 0..<7 { XCTAssertTrue(restarted.first(Array("r\(round)-\(n)".utf8))) }
            XCTAssertLessThanOrEqual(try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").count, 8)
        }
        XCTAssertFalse(UsedNonces(path: file, capacity: 4).first(Array("r4-6".utf8)), "still known after the rounds")
    }

    /// Wrong tokens count against the client's address as wrong HTTP and RTSP logins do:
    /// after ten, that address waits (even with the right password); others do not.
    func testFailedTokensAreLimitedPerAddress() throws {
        let onvif = service(users: ["viewer": "secret-1"])
        for attempt in 0..<10 {
            let header = Self.token(user: "viewer", password: "guess", nonce: Array("g\(attempt)".utf8))
            XCTAssertEqual(onvif.respond(path: ONVIFService.devicePath, body: Self.request("GetDeviceInformation", header: header), host: nil, port: 80,
                                         client: "192.0.2.9").status, 400)
        }
        let right = Self.token(user: "viewer", password: "secret-1", nonce: Array("r1".utf8))
        let (status, xml) = onvif.respond(path: ONVIFService.devicePath, body: Self.request("GetDeviceInformation", header: right), host: nil, port: 80, client: "192.0.2.9")
        XCTAssertEqual(status, 400)
        XCTAssertTrue(xml.contains("too many failed logins"), xml)
        XCTAssertEqual(onvif.respond(path: ONVIFService.devicePath, body: Self.request("GetDeviceInformation", header: right), host: nil, port: 80,
                                     client: "192.0.2.10").status, 200)
    }
}

final class DiscoveryTests: XCTestCase {
    static let probe = """
        <?xml version="1.0"?><e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope" xmlns:w="http://schemas.xmlsoap.org/ws/2004/08/addressing" \
        xmlns:d="http://schemas.xmlsoap.org/ws/2005/04/discovery" xmlns:dn="http://www.onvif.org/ver10/network/wsdl"><e:Header>\
        <w:MessageID>uuid:0f5d604c-81ac-4abc-8010-51dbffad55f2</w:MessageID></e:Header><e:Body><d:Probe>TYPES</d:Probe></e:Body></e:Envelope>
        """

    /// A discovery server on an in-memory port and a manual clock, with no thread: the
    /// test runs its turns.
    struct Rig {
        let discovery: Discovery
        let link: MemoryDatagrams
        let clock: ManualClock
        var turns: Discovery.Turns
        mutating func turn() { discovery.turn(&turns) }
    }

    func rig(interfaces: @escaping @Sendable () -> [InterfaceAddress], log: Log = .silent()) -> Rig {
        let link = MemoryDatagrams()
        let clock = ManualClock()
        let discovery = Discovery(device: ONVIFServiceTests.device, link: link, port: Discovery.defaultPort, interfaces: interfaces,
                                  xaddrs: { interfaces, loopback in
                                      loopback ? ["http://127.0.0.1:8080/onvif/device_service"]
                                          : interfaces.map { "http://\(SocketAddress.host($0)):8080/onvif/device_service" }
                                  },
                                  rescanSeconds: 5, log: log, clock: ServerClock(monotonic: clock, wallOffset: { 0 }), thread: false)
        return Rig(discovery: discovery, link: link, clock: clock, turns: Discovery.Turns(scanned: clock.now()))
    }

    /// An interface that gets its address after the start (a DHCP lease that comes
    /// late) is joined and announced at the next look (a Hello out of that interface),
    /// said in one line, and named in the answers from then on. On virtual time: the
    /// server looks again when its clock says `rescanSeconds` have passed, not before.
    func testAnInterfaceThatComesLaterIsTakenUp() throws {
        let present = Locked<[InterfaceAddress]>([])
        let lines = Locked<[String]>([])
        var rig = rig(interfaces: { present.withLock { $0 } }, log: .silent { event, _, fields in
            if event == .discoveryListening { lines.withLock { $0.append("\(fields.first { $0.0 == "interfaces" }?.1 ?? "")") } }
        })
        let from = try XCTUnwrap(SocketAddress(numeric: "192.168.1.9", port: 40_000, ipv6: false))
        let probe = Array(Self.probe.replacingOccurrences(of: "TYPES", with: "").utf8)
        XCTAssertTrue(rig.discovery.answer(probe, from: from)?.contains("<d:XAddrs></d:XAddrs>") ?? false, "no address yet")
        XCTAssertTrue(rig.link.sent().isEmpty, "no Hello without an interface")
        present.withLock { $0 = [InterfaceAddress(address: [192, 0, 2, 5], prefixLength: 24)] }
        rig.clock.advance(by: 4_999_999_999)
        rig.turn()
        XCTAssertEqual(lines.withLock { $0 }, [""], "not before rescanSeconds on its clock")
        XCTAssertTrue(rig.link.joined.isEmpty)
        rig.clock.advance(by: 1)
        rig.turn()
        XCTAssertEqual(lines.withLock { $0 }, ["", "192.0.2.5"])
        XCTAssertEqual(rig.link.joined, [[192, 0, 2, 5]], "the group joined on the new interface")
        let hello = rig.link.sent()
        XCTAssertEqual(hello.count, 1)
        XCTAssertEqual(hello.first?.from, [192, 0, 2, 5], "out of the new interface")
        XCTAssertEqual(hello.first?.to.bytes, Discovery.group)
        let envelope = try XMLReader.parse(hello.first?.bytes ?? [])
        XCTAssertEqual(envelope.find("Body", "Hello", "XAddrs")?.text, "http://192.0.2.5:8080/onvif/device_service")
        XCTAssertTrue(rig.discovery.answer(probe, from: from)?.contains("http://192.0.2.5:8080/onvif/device_service") ?? false)
        // Nothing changes at the next look: no second line, no second Hello.
        rig.clock.advance(by: 5_000_000_000)
        rig.turn()
        XCTAssertEqual(lines.withLock { $0 }.count, 2)
        XCTAssertTrue(rig.link.sent().isEmpty)
        // Probes that came in on it: from its link answered, from off the link not.
        rig.link.deliver(probe, from: try XCTUnwrap(SocketAddress(bytes: [203, 0, 113, 7], port: 3702)), local: [192, 0, 2, 5])
        rig.link.deliver(probe, from: try XCTUnwrap(SocketAddress(bytes: [192, 0, 2, 9], port: 3702)), local: [192, 0, 2, 5])
        rig.turn()
        XCTAssertEqual(rig.link.sent().map(\.to.bytes), [[192, 0, 2, 9]])
    }

    func discovery() throws -> Discovery {
        // No interfaces: nothing is announced; the socket is only read.
        let discovery = try Discovery(device: ONVIFServiceTests.device, port: 0, interfaces: { [] },
                                      xaddrs: { _, loopback in loopback ? ["http://127.0.0.1:8080/onvif/device_service"] : ["http://192.168.1.20:8080/onvif/device_service"] },
                                      log: .silent())
        addTeardownBlock { discovery.stop() }
        return discovery
    }

    func testAProbeForTheDevicesTypesIsAnsweredWithWhereItIs() throws {
        let discovery = try discovery()
        let from = try XCTUnwrap(SocketAddress(numeric: "192.168.1.9", port: 40_000, ipv6: false))
        let probe = Self.probe.replacingOccurrences(of: "TYPES", with: "<d:Types>dn:NetworkVideoTransmitter</d:Types>")
        let answer = try XCTUnwrap(discovery.answer(Array(probe.utf8), from: from))
        let envelope = try XMLReader.parse(Array(answer.utf8))
        XCTAssertEqual(envelope.find("Header", "RelatesTo")?.text, "uuid:0f5d604c-81ac-4abc-8010-51dbffad55f2")
        XCTAssertEqual(envelope.find("Header", "Action")?.text, "http://schemas.xmlsoap.org/ws/2005/04/discovery/ProbeMatches")
        XCTAssertNotNil(envelope.find("Header", "AppSequence")?.attributes["MessageNumber"])
        let match = try XCTUnwrap(envelope.find("Body", "ProbeMatches", "ProbeMatch"))
        XCTAssertEqual(match.find("EndpointReference", "Address")?.text, "urn:uuid:" + ONVIFServiceTests.device.uuid)
        XCTAssertEqual(match.child("XAddrs")?.text, "http://192.168.1.20:8080/onvif/device_service")
        XCTAssertTrue(match.child("Scopes")?.text.contains("onvif://www.onvif.org/name/porch%20cam") ?? false)
        // A probe with no types matches too; one for another kind of device does not.
        XCTAssertNotNil(discovery.answer(Array(Self.probe.replacingOccurrences(of: "TYPES", with: "").utf8), from: from))
        XCTAssertNil(discovery.answer(Array(Self.probe.replacingOccurrences(of: "TYPES", with: "<d:Types>x:Printer</d:Types>").utf8), from: from))
        // Scopes: one of the device's, or a prefix of one, matches; another does not.
        XCTAssertTrue(discovery.matches(types: "", scopes: "onvif://www.onvif.org/name"))
        XCTAssertTrue(discovery.matches(types: "tds:Device", scopes: "onvif://www.onvif.org/hardware/rpi4"))
        XCTAssertFalse(discovery.matches(types: "", scopes: "onvif://www.onvif.org/location/garden"))
        // Garbage and bombs are not answered.
        XCTAssertNil(discovery.answer(Array("<!DOCTYPE x [<!ENTITY a \"b\">]><x>&a;</x>".utf8), from: from))
        XCTAssertNil(discovery.answer([0xFF, 0x00, 0x3C], from: from))
    }

    /// The budget: fifty answers in a second, none more until the next second begins.
    func testProbesAreAnsweredAtMostFiftyASecond() {
        var budget = AnswerBudget(perSecond: Discovery.answersPerSecond)
        var answered = 0
        for probe in 0..<400 where budget.allows(now: 5_000_000_000 + Int64(probe) * 1_000_000) {
            budget.spend()
            answered += 1
        }
        XCTAssertEqual(answered, 50, "400 probes within 0.4 s")
        XCTAssertTrue(budget.allows(now: 6_000_000_000), "the next second")
    }

    /// A flood of probes from 400 sources, read 64 a turn: fifty are answered in the
    /// second, each back to its source, the next second fifty more; the refusals take at
    /// most a minute's lines.
    func testAFloodOfProbesIsAnsweredFiftyASecondAndTheLogStaysQuiet() throws {
        let lines = Locked(0)
        var rig = rig(interfaces: { [] }, log: .silent { event, _, _ in if event == .discoveryRefused { lines.withLock { $0 += 1 } } })
        let probe = Array(Self.probe.replacingOccurrences(of: "TYPES", with: "").utf8)
        for source in 0..<400 {
            rig.link.deliver(probe, from: try XCTUnwrap(SocketAddress(bytes: [127, 0, UInt8(source / 250), UInt8(source % 250 + 1)], port: 40_000)))
        }
        rig.turn()
        var answers = rig.link.sent()
        XCTAssertEqual(answers.count, 50, "64 read in the turn, 50 answered")
        XCTAssertEqual(answers.first?.to.bytes, [127, 0, 0, 1])
        XCTAssertTrue(answers.allSatisfy { $0.from == nil }, "answers go straight back, not to the group")
        for _ in 0..<3 { rig.turn() }
        XCTAssertTrue(rig.link.sent().isEmpty, "none more in the same second")
        rig.clock.advance(by: 1_000_000_000)
        for _ in 0..<4 { rig.turn() }
        answers = rig.link.sent()
        XCTAssertEqual(answers.count, 50, "fifty more in the next second")
        XCTAssertLessThanOrEqual(lines.withLock { $0 }, 20, "refusals said at most 20 times a minute")
        // Through the real socket: a probe to the kernel's port on loopback is answered.
        let discovery = try discovery()
        let target = try XCTUnwrap(SocketAddress(numeric: "127.0.0.1", port: discovery.port, ipv6: false))
        let client = try FileDescriptor.datagramSocket(bound: XCTUnwrap(SocketAddress(numeric: "127.0.0.1", port: 0, ipv6: false)))
        _ = try client.sendDatagram(probe, to: target)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        XCTAssertTrue(try Poll.wait(client, for: .readable, timeoutMs: 10_000).contains(.readable))
        let count = try XCTUnwrap(try client.receiveDatagram(into: &buffer)).count
        XCTAssertTrue(String(decoding: buffer[0..<count], as: UTF8.self).contains("http://127.0.0.1:8080/onvif/device_service"))
    }

    /// Issue 44: only the link is answered — a source on the subnet of the interface the
    /// probe came in on; loopback only from loopback; nothing on an interface not listened on.
    func testOnlyTheLinkAProbeCameInOnIsAnswered() {
        let lan = [InterfaceAddress(address: [192, 168, 1, 20], prefixLength: 24), InterfaceAddress(address: [10, 0, 0, 1], prefixLength: 8)]
        XCTAssertNil(Discovery.outOfScope(source: [192, 168, 1, 9], local: [192, 168, 1, 20], interfaces: lan))
        XCTAssertNil(Discovery.outOfScope(source: [10, 200, 3, 4], local: [10, 0, 0, 1], interfaces: lan))
        XCTAssertNil(Discovery.outOfScope(source: [127, 0, 0, 1], local: [127, 0, 0, 1], interfaces: lan))
        XCTAssertNotNil(Discovery.outOfScope(source: [203, 0, 113, 7], local: [192, 168, 1, 20], interfaces: lan), "off the link")
        XCTAssertNotNil(Discovery.outOfScope(source: [192, 168, 1, 9], local: [10, 0, 0, 1], interfaces: lan), "the other interface's link")
        XCTAssertNotNil(Discovery.outOfScope(source: [172, 16, 0, 9], local: [172, 16, 0, 1], interfaces: lan), "not listened on")
        XCTAssertNotNil(Discovery.outOfScope(source: [127, 0, 0, 1], local: [192, 168, 1, 20], interfaces: lan))
        XCTAssertNotNil(Discovery.outOfScope(source: [192, 168, 1, 9], local: [127, 0, 0, 1], interfaces: lan))
        XCTAssertNotNil(Discovery.outOfScope(source: [192, 168, 1, 9], local: [0, 0, 0, 0], interfaces: lan), "the kernel did not say")
        XCTAssertTrue(InterfaceAddress(address: [10, 1, 2, 3], prefixLength: 0).contains([1, 2, 3, 4]))
        XCTAssertFalse(InterfaceAddress(address: [10, 1, 2, 3], prefixLength: 32).contains([10, 1, 2, 4]))
    }

    /// Five answers a second to any one source: a flood from one address leaves the rest
    /// of the second's answers to everyone else.
    func testOneSourceGetsFiveAnswersASecond() {
        var budget = SourceBudget(perSecond: Discovery.answersPerSource)
        var flooder = 0
        for probe in 0..<100 where budget.allows([192, 168, 1, 66], now: Int64(probe) * 1_000_000) {
            budget.spend([192, 168, 1, 66])
            flooder += 1
        }
        XCTAssertEqual(flooder, 5)
        XCTAssertTrue(budget.allows([192, 168, 1, 9], now: 500_000_000), "another source")
        XCTAssertTrue(budget.allows([192, 168, 1, 66], now: 1_000_000_000), "the next second")
    }

    func testUUIDsCarryTheirVersionAndVariant() {
        let named = Discovery.uuid(Array(repeating: 0xFF, count: 32), version: 8)
        XCTAssertEqual(named, "ffffffff-ffff-8fff-bfff-ffffffffffff")
        let random = Discovery.randomUUID()
        XCTAssertEqual(random.count, 36)
        XCTAssertEqual(Array(random)[14], "4")
        XCTAssertNotEqual(random, Discovery.randomUUID())
    }
}
