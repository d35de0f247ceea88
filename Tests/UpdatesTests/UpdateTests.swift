import Foundation
import XCTest
@testable import Updates
import TestSupport
import Threading
import Logging

/// `onair update`: its command line, RAUC's progress lines, and the download of a bundle
/// (bounded, streamed to a file, never left half where the install would read it). The
/// install itself runs on the board's real RAUC in `make vm-test`.
final class UpdateTests: XCTestCase {
    /// RAUC's CLI says "NN% step" while it installs; nothing else is taken for progress.
    func testRAUCsProgressLines() {
        XCTAssertEqual(Update.progress("0% Installing").map { "\($0.percent) \($0.step)" }, "0 Installing")
        XCTAssertEqual(Update.progress("100% Installing done.").map { "\($0.percent) \($0.step)" }, "100 Installing done.")
        for line in ["installing", "LastError: Failed verifying", "%", "101% x", "-5% x", "1234% x", "five% x", "99999999999999999999% x"] {
            XCTAssertNil(Update.progress(line), line)
        }
    }

    func testABundleIsDownloadedWholeOrNotAtAll() throws {
        let body = (0..<1_500_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let server = try RecordingServer(reply: { request in
            switch request.path {
            case "/bundle.raucb": return .answer(200, headers: [:], body: body)
            case "/missing.raucb": return .status(404)
            default: return .reset
            }
        })
        let directory = NSTemporaryDirectory() + "onair-update-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = "http://127.0.0.1:\(server.port)"

        let path = try Update.download(url + "/bundle.raucb", into: directory)
        XCTAssertEqual(path, directory + "/bundle.raucb")
        XCTAssertEqual(FileManager.default.contents(atPath: path), Data(body))

        XCTAssertThrowsError(try Update.download(url + "/bundle.raucb", into: directory, limit: 1 << 20)) {
            XCTAssertEqual("\($0)", "\(url)/bundle.raucb: larger than 1 MiB")
        }
        XCTAssertThrowsError(try Update.download(url + "/missing.raucb", into: directory)) {
            XCTAssertEqual("\($0)", "\(url)/missing.raucb: HTTP 404")
        }
        XCTAssertThrowsError(try Update.download(url + "/reset.raucb", into: directory))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), ["bundle.raucb"], "no .part left behind")
    }

    /// A server that promises more than it sends, or stops sending half-way: refused with
    /// what went wrong, and nothing left for the install to read.
    func testADownloadThatLiesOrStallsIsRefused() throws {
        let half = [UInt8](repeating: 7, count: 100_000)
        let server = try RecordingServer(reply: { request in
            request.path == "/lies.raucb" ? .partial(declared: 1_000_000, body: half, thenWait: 0)
                : .partial(declared: 1_000_000, body: half, thenWait: 30)
        })
        let directory = NSTemporaryDirectory() + "onair-update-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory); server.stop() }
        let url = "http://127.0.0.1:\(server.port)"
        XCTAssertThrowsError(try Update.download(url + "/lies.raucb", into: directory)) {
            XCTAssertTrue("\($0)".hasPrefix("\(url)/lies.raucb: "), "\($0)")
        }
        XCTAssertThrowsError(try Update.download(url + "/stalls.raucb", into: directory, lowSpeed: (8192, 2))) {
            XCTAssertEqual("\($0)", "\(url)/stalls.raucb: slower than 8 kB/s for 2 s (the server is trickling)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), [], "nothing left half-written")
    }

    /// A bundle whose root file system is larger than a slot is refused before RAUC
    /// writes (it would fail only at the slot's end); the sizes are those of the signed
    /// manifest (`rauc info`) and of the slots' devices.
    func testABundleLargerThanTheSlotIsRefused() throws {
        let directory = NSTemporaryDirectory() + "onair-fits-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (name, mib) in [("a", 16), ("b", 8)] {
            FileManager.default.createFile(atPath: "\(directory)/root-\(name)", contents: nil)
            try FileHandle(forWritingTo: URL(fileURLWithPath: "\(directory)/root-\(name)")).truncate(atOffset: UInt64(mib) << 20)
        }
        let configuration = directory + "/system.conf"
        try """
        [system]
        compatible=onair-test
        [slot.rootfs.0]
        device=\(directory)/root-a
        type=ext4
        [slot.rootfs.1]
        device=\(directory)/root-b
        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        XCTAssertEqual(Installer.rootSlots(try String(contentsOfFile: configuration, encoding: .utf8)).map(\.name), ["rootfs.0", "rootfs.1"])
        let rauc = directory + "/rauc"
        func manifest(_ size: String) throws {
            try "#!/bin/sh\n[ \"$1\" = info ] || exit 9\necho \"RAUC_MF_COMPATIBLE='onair-test'\"\necho \"RAUC_IMAGE_CLASS_1='rootfs'\"\necho RAUC_IMAGE_SIZE_1=\(size)\n"
                .write(toFile: rauc, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: rauc)
        }
        try manifest("\(12 << 20)")
        XCTAssertThrowsError(try Installer.checkFits("b.raucb", rauc: rauc, systemConfiguration: configuration)) {
            XCTAssertEqual("\($0)", "its root file system (12 MiB) is larger than slot rootfs.1 (8 MiB)")
        }
        try manifest("99999999999999999999999")
        XCTAssertThrowsError(try Installer.checkFits("b.raucb", rauc: rauc, systemConfiguration: configuration), "no Int traps on it")
        try manifest("\(8 << 20)")
        XCTAssertNoThrow(try Installer.checkFits("b.raucb", rauc: rauc, systemConfiguration: configuration))
        try "#!/bin/sh\nexit 1\n".write(toFile: rauc, atomically: true, encoding: .utf8)
        XCTAssertNoThrow(try Installer.checkFits("b.raucb", rauc: rauc, systemConfiguration: configuration), "RAUC's install says what is wrong")
    }

    /// The install's state file: what it says round-trips, nothing in it can trap, and a
    /// running install whose process is gone reads as failed.
    func testTheInstallStateFile() throws {
        var state = InstallState(.installing, source: "http://x/b.raucb", pid: 1)
        state.percent = 40
        state.step = "Copying image\nto rootfs.1"
        state.bytes = 123_456_789
        let parsed = InstallState(text: state.text)
        XCTAssertEqual(parsed?.step, "Copying image to rootfs.1", "one line each")
        XCTAssertEqual(parsed?.percent, 40)
        XCTAssertEqual(parsed?.bytes, 123_456_789)
        XCTAssertNil(parsed?.error)
        XCTAssertEqual(parsed?.id, state.id)
        for bad in ["phase=installing\nsource=x\npercent=99999999999999999999\nbytes=0\npid=1\nstarted=1\n",
                    "phase=installing\nsource=x\npercent=101\nbytes=0\npid=1\nstarted=1\n",
                    "phase=installing\nsource=x\npercent=-1\nbytes=0\npid=1\nstarted=1\n",
                    "phase=installing\nsource=x\npercent=1\nbytes=0\npid=99999999999\nstarted=1\n",
                    "phase=installing\nsource=x\npercent=1\nbytes=0\npid=1\nstarted=9999999999999999999999\n",
                    "phase=installing\nsource=x\npercent=1\nbytes=0\npid=1\n",
                    "phase=dancing\nsource=x\npercent=1\nbytes=0\npid=1\nstarted=1\n", ""] {
            XCTAssertNil(InstallState(text: bad), bad)
        }
        let directory = NSTemporaryDirectory() + "onair-install-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/update.state"
        // A pid that cannot be running: the install stopped half-way.
        let report = InstallReport(path: path, InstallState(.installing, source: "a.raucb", pid: Int32.max - 1))
        XCTAssertEqual(InstallState.read(path)?.phase, .failed)
        XCTAssertEqual(InstallState.read(path)?.error?.contains("stopped half-way"), true)
        XCTAssertNil(InstallReport.busy(at: path))
        report.update { $0.pid = getppid() }
        XCTAssertEqual(InstallState.read(path)?.phase, .installing)
        XCTAssertNotNil(InstallReport.busy(at: path), "another process installs")
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        XCTAssertNil(InstallState.read(path), "not a regular file")
    }
}

/// The slots as the boot loader's entries say, and the confirmation of an update's first boot.
final class BootSlotsTests: XCTestCase {
    func testTheBootedSlotAndItsState() {
        let line = "initrd=\\a\\initrd.img root=PARTLABEL=onair-root-a rauc.slot=A ro quiet"
        XCTAssertEqual(BootSlots.parse(commandLine: line, entries: ["onair-1-a.conf"]), BootSlots(booted: "A", trial: false, rolledBack: false))
        // An update's first boot: systemd-boot took its one try (+1 → +0-1) before booting it.
        XCTAssertEqual(BootSlots.parse(commandLine: "rauc.slot=B ro", entries: ["onair-1-a.conf", "onair-2-b+0-1.conf"]),
                       BootSlots(booted: "B", trial: true, rolledBack: false))
        // The try was used up without a confirmation: A boots again, and says so.
        XCTAssertEqual(BootSlots.parse(commandLine: "rauc.slot=A\n", entries: ["onair-1-a.conf", "onair-2-b+0-1.conf"]),
                       BootSlots(booted: "A", trial: false, rolledBack: true))
        // Confirmed B, then A updated and confirmed: nothing rolled back.
        XCTAssertEqual(BootSlots.parse(commandLine: "rauc.slot=A", entries: ["onair-3-a.conf", "onair-2-b.conf", "loader.conf"]),
                       BootSlots(booted: "A", trial: false, rolledBack: false))
        // An older bad entry is no news.
        XCTAssertEqual(BootSlots.parse(commandLine: "rauc.slot=B", entries: ["onair-1-a+0.conf", "onair-2-b.conf"])?.rolledBack, false)
        for (line, entries) in [("ro quiet", ["onair-1-a.conf"]), ("rauc.slot=C", ["onair-1-a.conf"]), ("rauc.slot=B", ["onair-1-a.conf"])] {
            XCTAssertNil(BootSlots.parse(commandLine: line, entries: entries), line)
        }
    }

    /// The Raspberry Pi's slots: autoboot.txt commits one, the try's file says the rest.
    func testTheRaspberryPisSlots() {
        let a = "[all]\ntryboot_a_b=1\nboot_partition=2\n[tryboot]\nboot_partition=3\n"
        let b = "[all]\ntryboot_a_b=1\nboot_partition=3\n[tryboot]\nboot_partition=2\n"
        let line = "coherent_pool=1M console=ttyAMA10,115200 root=PARTUUID=6f6e6169-05 rauc.slot=A ro rootwait\n"
        XCTAssertEqual(BootSlots.parse(commandLine: line, autoboot: a, try: ""), BootSlots(booted: "A", trial: false, rolledBack: false))
        // Installed, not yet tried: nothing to say until onair reboots into it.
        XCTAssertEqual(BootSlots.parse(commandLine: line, autoboot: a, try: "B installed\n"), BootSlots(booted: "A", trial: false, rolledBack: false))
        // B booted once by kexec, A still committed: B is on trial.
        XCTAssertEqual(BootSlots.parse(commandLine: "root=PARTUUID=6f6e6169-06 rauc.slot=B", autoboot: a, try: "B trying\n"),
                       BootSlots(booted: "B", trial: true, rolledBack: false))
        // A reset during the try (the firmware boots A), or the try given up: rolled back.
        XCTAssertEqual(BootSlots.parse(commandLine: line, autoboot: a, try: "B trying"), BootSlots(booted: "A", trial: false, rolledBack: true))
        XCTAssertEqual(BootSlots.parse(commandLine: line, autoboot: a, try: "B bad"), BootSlots(booted: "A", trial: false, rolledBack: true))
        // B committed (its try's file gone), then booted by the firmware.
        XCTAssertEqual(BootSlots.parse(commandLine: "rauc.slot=B", autoboot: b, try: ""), BootSlots(booted: "B", trial: false, rolledBack: false))
        XCTAssertEqual(BootSlots.committedSlot(b), "B")
        // Only [all] commits; a file naming no slot's partition is no A/B board.
        XCTAssertEqual(BootSlots.committedSlot("[tryboot]\nboot_partition=3\n[all]\nboot_partition=2"), "A")
        for text in ["", "[all]\nboot_partition=5", "[tryboot]\nboot_partition=3", "boot_partition=99999999999999999999"] {
            XCTAssertNil(BootSlots.parse(commandLine: line, autoboot: text, try: ""), text)
        }
        XCTAssertNil(BootSlots.parse(commandLine: "ro quiet", autoboot: a, try: ""))
        // A try's file that is not two words says nothing.
        XCTAssertEqual(BootSlots.parse(commandLine: line, autoboot: a, try: "B"), BootSlots(booted: "A", trial: false, rolledBack: false))
        XCTAssertEqual(BootSlots.parse(commandLine: line, autoboot: a, try: "C trying"), BootSlots(booted: "A", trial: false, rolledBack: false))
    }

    /// The Pi's backend (image/rootfs/onair-slot-rpi) knows when the board cannot try a slot
    /// by kexec: CPUs the firmware started with spin tables (a Pi 4's) cannot go offline,
    /// and sysfs gives them no `online` file.
    func testThePiBackendKnowsWhenItCannotKexec() throws {
        let script = URL(fileURLWithPath: #filePath).appendingPathComponent("../../../image/rootfs/onair-slot-rpi").standardized.path
        let root = NSTemporaryDirectory() + "onair-cpus-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let files = FileManager.default
        for cpu in 0..<4 { try files.createDirectory(atPath: root + "/sys/devices/system/cpu/cpu\(cpu)", withIntermediateDirectories: true) }
        try files.createDirectory(atPath: root + "/bin", withIntermediateDirectories: true)
        func canTry() throws -> (status: Int32, said: String) {
            let process = Process(), output = Pipe()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = [script, "can-try"]
            process.environment = ["ONAIR_SYSFS": root + "/sys", "PATH": root + "/bin"]
            process.standardOutput = output
            try process.run()
            let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, said)
        }
        let stuck = try canTry()
        XCTAssertEqual(stuck.status, 1)
        XCTAssertTrue(stuck.said.contains("spin tables"), stuck.said)
        for cpu in 1..<4 { files.createFile(atPath: root + "/sys/devices/system/cpu/cpu\(cpu)/online", contents: Data("1\n".utf8)) }
        XCTAssertTrue(try canTry().said.contains("kexec is missing"))
        files.createFile(atPath: root + "/bin/kexec", contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
        XCTAssertEqual(try canTry().status, 0, "PSCI (a Pi 5, the virt machine): every CPU but the first can go offline")
    }

    /// Entry names are read without trusting them: no number in one can trap.
    func testEntryNames() {
        XCTAssertEqual(BootSlots.Entry("onair-12-b+0-1.conf"), BootSlots.Entry(generation: 12, slot: "B", triesLeft: 0))
        XCTAssertEqual(BootSlots.Entry("onair-7-a.conf"), BootSlots.Entry(generation: 7, slot: "A", triesLeft: nil))
        for name in ["onair-99999999999999999999-a.conf", "onair-1-a+99999999999999999999.conf", "onair--a.conf", "onair-1-c.conf",
                     "onair-1-a-3.conf", "onair-1-a+.conf", "onair-x-a.conf", "other.conf", "onair-1-a.conf.new", "onair-+1-a.conf"] {
            XCTAssertNil(BootSlots.Entry(name), name)
        }
    }

    func testWhatStatusSays() {
        let back = UpdateStatus(BootSlots(booted: "A", trial: false, rolledBack: true), version: "0.1.0-x", reason: nil)
        XCTAssertEqual(back.state, "rolled_back")
        XCTAssertTrue(back.reason?.contains("did not come up") == true)
        XCTAssertEqual(UpdateStatus(BootSlots(booted: "A", trial: false, rolledBack: true), version: nil, reason: "onair was not healthy").reason,
                       "onair was not healthy")
        XCTAssertNil(UpdateStatus(BootSlots(booted: "B", trial: true, rolledBack: false), version: nil, reason: "old news").reason)
        XCTAssertEqual(UpdateStatus(BootSlots(booted: "B", trial: true, rolledBack: false), version: nil, reason: nil).state, "trial")
    }

    /// Health must hold without a break for the whole time; then the slot is marked good once.
    func testTheSlotIsConfirmedAfterUnbrokenHealth() {
        let checks = Locked(0), marks = Locked(0), marked = Completion()
        let status = Locked(UpdateStatus(BootSlots(booted: "B", trial: true, rolledBack: false), version: nil, reason: nil))
        // Healthy, then a failure at the third check, then healthy again.
        let confirmation = SlotConfirmation(seconds: 1, status: status, healthy: {
            checks.withLock { $0 += 1; return $0 != 3 }
        }, markGood: { marks.withLock { $0 += 1 }; marked.signal(); return 0 }, log: .silent())
        confirmation.start(interval: 0.2)
        XCTAssertTrue(marked.wait(seconds: 30))
        confirmation.stop()  // joined: what it did after marking is done
        XCTAssertEqual(status.withLock { $0.state }, "confirmed")
        XCTAssertEqual(marks.withLock { $0 }, 1)
        XCTAssertGreaterThanOrEqual(checks.withLock { $0 }, 3 + 5, "the break at the third check started the second over")
    }
}
