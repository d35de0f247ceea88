// swift-tools-version: 6.0
// onair: a camera appliance that encodes, packages fMP4 HLS and serves it, in one binary.
// Module layout and allowed imports follow docs/ARCHITECTURE.md; the data flow reads top to
// bottom: Devices (frames, sound) → Streaming (Codecs encode, HLS + MP4 cut) → Spool (the
// stream on disk) and Recording (the local file) → Publishing (uploads) and Server;
// Appliance is the control plane around it, and everything logs typed events through
// Logging. Layout names every file, so no module spells one.
import PackageDescription

let package = Package(
    name: "onair",
    products: [
        .executable(name: "onair", targets: ["onair"])
    ],
    targets: [
        // C libraries from Debian, each behind a module map and a one-file shim.
        .systemLibrary(name: "CFFmpeg", path: "Sources/CFFmpeg", pkgConfig: "libavcodec",
                       providers: [.apt(["libavcodec-dev", "libavutil-dev", "libswscale-dev"])]),
        .systemLibrary(name: "CALSA", path: "Sources/CALSA", pkgConfig: "alsa",
                       providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CDRM", path: "Sources/CDRM", pkgConfig: "libdrm",
                       providers: [.apt(["libdrm-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        // OpenSSL's libcrypto, static, linked through libcurl's .pc (which lists it): no
        // second copy, and the one libcrypto onair already carries for HTTPS.
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcurl",
                       providers: [.apt(["libssl-dev"])]),
        // SRTP for WebRTC: libsrtp2 on the same static libcrypto (toolchain/deps.sh builds it).
        .systemLibrary(name: "CSRTP", path: "Sources/CSRTP", pkgConfig: "libsrtp2",
                       providers: [.apt(["libsrtp2-dev"])]),
        // Opus for WebRTC's sound: Debian's libopus.a.
        .systemLibrary(name: "COpus", path: "Sources/COpus", pkgConfig: "opus",
                       providers: [.apt(["libopus-dev"])]),
        // SRT for destinations: Debian's libsrt.a, built on OpenSSL (libsrt-openssl-dev).
        .systemLibrary(name: "CSRT", path: "Sources/CSRT", pkgConfig: "srt",
                       providers: [.apt(["libsrt-openssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),

        // Our own C: Linux calls and ioctl layouts Swift cannot import.
        .target(name: "CLinux"),
        // The kernel's interface, typed: every system call onair makes on a file, a
        // descriptor, a path or the process, with `Errno` and a `FileDescriptor` that closes
        // once. The only module (with the C shims) that imports Glibc for a system call.
        .target(name: "System", dependencies: ["CLinux"]),
        // The concurrency kit: one mutex, one condition, one thread type, one one-shot event,
        // all on CLOCK_MONOTONIC (docs/ARCHITECTURE.md, Conventions).
        .target(name: "Threading", dependencies: ["System", "CLinux"]),

        // Every name onair gives to what it keeps (the data directory, a stream's directory):
        // one value, no I/O, so no other module spells a name.
        .target(name: "Layout"),
        .target(name: "Drawing"),
        // The file system through POSIX: atomic writes, reading, listing, removing.
        .target(name: "Files", dependencies: ["System", "Layout"]),
        // Typed events (declared beside the code that emits them) and the one log they go to.
        .target(name: "Logging", dependencies: ["System", "Threading", "Basics"]),

        // What every module may need and none owns: JSON, Base64, UTC dates, text, SHA-256
        // (libcrypto's, the one onair has), library versions.
        .target(name: "Basics", dependencies: ["COpenSSL"]),
        // Pure media code: no I/O.
        .target(name: "Media"),
        .target(name: "MP4", dependencies: ["Media"]),
        .target(name: "HLS", dependencies: ["Media", "MP4", "Threading", "Layout", "Basics"]),

        // Hardware and libraries.
        .target(name: "Codecs", dependencies: ["Media", "Files", "CFFmpeg", "COpus", "Basics"]),
        .target(name: "Devices", dependencies: ["System", "Media", "Threading", "Logging", "CALSA", "CLinux", "CDRM", "Basics", "Drawing"]),
        // RTP for the real-time outputs (WebRTC, RTSP): packets, the H.264 packetizer of
        // RFC 6184 and its depacketizer, stream numbering. Pure: no I/O.
        .target(name: "RTP", dependencies: ["Media"]),
        .target(name: "RTMP", dependencies: ["MP4"]),
        // MPEG-2 transport streams for SRT destinations: the writer (H.264 + AAC, PAT/PMT,
        // PCR, continuity counters) and a checker of what a receiver got. Pure.
        .target(name: "MPEGTS", dependencies: ["Media"]),
        // Wi-Fi: onair.conf's [wifi] as wpa_supplicant's configuration (made at boot by
        // `onair wifi-config`), and what wpa_supplicant says, watched and said in words.
        .target(name: "Network", dependencies: ["Basics", "System", "Threading", "Logging", "COpenSSL"]),
        // Going live on the platforms: each `[destination.NAME]` a real-time reader of the
        // live feed on a thread of its own, publishing over RTMP or RTMPS (TLS over the
        // linked OpenSSL, the server's certificate checked), with its platform's preset.
        .target(name: "Destinations", dependencies: ["RTMP", "MPEGTS", "Live", "Media", "System", "Threading", "Logging", "COpenSSL", "CSRT", "Basics"]),
        // The live stream published once, which the real-time outputs and destinations join
        // and leave at run time: a bounded ring per reader, RTP payloads made once, Opus on
        // a thread of its own while a reader wants it.
        .target(name: "Live", dependencies: ["Media", "RTP", "Codecs", "Logging", "Threading"]),
        // RTSP 1.0 (RFC 2326) for NVRs and hubs: requests read from a connection, responses,
        // transports, and the server (one thread for every client).
        .target(name: "RTSP", dependencies: ["Media", "RTP", "Live", "System", "Threading", "Logging", "Layout", "Access", "Basics"]),
        // ONVIF Profile S for NVRs and hubs: the SOAP reader (no DTD), the Device and Media
        // services, WS-Security's UsernameToken, WS-Discovery.
        .target(name: "ONVIF", dependencies: ["Media", "System", "Threading", "Logging", "COpenSSL", "Access", "Files", "Basics"]),
        // Who may watch: viewers' stored digests and NVRs' device accounts, HTTP/RTSP
        // Digest (RFC 7616) with stateless nonces, failed logins limited per address.
        .target(name: "Access", dependencies: ["System", "Threading", "Logging", "COpenSSL", "Basics"]),
        // Session descriptions (RFC 8866): WebRTC's offers and answers, RTSP's DESCRIBE.
        .target(name: "SDP", dependencies: ["Basics"]),
        // STUN (RFC 8489) for ICE-lite: messages, MESSAGE-INTEGRITY, FINGERPRINT,
        // XOR-MAPPED-ADDRESS. No I/O.
        .target(name: "STUN", dependencies: ["COpenSSL", "Media"]),
        // WebRTC: ICE-lite sessions, DTLS-SRTP, the WHEP answer and the datagram demux.
        .target(name: "WebRTC", dependencies: ["STUN", "SDP", "RTP", "Live", "COpenSSL", "CSRTP", "Files", "System", "Threading", "Logging", "Codecs", "Basics"]),
        // onair's one HTTP client, over libcurl: uploads, fetch, validation, the probe.
        .target(name: "HTTP", dependencies: ["CCurl", "Basics"]),
        // The stream on disk: the live HLS writer, recovery after a cut, the storage keeper.
        // Written by Streaming; read by Publishing, Server, Export and Fetch through Layout.
        .target(name: "Spool", dependencies: ["System", "Media", "MP4", "HLS", "Files", "Threading", "Logging", "Layout"]),
        .target(name: "Publishing", dependencies: ["System", "HLS", "Files", "Threading", "Logging", "Layout", "Spool", "HTTP", "Basics"]),
        .target(name: "Recording", dependencies: ["System", "MP4", "Files", "Threading", "Logging", "Layout", "Basics"]),
        // The engine between capture and files: the media queue, one worker per output, the
        // live and recording stream encoders, pre-roll, encoder choice and cost.
        .target(name: "Streaming", dependencies: ["System", "Media", "MP4", "HLS", "Files", "Threading", "Logging", "Codecs", "Devices", "Spool", "Recording", "Layout", "Live", "Basics"]),
        .target(name: "Server", dependencies: ["System", "HLS", "Files", "Threading", "Logging", "CMicroHTTPD", "Layout", "Access", "Basics"]),
        // Stored streams out as one progressive MP4 (GET /api/export).
        .target(name: "Export", dependencies: ["System", "Media", "MP4", "HLS", "Files", "Layout", "Basics"]),
        // Any fMP4 HLS stream in, an offline copy out (`onair fetch`).
        .target(name: "Fetch", dependencies: ["System", "Media", "MP4", "HLS", "Files", "Threading", "Export", "Layout", "HTTP", "Basics"]),

        // Updates from signed bundles (RAUC): the A/B slots, a bundle fetched or uploaded and
        // installed, the new slot confirmed once healthy or given up.
        .target(name: "Updates", dependencies: ["Basics", "Files", "HTTP", "Logging", "Server", "System", "Threading"]),
        // The appliance: session, config, logging; and the command line.
        .target(name: "Appliance", dependencies: ["System", "Media", "HLS", "Files", "Threading", "Logging", "Streaming", "Codecs", "Devices", "Publishing", "Recording", "Server", "Export", "Fetch", "Layout", "Spool", "HTTP", "WebRTC", "RTSP", "ONVIF", "Access", "Live", "Basics", "Updates", "Destinations", "Network", "Drawing"]),
        .executableTarget(name: "onair", dependencies: ["Appliance", "System"]),
        // `make bench`'s helpers: the packager alone on pre-encoded samples, and the synthetic
        // camera's frames as raw video so ffmpeg can encode the very same pictures.
        .executableTarget(name: "onair-bench", dependencies: ["Media", "MP4", "HLS", "Files", "Publishing", "Devices", "Layout", "Spool"]),
        // The fuzzer of every reader of outside input (boxes, playlists, streams, onair.conf,
        // Range headers, raw HTTP): a bounded run in `make test` (FuzzTests), longer in
        // `make fuzz` (onair-fuzz).
        .target(name: "Fuzzing", dependencies: ["Access", "Basics", "System", "RTP", "RTMP", "RTSP", "ONVIF", "SDP", "STUN", "WebRTC", "Appliance", "Fetch", "Files", "HLS", "MP4", "Server", "Threading", "TestSupport", "Layout", "Logging", "Network"]),
        .executableTarget(name: "onair-fuzz", dependencies: ["Fuzzing"]),

        // Tests.
        .target(name: "TestSupport", dependencies: ["Media", "MP4", "HLS", "Publishing", "Threading", "Logging", "Layout", "Spool", "System"]),
        .testTarget(name: "BasicsTests", dependencies: ["Basics"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "TestSupport"]),
        .testTarget(name: "ThreadingTests", dependencies: ["Threading"]),
        .testTarget(name: "SystemTests", dependencies: ["System"]),
        .testTarget(name: "RTPTests", dependencies: ["RTP", "TestSupport"]),
        .testTarget(name: "RTMPTests", dependencies: ["RTMP"]),
        .testTarget(name: "MPEGTSTests", dependencies: ["MPEGTS", "Media"]),
        .testTarget(name: "DestinationsTests", dependencies: ["Destinations", "RTMP"]),
        .testTarget(name: "NetworkTests", dependencies: ["Network", "Basics", "TestSupport"]),
        .testTarget(name: "STUNTests", dependencies: ["STUN"]),
        .testTarget(name: "SDPTests", dependencies: ["SDP"]),
        .testTarget(name: "AccessTests", dependencies: ["Access", "Logging", "System", "Basics"]),
        .testTarget(name: "ONVIFTests", dependencies: ["ONVIF", "Access", "Media", "Logging", "System", "Threading", "Basics", "TestSupport"]),
        .testTarget(name: "RTSPTests", dependencies: ["RTSP", "Live", "Access", "Media", "RTP", "System", "Logging", "Threading", "TestSupport", "Basics"]),
        .testTarget(name: "LiveTests", dependencies: ["Live", "Media", "Logging", "RTP", "Threading", "Codecs"]),
        .testTarget(name: "WebRTCTests", dependencies: ["WebRTC", "Live", "STUN", "RTP", "Media", "System", "Logging", "Threading", "SDP", "TestSupport"]),
        .testTarget(name: "LayoutTests", dependencies: ["Layout"]),
        .testTarget(name: "DrawingTests", dependencies: ["Drawing", "TestSupport"]),
        .testTarget(name: "LoggingTests", dependencies: ["Logging"]),
        .testTarget(name: "FilesTests", dependencies: ["Files"]),
        .testTarget(name: "MP4Tests", dependencies: ["MP4", "Media", "TestSupport"]),
        .testTarget(name: "HLSTests", dependencies: ["HLS", "MP4", "Media", "Threading", "TestSupport", "Layout", "Basics"]),
        .testTarget(name: "CodecsTests", dependencies: ["Codecs", "Media", "Devices", "TestSupport"]),
        .testTarget(name: "DevicesTests", dependencies: ["System", "Logging", "Devices", "Media", "Threading", "TestSupport"]),
        .testTarget(name: "PublishingTests", dependencies: ["Logging", "Publishing", "Files", "HLS", "TestSupport", "Layout", "Spool", "MP4"]),
        .testTarget(name: "SpoolTests", dependencies: ["Spool", "Logging", "Files", "HLS", "MP4", "TestSupport"]),
        .testTarget(name: "RecordingTests", dependencies: ["Logging", "Recording", "Files", "MP4", "HLS", "Media", "TestSupport", "Layout", "Publishing", "Basics"]),
        .testTarget(name: "ExportTests", dependencies: ["Export", "Fetch", "Threading", "Files", "HLS", "Logging", "Media", "Server", "Streaming", "Publishing", "Codecs",
                                                   "Devices", "TestSupport", "Layout", "Spool"]),
        .testTarget(name: "ServerTests", dependencies: ["Server", "Access", "Files", "HLS", "Threading", "TestSupport", "Layout", "System"]),
        .testTarget(name: "StreamingTests", dependencies: ["Streaming", "Live", "Logging", "TestSupport", "HLS", "MP4", "Media", "Codecs", "Devices", "Publishing", "Recording", "Layout", "Threading", "Basics", "System"]),
        .testTarget(name: "UpdatesTests", dependencies: ["Updates", "Logging", "Server", "TestSupport", "Threading"]),
        .testTarget(name: "ApplianceTests", dependencies: ["Logging", "TestSupport", "Threading", "Appliance", "Streaming", "HLS", "Codecs", "Devices", "Publishing", "Fetch", "Spool", "Access", "System", "Basics", "Updates", "Destinations", "Network", "Files", "Server", "Drawing"]),
        .testTarget(name: "FuzzTests", dependencies: ["Fuzzing"], resources: [.copy("Corpus")]),
        .testTarget(name: "IntegrationTests", dependencies: ["MPEGTS", "HLS", "MP4", "Media", "Devices", "TestSupport", "Layout", "Threading", "RTP", "SDP", "WebRTC", "STUN", "System", "Publishing", "Basics", "Network", "Logging"],
                    // The real clients the tests run (Python), not Swift.
                    exclude: ["Clients"])
    ]
)
