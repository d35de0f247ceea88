import Codecs
import Devices
import Media
import HTTP
import Publishing
import Server
import WebRTC

/// `onair version`: onair's own version and the Swift that built it, each C library in the
/// binary with the Debian package it came from, and the codecs its libavcodec has.
/// toolchain/check-binary.sh fails a build whose `codecs missing:` line is not empty.
enum VersionReport {
    static var text: String {
        let suite = CodecLibrary.debianSuite
        var lines = ["onair \(CommandLineParser.version) (Swift \(swiftVersion), static runtime\(suite.isEmpty ? "" : "; libraries from Debian \(suite)"))"]
        let libraries = CodecLibrary.versions + CurlClient.libraryVersions
            + [WebServer.libraryVersion, SRTPSession.libraryVersion, OpusEncoder.libraryVersion, DRMDisplay.libraryVersion, ALSAMicrophone.libraryVersion]
        lines += libraries.map { "  " + $0.line }
        lines.append("codecs: " + CodecLibrary.requiredEncoders.joined(separator: " ") + " encoders, mjpeg decoder")
        let missing = CodecLibrary.missing
        if !missing.isEmpty { lines.append("codecs missing: " + missing.joined(separator: " ")) }
        return lines.joined(separator: "\n") + "\n"
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
