import Access
import Logging
import ONVIF

/// The readers of what ONVIF clients (anyone on the LAN) send: SOAP requests to the
/// services and WS-Discovery datagrams (issue 32).
extension FuzzTargets {
    /// SOAP envelopes read (no DTD, bounded), each answered by the services — with
    /// credentials required, so the WS-Security path runs too — as a well-formed envelope
    /// whose status is 200, 400 or 500.
    static let soap: FuzzTarget = {
        let environment = ONVIFService.Environment(
            live: { ONVIFStream(width: 1280, height: 720, fps: 30, bitrate: 3_000_000, govLength: 60, h264Profile: "High", audio: nil) },
            clock: { ONVIFClock(unixMilliseconds: 0, synchronized: false) }, interfaces: { [] }, rtspPort: 8554,
            snapshotPath: "/api/snapshot.jpg",
            // A limit no run reaches, so every input meets the checks rather than the throttle.
            access: AccessGate(list: AccessList(realm: "fuzz", devices: [("viewer", "secret")]), limiter: LoginLimiter(burst: 1 << 40), log: .silent()))
        let service = ONVIFService(device: ONVIFDevice(name: "fuzz", hardware: "fuzz", firmware: "0", serial: "0", uuid: "0"),
                                   environment: environment, log: .silent())
        let envelope = { (operation: String, namespace: String) in
            Array("""
                <?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Header>\
                <Security xmlns="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"><UsernameToken>\
                <Username>viewer</Username><Password Type="#PasswordDigest">tuOSpGlFlIXsozq4HFNeeGeFLEI=</Password>\
                <Nonce>LKqI6G/AikKCQrN0zqZFlg==</Nonce><Created>2010-09-16T07:50:45Z</Created></UsernameToken></Security></s:Header>\
                <s:Body><\(operation) xmlns="\(namespace)"><Category>All</Category></\(operation)></s:Body></s:Envelope>
                """.utf8)
        }
        let probe = Array("""
            <?xml version="1.0"?><e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope" xmlns:w="http://schemas.xmlsoap.org/ws/2004/08/addressing" \
            xmlns:d="http://schemas.xmlsoap.org/ws/2005/04/discovery"><e:Header><w:MessageID>uuid:1</w:MessageID></e:Header>\
            <e:Body><d:Probe><d:Types xmlns:dn="http://www.onvif.org/ver10/network/wsdl">dn:NetworkVideoTransmitter</d:Types></d:Probe></e:Body></e:Envelope>
            """.utf8)
        return FuzzTarget(name: "soap", seeds: [envelope("GetCapabilities", "http://www.onvif.org/ver10/device/wsdl"),
                                                 envelope("GetProfiles", "http://www.onvif.org/ver10/media/wsdl"), probe], textual: true) { bytes in
            for path in ONVIFService.paths {
                let (status, xml) = service.respond(path: path, body: bytes, host: "10.0.0.1:80", port: 80, client: "fuzz")
                guard [200, 400, 500].contains(status) else { broken("a SOAP answer with status \(status)") }
                guard (try? XMLReader.parse(Array(xml.utf8))) != nil else { broken("a SOAP answer that is not well-formed XML") }
            }
        }
    }()
}
