import XCTest
import Logging
@testable import Devices
import Media

/// Plane tables as the drivers report them (drm_info on the machine named: id, "type"
/// property, possible_crtcs, formats), trimmed to the formats that matter here.
enum RecordedPlanes {
    static func formats(_ codes: String) -> [FourCC] { codes.split(separator: " ").map { FourCC(String($0)) } }
    /// virtio-gpu (QEMU, Linux 6.1): one primary and one cursor plane per output, no overlay.
    static let virtioGPU = [
        DisplayPlane(id: 31, kind: .primary, possibleCRTCs: 0x1, formats: formats("XR24"), crtcID: 36),
        DisplayPlane(id: 33, kind: .cursor, possibleCRTCs: 0x1, formats: formats("AR24"))
    ]
    /// vc4 on a Raspberry Pi 4 (HVS planes): a primary and a cursor for each CRTC, overlays
    /// usable on any; YUV 4:2:0 and 4:2:2 planar and semi-planar, but no packed YUYV.
    static let vc4Pi4: [DisplayPlane] = {
        let hvs = formats("XR24 AR24 AB24 XB24 RG16 BG16 AR15 XR15 RG24 BG24 YU16 YV16 YU12 YV12 NV12 NV21 NV16 NV61")
        var planes = [
            DisplayPlane(id: 48, kind: .primary, possibleCRTCs: 0x1, formats: hvs, crtcID: 92),
            DisplayPlane(id: 52, kind: .primary, possibleCRTCs: 0x2, formats: hvs),
            DisplayPlane(id: 58, kind: .cursor, possibleCRTCs: 0x1, formats: hvs),
            DisplayPlane(id: 62, kind: .cursor, possibleCRTCs: 0x2, formats: hvs)
        ]
        for id in [70, 76, 82, 88] { planes.append(DisplayPlane(id: UInt32(id), kind: .overlay, possibleCRTCs: 0x3, formats: hvs)) }
        return planes
    }()
    /// i915 (Skylake): a primary, sprite planes taking packed YUV and NV12, and a cursor per pipe.
    static let i915: [DisplayPlane] = [
        DisplayPlane(id: 30, kind: .primary, possibleCRTCs: 0x1, formats: formats("RG16 XR24 XB24 AR24 AB24 XR30 XB30"), crtcID: 51),
        DisplayPlane(id: 38, kind: .overlay, possibleCRTCs: 0x1, formats: formats("RG16 XR24 XB24 AR24 AB24 YUYV YVYU UYVY VYUY NV12")),
        DisplayPlane(id: 47, kind: .cursor, possibleCRTCs: 0x1, formats: formats("AR24")),
        DisplayPlane(id: 52, kind: .primary, possibleCRTCs: 0x2, formats: formats("XR24 AR24"))
    ]
    /// vkms with enable_overlay=1 (Linux 6.1): an overlay, but only RGB formats.
    static let vkmsOverlay = [
        DisplayPlane(id: 31, kind: .primary, possibleCRTCs: 0x1, formats: formats("XR24 AR24 XR48 AR48 RG16")),
        DisplayPlane(id: 33, kind: .overlay, possibleCRTCs: 0x1, formats: formats("XR24 AR24 XR48 AR48 RG16")),
        DisplayPlane(id: 35, kind: .cursor, possibleCRTCs: 0x1, formats: formats("XR24 AR24 XR48 AR48 RG16"))
    ]
}

final class PlanePlanTests: XCTestCase {
    func testVirtioGPUHasOnlyThePrimaryPlane() {
        let plan = PlanePlan.choose(planes: RecordedPlanes.virtioGPU, crtcIndex: 0, crtcID: 36, camera: .yuyv)
        XCTAssertEqual(plan, PlanePlan(primary: 31, overlay: nil, picture: .converted, reason: "no overlay plane on this CRTC"))
        XCTAssertEqual(plan?.description, "primary XR24 (converted)")
    }

    func testAPiCameraInNV12IsScannedOutAsItIs() {
        let plan = PlanePlan.choose(planes: RecordedPlanes.vc4Pi4, crtcIndex: 0, crtcID: 92, camera: .nv12)
        XCTAssertEqual(plan, PlanePlan(primary: 48, overlay: 70, picture: .imported(.nv12)))
        XCTAssertEqual(plan?.description, "overlay NV12 (camera DMABUF, zero copy)")
    }

    func testAYUYVWebcamOnAPiIsCopiedIntoAPlanarOverlay() {
        let plan = PlanePlan.choose(planes: RecordedPlanes.vc4Pi4, crtcIndex: 0, crtcID: 92, camera: .yuyv)
        XCTAssertEqual(plan?.picture, .copied(.yu12), "vc4 takes no packed YUYV; I420 copies row by row into YU12")
        XCTAssertEqual(plan?.reason, "no overlay takes the camera's YUYV")
    }

    func testThePrimaryPlaneBelongsToTheCRTC() {
        let plan = PlanePlan.choose(planes: RecordedPlanes.vc4Pi4, crtcIndex: 1, crtcID: 93, camera: nil)
        XCTAssertEqual(plan?.primary, 52, "the second HDMI port's primary, not the first's")
        XCTAssertEqual(plan?.picture, .copied(.yu12))
        XCTAssertEqual(plan?.reason, "the camera's buffers cannot be shared (no DMABUF)")
    }

    func testIntelSpritesTakeTheWebcamsYUYV() {
        XCTAssertEqual(PlanePlan.choose(planes: RecordedPlanes.i915, crtcIndex: 0, crtcID: 51, camera: .yuyv),
                       PlanePlan(primary: 30, overlay: 38, picture: .imported(.yuyv)))
        XCTAssertEqual(PlanePlan.choose(planes: RecordedPlanes.i915, crtcIndex: 1, crtcID: 0, camera: .yuyv)?.picture, .converted,
                       "pipe B has no sprite here")
    }

    func testAnRGBOnlyOverlayIsNoUse() {
        let plan = PlanePlan.choose(planes: RecordedPlanes.vkmsOverlay, crtcIndex: 0, crtcID: 0, camera: nil)
        XCTAssertEqual(plan, PlanePlan(primary: 31, overlay: nil, picture: .converted, reason: "no overlay takes a YUV format"))
    }

    func testNoPrimaryPlaneMeansTheLegacyPath() {
        XCTAssertNil(PlanePlan.choose(planes: [], crtcIndex: 0, crtcID: 1, camera: .nv12))
    }

    func testBufferLayouts() {
        XCTAssertEqual(yuvLayout(.nv12, pitch: 704, height: 480)?.offsets, [0, 704 * 480])
        XCTAssertEqual(yuvLayout(.yu12, pitch: 704, height: 480)?.pitches, [704, 352, 352])
        XCTAssertEqual(yuvLayout(.yu12, pitch: 704, height: 480)?.offsets, [0, 337_920, 337_920 + 352 * 240])
        XCTAssertEqual(yuvLayout(.yuyv, pitch: 1280, height: 480)?.pitches, [1280])
        XCTAssertNil(yuvLayout(.mjpeg, pitch: 0, height: 0))
        XCTAssertEqual(dumbBufferShape(.nv12, height: 480)?.rows, 720)
        XCTAssertEqual(dumbBufferShape(.uyvy, height: 480)?.bitsPerPixel, 16)
        XCTAssertEqual(dumbBufferShape(.xrgb8888, height: 480)?.bitsPerPixel, 32)
    }
}

final class DisplayPictureTests: XCTestCase {
    /// An I420 picture whose every sample differs from its neighbours.
    static func picture(width: Int, height: Int) -> [UInt8] {
        (0..<VideoFrame.byteCount(width: width, height: height)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 13) }
    }

    /// Into the overlay's buffer (padded pitch) and back: the same picture, byte for byte.
    func testCopiesIntoEachOverlayFormatKeepThePicture() {
        let width = 16, height = 8, pitch = 48
        let source = Self.picture(width: width, height: height)
        for format in [FourCC.yu12, .nv12] {
            var buffer = [UInt8](repeating: 0xEE, count: pitch * height * 3 / 2)
            let copied = source.withUnsafeBytes { planes in
                buffer.withUnsafeMutableBytes { PixelConversion.fromI420(planes, width: width, height: height, format: format, pitch: pitch, into: $0.baseAddress!) }
            }
            XCTAssertTrue(copied)
            var back = [UInt8](repeating: 0, count: source.count)
            let read = buffer.withUnsafeBytes {
                PixelConversion.toI420($0, format: format, width: width, height: height, stride: pitch, into: &back)
            }
            XCTAssertTrue(read)
            XCTAssertEqual(back, source, "\(format)")
            XCTAssertEqual(buffer[width], 0xEE, "\(format): the pitch padding is not written")
        }
    }

    func testPackedFormatsRepeatEachChromaRowForTwoLumaRows() {
        let width = 8, height = 4, pitch = 2 * width
        let source = Self.picture(width: width, height: height)
        for format in [FourCC.yuyv, .uyvy] {
            var buffer = [UInt8](repeating: 0, count: pitch * height)
            _ = source.withUnsafeBytes { planes in
                buffer.withUnsafeMutableBytes { PixelConversion.fromI420(planes, width: width, height: height, format: format, pitch: pitch, into: $0.baseAddress!) }
            }
            var back = [UInt8](repeating: 0, count: source.count)
            _ = buffer.withUnsafeBytes { PixelConversion.toI420($0, format: format, width: width, height: height, stride: pitch, into: &back) }
            XCTAssertEqual(back, source, "\(format): two equal chroma rows average back to the same")
            let luma = format == .yuyv ? buffer[0] : buffer[1]
            XCTAssertEqual(luma, source[0])
        }
        XCTAssertFalse(source.withUnsafeBytes { planes in
            var buffer = [UInt8](repeating: 0, count: 64)
            return buffer.withUnsafeMutableBytes { PixelConversion.fromI420(planes, width: 8, height: 4, format: .mjpeg, pitch: 16, into: $0.baseAddress!) }
        })
    }
}

final class DisplayTests: XCTestCase {
    func testLetterboxAndPillarbox() {
        XCTAssertEqual(letterbox(source: (1280, 720), target: (1920, 1080)).width, 1920, "same aspect: the whole screen")
        let box = letterbox(source: (1280, 720), target: (1024, 768))
        XCTAssertEqual([box.x, box.y, box.width, box.height], [0, 96, 1024, 576], "bars above and below")
        let pillar = letterbox(source: (480, 854), target: (1280, 720))
        XCTAssertEqual([pillar.x, pillar.y, pillar.width, pillar.height], [438, 0, 404, 720], "a portrait camera: bars at the sides")
    }

    func testANodeThatIsNoDisplayIsOneClearError() {
        XCTAssertThrowsError(try DRMDisplay.open("/dev/null", picture: (640, 360), camera: nil, log: .silent())) {
            XCTAssertTrue("\($0)".hasPrefix("preview.device /dev/null: not a KMS display"), "\($0)")
        }
    }

    /// The indicators drawn over a buffer filled with `start`; returns a pixel reader.
    func pixels(_ indicators: DRMDisplay.Indicators, width: Int, height: Int, pitch: Int, start: UInt8 = 0) -> (Int, Int) -> UInt32 {
        var memory = [UInt8](repeating: start, count: pitch * height)
        memory.withUnsafeMutableBytes { ScreenIndicators.draw(indicators, into: $0.baseAddress!, pitch: pitch, width: width, height: height) }
        let drawn = memory
        return { x, y in drawn.withUnsafeBytes { $0.load(fromByteOffset: y * pitch + x * 4, as: UInt32.self) } }
    }

    func testTheRecordingIndicatorIsARedFrameAroundTheScreen() {
        let width = 40, height = 30, pitch = width * 4 + 16  // a driver's padded pitch
        let pixel = pixels(.init(recording: true, uplinkFailing: false), width: width, height: height, pitch: pitch, start: 0x55)
        XCTAssertEqual(pixel(0, 0), ScreenIndicators.red)
        XCTAssertEqual(pixel(39, 29), ScreenIndicators.red)
        XCTAssertEqual(pixel(7, 15), ScreenIndicators.red, "8 pixels thick")
        XCTAssertEqual(pixel(8, 15), 0x5555_5555, "the picture inside is left alone")
        XCTAssertEqual(pixel(20, 8), 0x5555_5555)
        let idle = pixels(.init(recording: false, uplinkFailing: false), width: width, height: height, pitch: pitch, start: 0x55)
        XCTAssertEqual(idle(0, 0), 0, "not recording: the strip is black again")
        XCTAssertEqual(idle(20, 15), 0x5555_5555)
    }

    func testTheUplinkWarningIsAnAmberCornerTopRight() {
        let width = 640, height = 360, pitch = width * 4
        let pixel = pixels(.init(recording: true, uplinkFailing: true), width: width, height: height, pitch: pitch)
        XCTAssertEqual(pixel(width - 1, 0), ScreenIndicators.amber)
        XCTAssertEqual(pixel(width - 96, 7), ScreenIndicators.amber, "along the top")
        XCTAssertEqual(pixel(width - 97, 7), ScreenIndicators.red)
        XCTAssertEqual(pixel(width - 8, 95), ScreenIndicators.amber, "down the right side")
        XCTAssertEqual(pixel(width - 8, 96), ScreenIndicators.red)
        XCTAssertEqual(pixel(width - 9, 20), 0, "inside the strip: the picture's")
    }
}
