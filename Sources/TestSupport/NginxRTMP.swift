import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx with libnginx-mod-rtmp as the RTMP server a platform's ingest stands
/// for, on free loopback ports, recording every stream it takes to FLV:
/// - `live`: takes any stream name, records `NAME.flv` (each publish of a name its own
///   file, `NAME-<time>.flv`, so a reconnect is not written over);
/// - `keyed`: asks `keyCheck` (an HTTP POST of nginx-rtmp's `on_publish`) whether the
///   name is a key it takes: what a platform does with a stream key;
/// and with `tls`, RTMPS: nginx's stream module terminating TLS with a certificate for
/// `localhost` signed by a CA the test makes (`caFile`, for SSL_CERT_FILE), in front of
/// the same server.
public final class NginxRTMP {
    public let port: UInt16
    public let tlsPort: UInt16?
    public let recordings: String
    /// The CA that signed the TLS front's certificate (PEM).
    public let caFile: String
    private let work: String
    private let process = Process()

    public init(tls: Bool = false, keyCheck: UInt16? = nil) throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("onair-rtmp-\(UUID().uuidString)").path
        recordings = work + "/flv"
        caFile = work + "/ca.pem"
        try FileManager.default.createDirectory(atPath: recordings, withIntermediateDirectories: true)
        port = try NginxOrigin.freePort()
        tlsPort = tls ? try NginxOrigin.freePort() : nil
        if tls { try Self.makeCertificates(work) }
        let stream = tlsPort.map { tlsPort in
            """
            stream {
                server {
                    listen 127.0.0.1:\(tlsPort) ssl;
                    ssl_certificate \(work)/server.pem;
                    ssl_certificate_key \(work)/server.key;
                    proxy_pass 127.0.0.1:\(port);
                }
            }
            """
        } ?? ""
        let keyed = keyCheck.map { "application keyed { live on; on_publish http://127.0.0.1:\($0)/publish; record all; record_path \(recordings); record_unique on; }" } ?? ""
        let config = """
            load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
            \(tls ? "load_module /usr/lib/nginx/modules/ngx_stream_module.so;" : "")
            daemon off;
            master_process off;
            user root;
            pid \(work)/nginx.pid;
            error_log \(work)/error.log info;
            events { worker_connections 64; }
            \(stream)
            rtmp {
                server {
                    listen 127.0.0.1:\(port);
                    application live { live on; record all; record_path \(recordings); record_unique on; }
                    \(keyed)
                }
            }
            """
        try NginxOrigin.launch(process, config: config, work: work) { [port, tlsPort] in
            NginxOrigin.accepts(port) && (tlsPort.map(NginxOrigin.accepts) ?? true)
        }
    }

    /// nginx's log: each connect, publish and deleteStream.
    public var log: String { (try? String(contentsOfFile: work + "/error.log", encoding: .utf8)) ?? "" }

    /// The FLV files recorded of stream name `name`, oldest first.
    public func files(_ name: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: recordings)) ?? [])
            .filter { $0.hasPrefix(name + "-") && $0.hasSuffix(".flv") }.sorted().map { recordings + "/" + $0 }
    }

    public func stop() {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: work)
    }

    /// A CA and a certificate for `localhost` (its DNS name only: an IP address does not
    /// match it) that the CA signed, with openssl(1).
    private static func makeCertificates(_ work: String) throws {
        try "subjectAltName=DNS:localhost\n".write(toFile: work + "/ext.cnf", atomically: true, encoding: .utf8)
        let steps = [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=onair test CA",
             "-keyout", work + "/ca.key", "-out", work + "/ca.pem"],
            ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
             "-keyout", work + "/server.key", "-out", work + "/server.csr"],
            ["x509", "-req", "-in", work + "/server.csr", "-CA", work + "/ca.pem", "-CAkey", work + "/ca.key", "-CAcreateserial",
             "-days", "2", "-extfile", work + "/ext.cnf", "-out", work + "/server.pem"],
        ]
        for arguments in steps {
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            openssl.arguments = arguments
            openssl.standardOutput = FileHandle.nullDevice
            openssl.standardError = FileHandle.nullDevice
            try openssl.run()
            openssl.waitUntilExit()
            guard openssl.terminationStatus == 0 else { throw HTTPClient.Failure(description: "openssl \(arguments[0]) failed") }
        }
    }
}
