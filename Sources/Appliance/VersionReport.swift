import Basics
import Codecs
import Destinations
import Devices
import Files
import HTTP
import Publishing
import Server
import Updates
import WebRTC

/// `onair version`: onair's own version and the Swift that built it, each C library in the
/// binary with the Debian package it came from, and the codecs its libavcodec has.
/// toolchain/check-binary.sh fails a build whose `codecs missing:` line is not empty.
enum VersionReport {
    static var text: String {
        let suite = CodecLibrary.debianSuite
        var lines = ["onair \(CommandLineParser.version) (Swift \(swiftVersion), static runtime\(suite.isEmpty ? "" : "; libraries from Debian \(suite)"))"]
        let libraries = CodecLibrary.versions + CurlClient.libraryVersions
            + [WebServer.libraryVersion, SRTPSession.libraryVersion, OpusEncoder.libraryVersion, SRTLibrary.version, DRMDisplay.libraryVersion, ALSAMicrophone.libraryVersion]
        lines += libraries.map { "  " + $0.line }
        lines.append("codecs: " + CodecLibrary.requiredEncoders.joined(separator: " ") + " encoders, mjpeg decoder")
        let missing = CodecLibrary.missing
        if !missing.isEmpty { lines.append("codecs missing: " + missing.joined(separator: " ")) }
        if let image = imageLine(FileSystem.readText(imageFile, limit: 4096), running: FileSystem.readText("/proc/sys/kernel/osrelease", limit: 256)) {
            lines.append(image)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static var imageFile: String { ImageManifest.path }
    static func imageFields(_ text: String) -> [String: String] { ImageManifest.fields(text) }

    /// `image: board …, Debian … packages as of …, kernel …`, and the kernel running when it
    /// is another (a board booted from a kernel outside the image); nil off an onair image.
    static func imageLine(_ text: String?, running: String?) -> String? {
        guard let text else { return nil }
        let fields = imageFields(text)
        guard let board = fields["board"], let archive = fields["archive"] else { return nil }
        var line = "image: board \(board), Debian \(fields["suite"] ?? "") packages as of \(archive) (with its updates and security archive)"
        if let kernel = fields["kernel"] {
            line += ", kernel \(kernel)"
            if let running = running?.trimmingWhitespace(), !running.isEmpty, running != kernel {
                line += " (running \(running))"
            }
        }
        return line
    }

    /// The compiler's language version, as `#if compiler` sees it.
    static var swiftVersion: String {
        #if compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }
}
