#!/usr/bin/env python3
"""make image-check BOARD=rpi4|rpi5: what a Raspberry Pi needs of the image, checked on the
image file without a Pi (the firmware's view of it; booting it is make vm-test BOARD=rpi4).

  scripts/check_rpi_boot.py IMAGE BOARD_DIR

- an MBR (disk identifier 0x6f6e6169) of the A/B layout: 1 FAT (type 0c) labelled
  ONAIR-BOOT with the owner's onair.conf and autoboot.txt, which sends the firmware to
  partition 2 ([all]) and would send a try to 3 ([tryboot]); 2 and 3 FAT, slot A's and
  slot B's boot partitions (ONAIR-BOOTA, ONAIR-BOOTB, B empty); 4 extended, holding 5 and 6
  (the root slots, ext4 onair-root in 5) and 7 (ext4 onair-data);
- on partition 2: the firmware files the board boots with (the Pi 4's start4*.elf and
  fixup4*.dat; the Pi 5 boots from its EEPROM), the board's device trees (valid FDTs
  naming the board), an arm64 Linux kernel and an initramfs, config.txt and cmdline.txt,
  exactly the files slot A's root carries for it (what an update writes into 3 from B's);
- config.txt: 64-bit, the UART on, the kernel and initramfs it names present on the FAT,
  the board's own lines, the camera's when the image is made for a CSI camera;
- cmdline.txt: one line; root slot A by PARTUUID, rauc.slot=A, read-only, panic=10, the
  board's serial console;
- in the root, onair itself is an aarch64 ELF, RAUC's system.conf names both slots and
  the onair-slot backend, kexec is there, and the kernel's modules are the board's list
  (board/<name>/modules) with what they need.

Prints one line per check and `N passed, N failed`; exits 1 on any failure.
"""
import gzip
import json
import os
import shlex
import struct
import subprocess
import sys
import tempfile

results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    return ok


def board_conf(board_dir):
    """The board's variables, as image/build.sh reads them (sourced by the shell)."""
    names = ["ARCH", "BOOT", "SERIAL", "DTBS", "CONFIG_TXT", "CAMERA", "CSI_CONFIG_TXT", "CSI_MODULES"]
    script = f". {shlex.quote(os.path.join(board_dir, 'board.conf'))}; " + \
        "; ".join(f'printf "%s\\0" "${n}"' for n in names)
    values = subprocess.run(["bash", "-c", script], check=True, capture_output=True).stdout.decode().split("\0")
    return dict(zip(names, values))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_rpi_boot.py IMAGE BOARD_DIR")
    image, board_dir = sys.argv[1], sys.argv[2]
    board = os.path.basename(os.path.normpath(board_dir))
    conf = board_conf(board_dir)
    camera = os.environ.get("CAMERA") or conf["CAMERA"] or "usb"

    table = json.loads(subprocess.run(["sfdisk", "--json", image], check=True, capture_output=True).stdout)["partitiontable"]
    parts = {int(p["node"][len(image):]): p for p in table["partitions"] if p["node"][len(image):].isdigit()}
    check("MBR partition table, disk identifier 0x6f6e6169 (the slots' PARTUUIDs 6f6e6169-0N)",
          table["label"] == "dos" and table.get("id") == "0x6f6e6169", f"{table['label']} {table.get('id')}")
    check("seven partitions: three FAT, an extended one holding three Linux ones", sorted(parts) == list(range(1, 8)), str(sorted(parts)))
    if sorted(parts) != list(range(1, 8)):
        return
    for number in (1, 2, 3):
        check(f"partition {number} is FAT32 (LBA){', bootable' if number == 1 else ''}",
              parts[number]["type"] == "c" and (number != 1 or parts[number].get("bootable", False)), f"type {parts[number]['type']}")
    check("partition 4 is extended, holding 5-7", parts[4]["type"] in ("5", "f")
          and all(parts[4]["start"] < parts[n]["start"] and parts[n]["start"] + parts[n]["size"] <= parts[4]["start"] + parts[4]["size"] for n in (5, 6, 7)))
    for number in (5, 6, 7):
        check(f"partition {number} is Linux", parts[number]["type"] == "83", parts[number]["type"])

    def fat_of(number):
        return f"{image}@@{parts[number]['start'] * 512}"

    def label_of(number):
        return subprocess.run(["mlabel", "-i", fat_of(number), "-s", "::"], capture_output=True, text=True).stdout.strip()

    def files_of(number):
        out = subprocess.run(["mdir", "-i", fat_of(number), "-b", "-/", "::"], capture_output=True, text=True).stdout
        return {line.strip().lstrip(":").lstrip("/") for line in out.splitlines() if line.strip() and not line.strip().endswith("/")}

    # Partition 1: what the firmware reads first. autoboot.txt sends it to slot A's boot
    # partition (Raspberry Pi docs, config.txt, "autoboot.txt").
    check("partition 1 labelled ONAIR-BOOT", "ONAIR-BOOT" in label_of(1) and "ONAIR-BOOTA" not in label_of(1), label_of(1))
    first = files_of(1)
    check("partition 1 holds the owner's onair.conf and autoboot.txt", {"onair.conf", "autoboot.txt"} <= first, str(sorted(first)))
    autoboot = subprocess.run(["mtype", "-i", fat_of(1), "::autoboot.txt"], capture_output=True, text=True).stdout
    check("autoboot.txt: [all] tryboot_a_b=1, boot_partition=2 (slot A); [tryboot] boot_partition=3 (slot B)",
          autoboot.split() == ["[all]", "tryboot_a_b=1", "boot_partition=2", "[tryboot]", "boot_partition=3"],
          "" if autoboot.split() == ["[all]", "tryboot_a_b=1", "boot_partition=2", "[tryboot]", "boot_partition=3"] else autoboot)
    check("partition 2 labelled ONAIR-BOOTA (slot A's boot files)", "ONAIR-BOOTA" in label_of(2), label_of(2))
    check("partition 3 labelled ONAIR-BOOTB, empty until an update writes slot B's", "ONAIR-BOOTB" in label_of(3) and not files_of(3),
          f"{label_of(3)} {sorted(files_of(3))[:5]}")
    fat = fat_of(2)

    def fat_read(name):
        out = subprocess.run(["mtype", "-i", fat, f"::{name}"], capture_output=True)
        return out.stdout if out.returncode == 0 else None

    for number, want in ((5, "onair-root"), (7, "onair-data")):
        with open(image, "rb") as f:
            f.seek(parts[number]["start"] * 512 + 1024)
            sb = f.read(1024)
        magic, = struct.unpack_from("<H", sb, 0x38)
        name = sb[0x78:0x88].rstrip(b"\0").decode(errors="replace")
        check(f"partition {number} is ext4 '{want}'", magic == 0xEF53 and name == want, f"magic {magic:#x}, label {name!r}")
    check("partition 6 (root B) is the same size as 5 (root A)", parts[5]["size"] == parts[6]["size"])

    files = files_of(2)
    required = ["config.txt", "cmdline.txt"]
    if board == "rpi4":
        required += ["start4.elf", "fixup4.dat"]
        if camera == "csi":
            required += ["start4x.elf", "fixup4x.dat"]  # what start_x=1 loads on a Pi 4
    for name in required:
        check(f"FAT has {name}", name in files)

    compatible = {"rpi4": b"raspberrypi,4-model-b", "rpi5": b"raspberrypi,5-model-b"}.get(board)
    dtbs = conf["DTBS"].split()
    check("the board names its device trees", bool(dtbs))
    for index, dtb in enumerate(dtbs):
        blob = fat_read(dtb)
        ok = blob is not None and blob[:4] == b"\xd0\x0d\xfe\xed"
        detail = "missing" if blob is None else f"{len(blob)} bytes"
        check(f"{dtb} is a flattened device tree", ok, detail)
        if index == 0 and compatible:
            check(f"{dtb} is for {compatible.decode()}", compatible in (blob or b""))

    config = (fat_read("config.txt") or b"").decode()
    lines = [line.strip() for line in config.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for want in ("arm_64bit=1", "enable_uart=1"):
        check(f"config.txt: {want}", want in lines)
    kernel = next((line.split("=", 1)[1] for line in lines if line.startswith("kernel=")), None)
    initramfs = next((line.split()[1] for line in lines if line.startswith("initramfs ")), None)
    check("config.txt names the kernel, present on the FAT", kernel in files, str(kernel))
    check("config.txt names the initramfs, present on the FAT", initramfs in files, str(initramfs))
    for want in [line for line in conf["CONFIG_TXT"].splitlines() if line.strip()]:
        check(f"config.txt: {want} (board)", want.strip() in lines)
    for want in [line for line in conf["CSI_CONFIG_TXT"].splitlines() if line.strip()]:
        present = want.strip() in lines
        check(f"config.txt: {want} {'(CSI camera)' if camera == 'csi' else 'absent (USB camera)'}",
              present == (camera == "csi"))

    if kernel in files:
        image_bytes = fat_read(kernel)
        head = gzip.decompress(image_bytes)[:64] if image_bytes[:2] == b"\x1f\x8b" else image_bytes[:64]
        # arm64 boot protocol (Documentation/arch/arm64/booting.rst): magic "ARM\x64" at 0x38.
        check("the kernel is an arm64 Linux Image", head[0x38:0x3C] == b"ARM\x64",
              "gzip-compressed" if image_bytes[:2] == b"\x1f\x8b" else "uncompressed")
    if initramfs in files:
        head = fat_read(initramfs)[:6]
        check("the initramfs is a cpio archive (plain, gzip or zstd)",
              head[:6] == b"070701" or head[:2] == b"\x1f\x8b" or head[:4] == b"\x28\xb5\x2f\xfd", head.hex())

    cmdline = (fat_read("cmdline.txt") or b"").decode()
    check("cmdline.txt is one line", cmdline.count("\n") <= 1 and cmdline.strip() != "")
    words = cmdline.split()
    serial = conf["SERIAL"]
    for want in ("root=PARTUUID=6f6e6169-05", "rauc.slot=A", "ro", "rootwait", "panic=10", f"console={serial}"):
        check(f"cmdline.txt: {want}", want in words)

    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root.ext4")
        subprocess.run(["dd", f"if={image}", f"of={root}", "bs=512", f"skip={parts[5]['start']}",
                        f"count={parts[5]['size']}", "status=none"], check=True)
        onair = os.path.join(tmp, "onair")
        subprocess.run(["debugfs", "-R", f"dump /usr/bin/onair {onair}", root], check=True, capture_output=True)
        elf = open(onair, "rb").read(20) if os.path.exists(onair) else b""
        machine = struct.unpack_from("<H", elf, 18)[0] if len(elf) == 20 else None
        check("/usr/bin/onair is an aarch64 ELF", elf[:4] == b"\x7fELF" and machine == 183, f"e_machine {machine}")
        # Updates: slot A's root carries what its boot partition holds (an update writes
        # slot B's from B's root the same way: onair-slot-rpi boot-files), RAUC knows
        # both slots, and kexec is there for a slot's try.
        carried = os.path.join(tmp, "carried")
        os.makedirs(carried)
        subprocess.run(["debugfs", "-R", f"rdump /usr/share/onair/boot {carried}", root], check=True, capture_output=True)
        for name in ("vmlinuz", "initrd.img"):
            subprocess.run(["debugfs", "-R", f"dump /boot/{name} {os.path.join(carried, 'boot', name)}", root], check=True, capture_output=True)
        wanted = {os.path.relpath(os.path.join(d, f), os.path.join(carried, "boot")) for d, _, fs in os.walk(os.path.join(carried, "boot")) for f in fs}
        wanted.add("cmdline.txt")
        check("partition 2 holds exactly slot A's boot files (its root's /usr/share/onair/boot, /boot/vmlinuz, /boot/initrd.img) and cmdline.txt",
              files == wanted, f"only on the partition: {sorted(files - wanted)[:5]}, only in the root: {sorted(wanted - files)[:5]}")
        different = [name for name in sorted(wanted - {"cmdline.txt"}) if name in files and fat_read(name) != open(os.path.join(carried, "boot", name), "rb").read()]
        check("partition 2's files are the bytes slot A's root carries", not different, str(different[:5]))
        system = subprocess.run(["debugfs", "-R", "cat /etc/rauc/system.conf", root], capture_output=True, text=True).stdout
        check("RAUC's system.conf: this board's bundles, slots A and B by PARTUUID (partitions 5 and 6), the onair-slot backend",
              f"compatible=onair-{board}" in system and "device=/dev/disk/by-partuuid/6f6e6169-05" in system
              and "device=/dev/disk/by-partuuid/6f6e6169-06" in system and "bootloader-custom-backend=/usr/lib/onair/onair-slot" in system, "" if "6f6e6169-06" in system else system[-300:])
        for path in ("/usr/lib/onair/onair-slot", "/usr/sbin/kexec", "/usr/bin/rauc", "/etc/rauc/keyring.pem"):
            stat = subprocess.run(["debugfs", "-R", f"stat {path}", root], capture_output=True, text=True)
            check(f"the root has {path}", "Inode:" in stat.stdout, "" if "Inode:" in stat.stdout else stat.stderr.strip()[-200:])
        modules = subprocess.run(["debugfs", "-R", "cat /etc/modules-load.d/onair.conf", root],
                                 capture_output=True, text=True).stdout.split()
        for module in conf["CSI_MODULES"].split():
            check(f"modules-load.d: {module} {'(CSI camera)' if camera == 'csi' else 'absent (USB camera)'}",
                  (module in modules) == (camera == "csi"))
        # The kernel's modules, trimmed to the board's list (image/modules.py): every listed
        # module and modules-load.d's are there with what they need, and depmod's index
        # names no file that is gone.
        tree = os.path.join(tmp, "tree")
        os.makedirs(os.path.join(tree, "usr/lib"))
        subprocess.run(["debugfs", "-R", f"rdump /usr/lib/modules {os.path.join(tree, 'usr/lib')}", root],
                       check=True, capture_output=True)
        trimmed = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "image", "modules.py"),
                                  "check", tree, os.path.join(board_dir, "modules"), "--also", *modules],
                                 capture_output=True, text=True)
        check(f"kernel modules: board/{board}/modules and modules-load.d, with their dependencies",
              trimmed.returncode == 0, (trimmed.stdout + trimmed.stderr).strip()[-600:])
        sizes = subprocess.run(["du", "-sm", os.path.join(tree, "usr/lib/modules")], capture_output=True, text=True).stdout.split()
        check("kernel modules: trimmed (under 40 MB)", sizes and int(sizes[0]) < 40, f"{sizes[0] if sizes else '?'} MB")

    failed = sum(1 for _, ok, _ in results if not ok)
    # Again at the end: CI keeps only the tail of a long log, and the failure is what matters.
    for name, ok, detail in results:
        if not ok:
            print(f"FAILED {name}{': ' + detail[-300:] if detail else ''}")
    print(f"{len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
