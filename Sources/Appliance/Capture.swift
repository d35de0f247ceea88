import Basics
import Codecs
import Devices
import Logging

/// Where pictures come from in a run: the V4L2 camera or the synthetic one.
protocol VideoSource: AnyObject {
    var name: String { get }
    func start(into sink: CaptureSink)
    func stop()
}

extension SyntheticSource: VideoSource {
    var name: String { "synthetic" }
    func start(into sink: CaptureSink) { _ = start(into: sink) as Int64 }
}

extension V4L2Camera: VideoSource {
    var name: String { "v4l2" }
}

enum Capture {
    /// Opens the camera the settings ask for and returns the settings the rest of the run
    /// uses: the picture size and rate the camera granted. `source = auto` falls back to
    /// the synthetic camera (nil, with the reason logged) when there is none; `v4l2` makes
    /// it an error.
    static func openCamera(_ requested: Settings, log: Log) throws -> (V4L2Camera?, Settings) {
        var settings = requested
        if settings.source != .synthetic {
            let decoder = try MJPEGDecoder()
            // The recording is full quality: 1080p when the camera gives it, unless set.
            var ask = settings.requestedCaptureSize
            if settings.record.enabled && settings.record.width == nil && ask.width * ask.height < 1920 * 1080 { ask = Size(1920, 1080) }
            let camera = V4L2Camera(
                .init(device: settings.videoDevice.name,
                      size: ask, fps: settings.fps, buffers: settings.videoBuffers),
                decoder: { jpeg, size in try decoder.decode(jpeg, width: size.width, height: size.height) },
                log: log)
            do {
                let opened = try camera.open()
                log(.cameraOpened, ("device", opened.path), ("card", opened.card), ("driver", opened.driver),
                    ("asked", "\(ask)@\(settings.fps)"),
                    ("format", opened.granted.format.description),
                    ("granted", "\(opened.granted.width)x\(opened.granted.height)@\(opened.fps.map { formatRate($0) } ?? "?")"),
                    ("buffers", opened.buffers), ("dmabuf", opened.dmabufs))
                settings.cameraSize = Size(opened.granted.width, opened.granted.height)
                if let fps = opened.fps, fps >= 1 { settings.fps = Int(fps.rounded()) }
                return (camera, settings)
            } catch {
                if settings.source == .v4l2 { throw error }
                log(.sourceSelected, ("source", "synthetic"), ("reason", "\(error)"))
            }
        }
        return (nil, settings)
    }

    static func formatRate(_ fps: Double) -> String {
        fps == fps.rounded() ? String(Int(fps)) : fps.fixed(3)
    }
}
