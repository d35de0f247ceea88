import Basics
import CDRM
import Logging
import System
import Threading

/// What a KMS device offers, found once when the display opens: the connected output
/// and its mode, and the planes (libdrm's resource calls).
extension DRMDisplay {
    /// A display mode: `preview.mode`, and what the connector was set to.
    public struct Mode: Sendable, Equatable, CustomStringConvertible {
        public var width: Int
        public var height: Int
        /// Hz; 0 in a request: any.
        public var refresh: Int
        public init(width: Int, height: Int, refresh: Int) {
            self.width = width
            self.height = height
            self.refresh = refresh
        }
        public var description: String { "\(width)x\(height)@\(refresh)" }
    }
    /// The first connected connector, its preferred mode (else the first: drivers list the
    /// best first) or the one asked for, and the CRTC driving it (or the first one its
    /// encoder can drive).
    static func findOutput(fd: FileDescriptor, path: String, mode wanted: Mode?) throws
        -> (connector: UInt32, mode: drmModeModeInfo, crtc: UInt32, crtcIndex: Int, name: String) {
        guard let resources = drmModeGetResources(fd.rawValue) else {
            throw DeviceError.setting(key: "preview.device", value: path, reason: "not a KMS display (\(Errno.current))")
        }
        defer { drmModeFreeResources(resources) }
        let crtcs = (0..<Int(resources.pointee.count_crtcs)).map { resources.pointee.crtcs[$0] }
        for i in 0..<Int(resources.pointee.count_connectors) {
            guard let connector = drmModeGetConnector(fd.rawValue, resources.pointee.connectors[i]) else { continue }
            defer { drmModeFreeConnector(connector) }
            guard onair_drm_connected(connector) != 0, connector.pointee.count_modes > 0 else { continue }
            let modes = (0..<Int(connector.pointee.count_modes)).map { connector.pointee.modes[$0] }
            let type = String(cString: drmModeGetConnectorTypeName(connector.pointee.connector_type))
            let name = "\(type)-\(connector.pointee.connector_type_id)"
            let mode: drmModeModeInfo
            if let wanted {
                let offered = modes.map { Mode(width: Int($0.hdisplay), height: Int($0.vdisplay), refresh: Int($0.vrefresh)) }
                guard let index = offered.firstIndex(where: { $0.width == wanted.width && $0.height == wanted.height
                    && (wanted.refresh == 0 || $0.refresh == wanted.refresh) }) else {
                    throw DeviceError.setting(key: "preview.mode", value: "\(wanted.width)x\(wanted.height)\(wanted.refresh > 0 ? "@\(wanted.refresh)" : "")",
                        reason: "\(name) on \(path) offers \(Array(Set(offered.map(\.description))).sorted().prefix(12).joined(separator: ", "))")
                }
                mode = modes[index]
            } else {
                mode = modes.first { $0.type & UInt32(DRM_MODE_TYPE_PREFERRED) != 0 } ?? modes[0]
            }
            var crtc: UInt32 = 0
            if connector.pointee.encoder_id != 0, let encoder = drmModeGetEncoder(fd.rawValue, connector.pointee.encoder_id) {
                crtc = encoder.pointee.crtc_id
                drmModeFreeEncoder(encoder)
            }
            if crtc == 0, connector.pointee.count_encoders > 0, let encoder = drmModeGetEncoder(fd.rawValue, connector.pointee.encoders[0]) {
                crtc = crtcs.indices.first { encoder.pointee.possible_crtcs & (1 << UInt32($0)) != 0 }.map { crtcs[$0] } ?? 0
                drmModeFreeEncoder(encoder)
            }
            guard crtc != 0, let index = crtcs.firstIndex(of: crtc) else { continue }
            return (connector.pointee.connector_id, mode, crtc, index, name)
        }
        throw DeviceError.setting(key: "preview.device", value: path, reason: "no connected display")
    }

    /// Every plane with its type, CRTCs and formats (DRM_IOCTL_MODE_GETPLANERESOURCES).
    static func planes(fd: FileDescriptor) -> [DisplayPlane] {
        guard let resources = drmModeGetPlaneResources(fd.rawValue) else { return [] }
        defer { drmModeFreePlaneResources(resources) }
        return (0..<Int(resources.pointee.count_planes)).compactMap { i in
            guard let plane = drmModeGetPlane(fd.rawValue, resources.pointee.planes[i]) else { return nil }
            defer { drmModeFreePlane(plane) }
            let id = plane.pointee.plane_id
            let type = KMSProperties.value(fd: fd, object: id, type: UInt32(DRM_MODE_OBJECT_PLANE), name: "type")
            return DisplayPlane(id: id, kind: type.flatMap(DisplayPlane.Kind.init(rawValue:)) ?? .overlay,
                                possibleCRTCs: plane.pointee.possible_crtcs,
                                formats: (0..<Int(plane.pointee.count_formats)).map { FourCC(rawValue: plane.pointee.formats[$0]) },
                                crtcID: plane.pointee.crtc_id)
        }
    }
}

/// Where a picture of `source` size goes inside `target`, aspect kept, centred, even
/// coordinates (letterbox or pillarbox).
public func letterbox(source: (width: Int, height: Int), target: (width: Int, height: Int)) -> (x: Int, y: Int, width: Int, height: Int) {
    guard source.width > 0, source.height > 0 else { return (0, 0, target.width, target.height) }
    var width = target.width, height = target.width * source.height / source.width
    if height > target.height {
        height = target.height
        width = target.height * source.width / source.height
    }
    width &= ~1
    height &= ~1
    return (((target.width - width) / 2) & ~1, ((target.height - height) / 2) & ~1, width, height)
}

extension DRMDisplay {
    /// libdrm, for `onair version` (it reports its version only for an open device).
    public static var libraryVersion: LibraryVersion {
        LibraryVersion("libdrm", "", debianSource: debianSource("libdrm", onair_debian_libdrm()))
    }
}
