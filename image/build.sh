#!/bin/bash
# make image BOARD=NAME: builds out/onair-NAME.img (+ .bmap and .sha256) from Debian
# packages, as root, without Docker, loop devices or mounts: mmdebstrap makes the root file
# system in a folder, mkfs.ext4 -d and mkfs.vfat + mtools make the partitions as files, and
# sfdisk lays them out in the image file.
#
#   image/build.sh BOARD ONAIR_BINARY OUTDIR      (CAMERA=csi|usb overrides the board's)
#
# The root file system, mounted read-only, goes in two slots (A and B, ROOT_SLOT_MIB each)
# that signed updates (RAUC) write in turn, the image filling slot A; the data partition
# (onair-data) for streams, spool, recordings and the journal, grown to fill the disk at
# boot and checked every boot, is never touched by an update. The boot partition(s) and
# the layout differ by BOOT: image/disk.sh.
#
# Also out/onair-BOARD.root.ext4: the root file system alone, what image/bundle.sh signs
# into an update bundle. UPDATE_CERTS (a PEM file of certificates) is the keyring the
# board trusts bundles from (make image passes its development one).
set -euo pipefail

board=${1:?board name}
binary=${2:?onair binary}
out=$(mkdir -p "${3:-out}" && cd "${3:-out}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
boarddir=$repo/board/$board
[ -f "$boarddir/board.conf" ] || { echo "make image: no board '$board' (boards: $(ls "$repo/board" | grep -v '\.md$' | tr '\n' ' '))" >&2; exit 2; }
camera_override=${CAMERA:-}
ARCH= SUITE= BOOT= COMPONENTS=main ROOT_SLOT_MIB=768 BOOT_SLOT_MIB=256 PACKAGES= CMDLINE= SERIAL= MODULES= MODPROBE_OPTIONS= SERVICES= INSTALL= TEST_HELPERS= CONFIG_TXT=
CAMERA= CSI_CONFIG_TXT= CSI_MODULES= DTBS=
# shellcheck source=/dev/null
. "$boarddir/board.conf"
CAMERA=${camera_override:-${CAMERA:-usb}}
case "$CAMERA" in
    usb) ;;
    csi) [ -n "$CSI_CONFIG_TXT$CSI_MODULES" ] || { echo "make image BOARD=$board CAMERA=csi: this board has no CSI camera set-up from Debian's packages (board/$board/board.conf says why); no image was made." >&2; exit 2; } ;;
    *) echo "make image BOARD=$board: CAMERA must be csi or usb, not '$CAMERA'" >&2; exit 2 ;;
esac

# The binary must be for the board's architecture.
case "$ARCH" in amd64) want="x86-64" ;; arm64) want="aarch64" ;; *) echo "make image: board $board: unknown ARCH '$ARCH'" >&2; exit 2 ;; esac
if [ ! -f "$binary" ] || ! file -b "$binary" | grep -q "$want"; then
    echo "make image BOARD=$board: needs an $ARCH ($want) build of onair, and $binary is $( [ -f "$binary" ] && file -b "$binary" | cut -d, -f1-2 || echo missing)." >&2
    echo "make image BOARD=$board: build it with 'make build ARCH=$ARCH'; no image was made." >&2
    exit 2
fi
case "$BOOT" in efi|rpi) ;; *) echo "make image BOARD=$board: unknown BOOT '$BOOT'" >&2; exit 2 ;; esac
# A foreign root file system runs its packages' scripts through qemu-user (binfmt_misc).
if [ "$ARCH" != "$(dpkg --print-architecture)" ]; then
    qemu=$( [ "$ARCH" = arm64 ] && echo qemu-aarch64 || echo "qemu-$ARCH" )
    [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    [ -e "/proc/sys/fs/binfmt_misc/$qemu" ] || update-binfmts --enable "$qemu" >/dev/null 2>&1 || true
    grep -qx enabled "/proc/sys/fs/binfmt_misc/$qemu" 2>/dev/null ||
        { echo "make image BOARD=$board: $ARCH programs cannot run here: binfmt_misc has no enabled $qemu (install qemu-user-static and binfmt-support); no image was made." >&2; exit 2; }
fi

update_certs=${UPDATE_CERTS:-}
[ -f "$update_certs" ] && grep -q "BEGIN CERTIFICATE" "$update_certs" ||
    { echo "make image BOARD=$board: UPDATE_CERTS must name a PEM file of the certificates update bundles are signed with (make image makes a development one), not '${update_certs}'; no image was made." >&2; exit 2; }

export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)}
export E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH
# The image's version, which its update bundle names too: onair's own, the commit's time, the commit.
image_version="$(sed -n 's/.*static let version = "\(.*\)"/\1/p' "$repo/Sources/Appliance/CommandLine.swift")-$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d%H%M)-g$(git -C "$repo" rev-parse --short=10 HEAD 2>/dev/null || echo unknown)"
work=$out/work-$board
image=$out/onair-$board.img
rm -rf "$work" "$image" "$image.bmap" "$image.sha256" "$out/onair-$board.packages.txt" "$out/onair-$board.root.ext4"
mkdir -p "$work"
root=$work/root
# Packages downloaded once per machine, not per build.
cache=${ONAIR_IMAGE_CACHE:-/var/cache/onair-image/$SUITE-$ARCH}
mkdir -p "$cache"

say() { echo "make image: $*"; }
serial_device=${SERIAL%%,*}
serial_speed=${SERIAL##*,}

# 1. The root file system: the two shared libraries onair loads (everything else is linked
# in: toolchain/deps.sh; the names change with the 64-bit time_t transition), systemd, the
# board's kernel and drivers.
case "$SUITE" in
    bookworm) runtime="libva2 libva-drm2 libasound2" ;;
    trixie) runtime="libva2 libva-drm2 libasound2t64" ;;
    *) echo "make image BOARD=$board: no runtime package list for SUITE=$SUITE" >&2; exit 2 ;;
esac
# The suite with its point-release updates and Debian's security archive, so that an image
# carries every fix published when it is built; packages named pkg/SUITE-backports come
# from backports (a newer kernel, say).
sources=("deb http://deb.debian.org/debian $SUITE $COMPONENTS" "deb http://deb.debian.org/debian $SUITE-updates $COMPONENTS"
         "deb http://deb.debian.org/debian-security $SUITE-security $COMPONENTS")
case " $PACKAGES " in *"/$SUITE-backports "*) sources+=("deb http://deb.debian.org/debian $SUITE-backports $COMPONENTS") ;; esac
[ "$CAMERA" = csi ] && MODULES="$MODULES $CSI_MODULES"
system="systemd systemd-sysv systemd-timesyncd systemd-resolved udev kmod dbus e2fsprogs dosfstools fdisk ca-certificates"
# Wi-Fi ([wifi] of onair.conf): wpa_supplicant joins (WPA2 and WPA3-SAE; onair reads its
# control socket), systemd-networkd takes the address; the regulatory database for
# wifi.country; iw for a person at the serial console. (iwd would need the kernel's
# AF_ALG crypto and speaks only D-Bus; wpa_supplicant's control socket is a few lines.)
system="$system wpasupplicant wireless-regdb iw"
# Updates in A/B slots: RAUC installs signed bundles (its D-Bus service with it). EFI boards
# boot through systemd-boot; the Raspberry Pi's try a new slot by kexec (onair-slot-rpi),
# with Debian's kexec-tools (which brings Xen's libraries: 3.8 MB).
system="$system rauc rauc-service"
case "$BOOT" in efi) system="$system systemd-boot-efi" ;; rpi) system="$system kexec-tools" ;; esac
say "root file system ($SUITE $ARCH: $PACKAGES)"
# The board's packages (the kernel among them) go in second, after initramfs-tools is told
# not to update: the kernel's hook makes the initramfs once, and the trigger that would make
# it again is skipped. Under qemu-user each one takes minutes. (The root is read-only, so
# nothing updates it later either.) apt in the root resolves names with the host's
# resolv.conf until the root gets its own, below.
# bookworm's minbase merges /usr with the usrmerge package, which pulls in all of perl
# (50 MB): mmdebstrap's merged-usr hook makes the same symlinks and installs
# usr-is-merged instead. trixie's base-files merges /usr itself.
hooks=()
[ "$SUITE" = bookworm ] && hooks=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr)
mmdebstrap --quiet --mode=root --variant=minbase --architectures="$ARCH" "${hooks[@]}" \
    --include="$(echo "$runtime $system initramfs-tools" | tr ' ' ',')" \
    --aptopt='APT::Install-Recommends "false"' \
    --setup-hook="mkdir -p \"\$1/var/cache/apt/archives\" && find '$cache' -name '*.deb' -exec cp -t \"\$1/var/cache/apt/archives\" {} + || true" \
    --customize-hook='sed -i "s/^update_initramfs=.*/update_initramfs=no/" "$1/etc/initramfs-tools/update-initramfs.conf"' \
    --customize-hook='rm -f "$1/etc/resolv.conf" && cp -L /etc/resolv.conf "$1/etc/resolv.conf"' \
    --customize-hook="chroot \"\$1\" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q=2 $PACKAGES" \
    --customize-hook="find \"\$1/var/cache/apt/archives\" -name '*.deb' -exec cp -nt '$cache' {} +" \
    --customize-hook="'$here/manifest.sh' \"\$1\" '$board' '$SUITE' '$image_version'" \
    --skip=download/empty \
    "$SUITE" "$root" "${sources[@]}"
# The Raspberry Pi firmware's kernel hook fills the root's /boot/firmware; the boot
# partition is made below and mounted there.
rm -rf "$root/boot/firmware"

# The board's kernel modules and what they need, nothing else (board/$board/modules;
# image/modules.py checks the list against the kernel and the board's device trees), then
# depmod, so that modules.dep and modules.alias name only what is there.
dtb_paths=()
for dtb in $DTBS; do dtb_paths+=("$(ls "$root"/usr/lib/linux-image-*/broadcom/"$dtb" | sort -V | tail -1)"); done
python3 "$here/modules.py" trim "$root" "$boarddir/modules" --also $MODULES --dtb "${dtb_paths[@]}"
for kver in $(ls "$root/usr/lib/modules"); do chroot "$root" depmod "$kver"; done

say "onair and its services"
install -D -m 0755 "$binary" "$root/usr/bin/onair"
strip --strip-unneeded "$root/usr/bin/onair" 2>/dev/null || true
install -D -m 0644 "$boarddir/onair.conf" "$root/usr/share/onair/board.conf"
install -D -m 0644 "$here/rootfs/onair.service" "$root/etc/systemd/system/onair.service"
install -D -m 0644 "$here/rootfs/onair-grow-data.service" "$root/etc/systemd/system/onair-grow-data.service"
install -D -m 0644 "$here/rootfs/onair-time.service" "$root/etc/systemd/system/onair-time.service"
install -D -m 0644 "$here/rootfs/onair-network.service" "$root/etc/systemd/system/onair-network.service"
install -D -m 0755 "$here/rootfs/grow-data" "$root/usr/lib/onair/grow-data"
install -D -m 0644 "$here/rootfs/20-wired.network" "$root/etc/systemd/network/20-wired.network"
install -D -m 0644 "$here/rootfs/25-wireless.network" "$root/etc/systemd/network/25-wireless.network"
install -D -m 0644 "$here/rootfs/onair-wifi@.service" "$root/etc/systemd/system/onair-wifi@.service"
install -D -m 0644 "$here/rootfs/onair-setup-ap@.service" "$root/etc/systemd/system/onair-setup-ap@.service"
install -D -m 0644 "$here/rootfs/24-setup-ap.network" "$root/etc/systemd/network/24-setup-ap.network"
install -D -m 0644 "$here/rootfs/onair-names.service" "$root/etc/systemd/system/onair-names.service"
# Found by name: systemd-resolved answers NAME.local and announces the services of
# onair-names.service over multicast DNS (RFC 6762/6763), on the links that allow it
# (20-wired.network, 25-wireless.network); no LLMNR (Windows' older scheme) to answer for.
mkdir -p "$root/etc/systemd/resolved.conf.d"
printf '[Resolve]\nMulticastDNS=yes\nLLMNR=no\n' > "$root/etc/systemd/resolved.conf.d/onair.conf"
install -D -m 0644 "$here/rootfs/81-onair-wifi.rules" "$root/etc/udev/rules.d/81-onair-wifi.rules"
for unit in $SERVICES; do install -D -m 0644 "$boarddir/$unit" "$root/etc/systemd/system/$unit"; done
for pair in $INSTALL; do install -D -m 0755 "$boarddir/${pair%%:*}" "$root/${pair#*:}"; done
# A test board's programs built by the Makefile (make image builds them into $helpers).
helpers=${ONAIR_HELPERS:-$repo/.build/helpers}
for pair in $TEST_HELPERS; do
    [ -x "$helpers/${pair%%:*}" ] || { echo "make image BOARD=$board: $helpers/${pair%%:*} is missing (make image builds it); no image was made." >&2; exit 2; }
    install -D -m 0755 "$helpers/${pair%%:*}" "$root/${pair#*:}"
done

# Read-only root: what must be written lives in /run (tmpfs), /data or a tmpfs of its own.
# The kernel's command line names the root slot (root=PARTLABEL=onair-root-a on EFI boards,
# root=PARTUUID=6f6e6169-05 on the Pi's), mounted read-only; fstab has no line for it (both
# slots' file systems carry one label).
cat > "$root/etc/fstab" <<EOF
# The root file system is read-only so a power cut cannot corrupt it (onair.service
# writes only to /data). /data is checked at every boot (tune2fs -c 1) and grown to fill
# the disk (onair-grow-data.service).
# / is the slot the boot loader names (rauc.slot=A|B on the kernel's command line), read-only
LABEL=ONAIR-BOOT   /boot/firmware  vfat   ro,fmask=0133,dmask=0022      0 2
LABEL=onair-data   /data           ext4   noatime,commit=1              0 2
/data/journal      /var/log/journal none  bind,x-systemd.requires-mounts-for=/data 0 0
tmpfs              /tmp            tmpfs  mode=1777,size=64m            0 0
tmpfs              /var/tmp        tmpfs  mode=1777,size=16m            0 0
tmpfs              /var/lib/systemd tmpfs mode=0755,size=8m             0 0
/data/timesync     /var/lib/systemd/timesync none bind,x-systemd.requires-mounts-for=/data 0 0
tmpfs              /var/cache      tmpfs  mode=0755,size=8m             0 0
EOF
mkdir -p "$root/boot/firmware" "$root/data" "$root/var/log/journal"
echo onair > "$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tonair\n' > "$root/etc/hosts"
: > "$root/etc/machine-id"  # empty: systemd makes a transient one on the read-only root
ln -sf /run/systemd/resolve/stub-resolv.conf "$root/etc/resolv.conf"
# The operator's root login on the serial console (no password: whoever holds the serial
# cable holds the board; set one with passwd on a writable root if that is not so).
chroot "$root" passwd -qd root
printf '%s\n' $MODULES > "$root/etc/modules-load.d/onair.conf"
[ -n "$MODPROBE_OPTIONS" ] && printf '%s\n' "$MODPROBE_OPTIONS" > "$root/etc/modprobe.d/onair.conf"
# No real-time clock on most boards: the clock starts wherever the image last knew it.
# systemd-timesyncd keeps that in its clock file (on /data, bind-mounted over the tmpfs),
# saved every 15 s (a timer timesyncd lets fire up to 10 s late) and at each
# synchronisation, and moves the clock forward to it at boot, so a power cut costs at most
# 26 s of time (25 s, and /data's 1 s journal commit), never years. e2fsck must not take a clock
# behind the file systems' own time stamps for damage (e2fsck.conf(5)).
# Until that file exists (the first boot), systemd starts the clock no earlier than
# /usr/lib/clock-epoch's time (systemd(1), "System clock epoch"): the image's build time,
# which the time stamps below clamp it to.
touch "$root/usr/lib/clock-epoch"
mkdir -p "$root/etc/systemd/timesyncd.conf.d"
printf '[Time]\nSaveIntervalSec=15\n' > "$root/etc/systemd/timesyncd.conf.d/onair.conf"
printf '[options]\nbroken_system_clock = 1\n' > "$root/etc/e2fsck.conf"
# journald keeps its files on /data (bind-mounted at /var/log/journal), bounded, and
# syncs every 5 s (not 5 min): after a power cut the log says what happened before it.
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=persistent\nSystemMaxUse=64M\nSyncIntervalSec=5s\n' > "$root/etc/systemd/journald.conf.d/onair.conf"
# wpa_supplicant runs per interface from onair-wifi@ (the D-Bus one would only idle).
systemctl --root="$root" mask wpa_supplicant.service >/dev/null 2>&1
systemctl --root="$root" enable onair.service onair-grow-data.service onair-time.service onair-network.service onair-names.service systemd-networkd.service systemd-resolved.service \
    systemd-timesyncd.service $SERVICES >/dev/null 2>&1
# Updates: RAUC with the slots, the keyring, and the board's boot loader backend
# (onair-slot-efi: systemd-boot's boot counting; onair-slot-rpi: the Pi firmware's
# autoboot.txt and a kexec for the try), as /usr/lib/onair/onair-slot; its status on
# /data, which updates keep.
case "$BOOT" in
    efi) slot_a=/dev/disk/by-partlabel/onair-root-a slot_b=/dev/disk/by-partlabel/onair-root-b ;;
    rpi) slot_a=/dev/disk/by-partuuid/6f6e6169-05 slot_b=/dev/disk/by-partuuid/6f6e6169-06 ;;
esac
install -D -m 0755 "$here/rootfs/onair-slot-$BOOT" "$root/usr/lib/onair/onair-slot"
install -D -m 0755 "$here/rootfs/onair-update-deadline" "$root/usr/lib/onair/onair-update-deadline"
install -D -m 0644 "$here/rootfs/onair-update-deadline.service" "$root/etc/systemd/system/onair-update-deadline.service"
systemctl --root="$root" enable onair-update-deadline.service >/dev/null 2>&1
install -D -m 0644 "$update_certs" "$root/etc/rauc/keyring.pem"
cat > "$root/etc/rauc/system.conf" <<EOF
# RAUC (rauc.readthedocs.io, "System Configuration File"): what this board accepts and where
# it writes. A bundle must be for this board (compatible) and signed by a certificate of
# the keyring; it is written into the slot not running, and onair-slot makes that slot
# boot once; it stays only when onair confirms it healthy (update.confirm_seconds).
[system]
compatible=onair-$board
bootloader=custom
bundle-formats=-plain
data-directory=/data/rauc

# A board's clock is not set until it reaches a time server (and may never be, offline):
# certificates are checked against the time the bundle was signed, not the board's.
[keyring]
path=/etc/rauc/keyring.pem
use-bundle-signing-time=true

[handlers]
bootloader-custom-backend=/usr/lib/onair/onair-slot

[slot.rootfs.0]
device=$slot_a
type=ext4
bootname=A

[slot.rootfs.1]
device=$slot_b
type=ext4
bootname=B
EOF
if [ "$BOOT" = rpi ]; then
    # kexec-tools' own units would load a kernel at every shutdown and kexec into it
    # (LOAD_KEXEC): onair-slot loads one only to try a slot.
    sed -i 's/^LOAD_KEXEC=.*/LOAD_KEXEC=false/' "$root/etc/default/kexec"
    systemctl --root="$root" disable kexec-load.service kexec.service >/dev/null 2>&1 || true
fi

# The status lines and the login share the console: no kernel chatter over them.
mkdir -p "$root/etc/sysctl.d"
echo 'kernel.printk = 3 4 1 3' > "$root/etc/sysctl.d/10-onair-console.conf"

# 2. The boot partitions, the file systems and the disk (image/disk.sh).
# shellcheck source=image/disk.sh
. "$here/disk.sh"
