# image/build.sh, part 2 (sourced): the boot partitions, the file systems as files, and the
# disk laid out with sfdisk. Both layouts put the owner's onair.conf on the first FAT
# partition (ONAIR-BOOT, /boot/firmware on the board), two root slots (ROOT_SLOT_MIB each,
# the image filling slot A) and the data partition last:
#
#   efi: GPT  1 ONAIR-BOOT, the EFI system partition: systemd-boot with each slot's kernel
#               and initramfs and its entry (onair-slot-efi)
#             2 onair-root-a  3 onair-root-b  4 onair-data
#   rpi: MBR (the Raspberry Pi firmware's; it reads autoboot.txt only from an MBR's FAT)
#             1 ONAIR-BOOT: autoboot.txt, which names the committed slot's boot partition
#             2 ONAIR-BOOTA, 3 ONAIR-BOOTB (BOOT_SLOT_MIB each): the firmware, device trees,
#               kernel, initramfs, config.txt and cmdline.txt of each slot (onair-slot-rpi
#               writes B's from B's root at an update; slot A's is made here the same way)
#             4 extended: 5 root A, 6 root B, 7 onair-data
# Each root slot carries its boot files (/boot/vmlinuz, /boot/initrd.img, the kernel's
# options in /usr/share/onair/kernel-options; on the Pi also /usr/share/onair/boot), so
# that an update bundle, one root file system, brings its kernel with it.

# 2. The boot partitions.
boot=$work/boot
mkdir -p "$boot"
install -m 0644 "$here/onair.conf" "$boot/onair.conf"
kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)
# panic=10: a slot whose kernel panics reboots, into the other slot if it is on trial.
options="console=tty1 console=$serial_device,$serial_speed panic=10 $CMDLINE"
if [ "$BOOT" = efi ]; then
    efi_name=$( [ "$ARCH" = amd64 ] && echo BOOTX64.EFI || echo BOOTAA64.EFI )
    efi_stub=$( [ "$ARCH" = amd64 ] && echo systemd-bootx64.efi || echo systemd-bootaa64.efi )
    # Slot A's kernel and initramfs in /a/, its entry the first generation, without a boot
    # counter: good (image/rootfs/onair-slot-efi says how updates add slot B's). No
    # default in loader.conf: systemd-boot boots the first entry as it sorts them.
    mkdir -p "$boot/EFI/BOOT" "$boot/loader/entries" "$boot/a"
    cp "$root/usr/lib/systemd/boot/efi/$efi_stub" "$boot/EFI/BOOT/$efi_name"
    cp "$kernel" "$boot/a/vmlinuz"
    cp "$initrd" "$boot/a/initrd.img"
    printf 'timeout 0\nconsole-mode keep\n' > "$boot/loader/loader.conf"
    printf 'title onair (slot A)\nlinux /a/vmlinuz\ninitrd /a/initrd.img\noptions root=PARTLABEL=onair-root-a rauc.slot=A ro %s\n' \
        "$options" > "$boot/loader/entries/onair-1-a.conf"
else
    # As Debian's raspi-firmware lays it out (its kernel hook, z50-raspi-firmware): the
    # firmware (start4.elf and fixup4.dat for the Pi 4; the Pi 5 boots from its EEPROM),
    # the board's device trees named as the firmware looks for them, config.txt; in the
    # root, for each slot's boot partition.
    slot_boot=$root/usr/share/onair/boot
    mkdir -p "$slot_boot"
    cp -r "$root/usr/lib/raspi-firmware/." "$slot_boot/"
    kver=${kernel##*/vmlinuz-}
    for dtb in $DTBS; do cp "$root/usr/lib/linux-image-$kver/broadcom/$dtb" "$slot_boot/"; done
    {   echo "# onair on $board: the Raspberry Pi firmware's settings, read at power-up."
        echo "# https://www.raspberrypi.com/documentation/computers/config_txt.html"
        echo "arm_64bit=1"
        echo "enable_uart=1"
        echo "upstream_kernel=1"
        echo "kernel=vmlinuz"
        echo "initramfs initrd.img followkernel"
        [ -n "$CONFIG_TXT" ] && printf '%s\n' "$CONFIG_TXT"
        if [ "$CAMERA" = csi ]; then echo "# The CSI camera (make image CAMERA=csi)."; printf '%s\n' "$CSI_CONFIG_TXT"; fi
    } > "$slot_boot/config.txt"
    options="$options rootwait fsck.repair=yes"
    # autoboot.txt commits slot A, made as onair-slot-rpi makes it at each commit (the
    # Raspberry Pi docs' A/B example: the [tryboot] section would be the other slot).
    sh "$here/rootfs/onair-slot-rpi" autoboot A > "$boot/autoboot.txt"
fi
cp "$kernel" "$root/boot/vmlinuz.slot"
cp "$initrd" "$root/boot/initrd.img.slot"
echo "$options" > "$root/usr/share/onair/kernel-options"
# The kernel, initramfs, device trees and firmware now live in the slot's files; the root
# keeps the modules.
rm -rf "$root"/boot/vmlinuz-* "$root"/boot/initrd.img-* "$root"/boot/System.map-* "$root"/usr/lib/linux-image-* \
    "$root"/usr/lib/modules/*/dtb "$root"/usr/lib/modules/*/vmlinuz "$root/usr/lib/raspi-firmware" \
    "$root"/vmlinuz* "$root"/initrd.img*
mv "$root/boot/vmlinuz.slot" "$root/boot/vmlinuz"
mv "$root/boot/initrd.img.slot" "$root/boot/initrd.img"
# Nothing reads documentation, manuals or translations on an appliance: onair and the
# console speak English, and the C locale is built into glibc.
rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/* "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/info" \
    "$root/usr/share/locale" "$root/usr/share/i18n" "$root/usr/share/lintian" "$root/usr/share/bug"
if [ "$BOOT" = rpi ]; then
    # Slot A's boot partition, made from its root as an update makes slot B's.
    mkdir -p "$work/boot-a"
    sh "$here/rootfs/onair-slot-rpi" boot-files A "$root" "$work/boot-a"
fi

# 3. The data partition: the folders onair and journald expect, nothing else.
data=$work/data
mkdir -p "$data/journal" "$data/cache" "$data/timesync" "$data/rauc"

# Each file system as a file, with fixed identities and times (SOURCE_DATE_EPOCH).
find "$root" "$work"/boot* "$data" -newermt "@$SOURCE_DATE_EPOCH" -print0 | xargs -0r touch --no-dereference --date="@$SOURCE_DATE_EPOCH"
mib() { echo $(( ($1 + 1048575) / 1048576 )); }
root_mib=$(( $(mib "$(du -sb "$root" | cut -f1)") * 5 / 4 + 64 ))
slot_mib=$ROOT_SLOT_MIB
[ "$root_mib" -le "$slot_mib" ] ||
    { echo "make image BOARD=$board: the root file system needs $root_mib MiB, more than a slot's ROOT_SLOT_MIB=$slot_mib (board.conf); no image was made." >&2; exit 2; }
data_mib=64
# fat NAME LABEL VOLUME-ID MIB [FOLDER]: a FAT32 file system as the file $work/NAME.fat,
# holding FOLDER's files.
fat() {
    mkfs.vfat -F 32 -n "$2" -i "$3" --invariant -C "$work/$1.fat" $(( $4 * 1024 )) >/dev/null
    [ -n "${5:-}" ] || return 0
    ( cd "$5" && find . -mindepth 1 -type d | sort | sed 's|^\./||' | while read -r d; do mmd -i "$work/$1.fat" "::$d"; done
      find . -type f | sort | sed 's|^\./||' | while read -r f; do mcopy -m -i "$work/$1.fat" "$f" "::$f"; done )
}
if [ "$BOOT" = efi ]; then
    # The EFI system partition holds both slots' kernels and initramfs: room for a second set.
    boot_mib=$(( $(mib $(( $(du -sb "$boot" | cut -f1) + $(du -sb "$boot/a" | cut -f1) ))) + 64 ))
    [ $boot_mib -lt 128 ] && boot_mib=128
    say "file systems: boot $boot_mib MiB, root $root_mib MiB in 2 slots of $slot_mib MiB, data $data_mib MiB (grows at first boot)"
    fat boot ONAIR-BOOT 0a1a0001 "$boot_mib" "$boot"
else
    # A slot's boot partition: its files and room for a bigger kernel in a later update.
    boot_mib=64 slot_boot_mib=$BOOT_SLOT_MIB
    need=$(( $(mib "$(du -sb "$work/boot-a" | cut -f1)") + 64 ))
    [ "$need" -le "$slot_boot_mib" ] ||
        { echo "make image BOARD=$board: a slot's boot files need $need MiB, more than BOOT_SLOT_MIB=$slot_boot_mib; no image was made." >&2; exit 2; }
    say "file systems: boot $boot_mib MiB, slot boot partitions 2 of $slot_boot_mib MiB, root $root_mib MiB in 2 slots of $slot_mib MiB, data $data_mib MiB (grows at first boot)"
    fat boot ONAIR-BOOT 0a1a0001 "$boot_mib" "$boot"
    fat boot-a ONAIR-BOOTA 0a1a0002 "$slot_boot_mib" "$work/boot-a"
    fat boot-b ONAIR-BOOTB 0a1a0003 "$slot_boot_mib"
fi
mkfs.ext4 -q -L onair-root -U 6f6e6169-7200-4000-8000-726f6f740001 -E root_owner=0:0,hash_seed=6f6e6169-7200-4000-8000-000000000001 \
    -d "$root" "$work/root.ext4" "${root_mib}M" >/dev/null
mkfs.ext4 -q -L onair-data -U 6f6e6169-7200-4000-8000-646174610001 -E root_owner=0:0,hash_seed=6f6e6169-7200-4000-8000-000000000002 \
    -d "$data" "$work/data.ext4" "${data_mib}M" >/dev/null
tune2fs -c 1 "$work/data.ext4" >/dev/null  # a full check at every mount
# mkfs.ext4 -d copies each file's ctime, which touch cannot set, and its atime, which
# reading the tree (mkfs itself included) moves under relatime (e2fsprogs 1.47.0): set
# both to SOURCE_DATE_EPOCH with debugfs, so two builds give the same file systems.
clamp_times() {
    ( cd "$2" && find . | sed 's|^\.||; s|^$|/|' |
        sed 's|.*|sif "&" ctime @'"$SOURCE_DATE_EPOCH"'\nsif "&" atime @'"$SOURCE_DATE_EPOCH"'|' ) |
        debugfs -w -f - "$1" >/dev/null 2>&1
}
clamp_times "$work/root.ext4" "$root"
clamp_times "$work/data.ext4" "$data"

# The disk, 1 MiB aligned. sfdisk keeps a MiB before each logical partition for its
# extended boot record.
if [ "$BOOT" = rpi ]; then
    total_mib=$(( 1 + boot_mib + 2 * slot_boot_mib + 2 * (1 + slot_mib) + 1 + data_mib + 1 ))
    truncate -s "${total_mib}M" "$image"
    sfdisk --quiet --no-reread --no-tell-kernel "$image" <<EOF
label: dos
label-id: 0x6f6e6169
unit: sectors
start=2048, size=$(( boot_mib * 2048 )), type=c, bootable
size=$(( slot_boot_mib * 2048 )), type=c
size=$(( slot_boot_mib * 2048 )), type=c
type=5
size=$(( slot_mib * 2048 )), type=83
size=$(( slot_mib * 2048 )), type=83
size=$(( data_mib * 2048 )), type=83
EOF
    files="1:boot.fat 2:boot-a.fat 3:boot-b.fat 5:root.ext4 7:data.ext4"
else
    total_mib=$(( 1 + boot_mib + 2 * slot_mib + data_mib + 1 ))
    truncate -s "${total_mib}M" "$image"
    sfdisk --quiet --no-reread --no-tell-kernel "$image" <<EOF
label: gpt
label-id: 6F6E6169-7200-4000-8000-000000000000
unit: sectors
start=2048, size=$(( boot_mib * 2048 )), type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, uuid=6F6E6169-7200-4000-8000-000000000001, name="onair-boot"
size=$(( slot_mib * 2048 )), type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, uuid=6F6E6169-7200-4000-8000-000000000002, name="onair-root-a"
size=$(( slot_mib * 2048 )), type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, uuid=6F6E6169-7200-4000-8000-000000000004, name="onair-root-b"
size=$(( data_mib * 2048 )), type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, uuid=6F6E6169-7200-4000-8000-000000000003, name="onair-data"
EOF
    files="1:boot.fat 2:root.ext4 4:data.ext4"
fi
# Each file system at its partition's first sector, as sfdisk placed it (its dump's lines:
# "IMAGEN : start= S, size= ...").
layout=$(sfdisk --dump "$image")
for pair in $files; do
    start=$(awk -v node="$image${pair%%:*}" '$1 == node { sub(/,/, "", $4); print $4 }' <<<"$layout")
    [ -n "$start" ] || { echo "make image BOARD=$board: sfdisk made no partition ${pair%%:*}; no image was made." >&2; exit 2; }
    dd if="$work/${pair#*:}" of="$image" bs=1M seek=$(( start * 512 )) oflag=seek_bytes conv=notrunc,sparse status=none
done

bmaptool -q create -o "$image.bmap" "$image"
( cd "$out" && sha256sum "$(basename "$image")" > "$(basename "$image").sha256" )
# What the image is made of, beside it (image/manifest.sh wrote it into the root).
packages=$out/onair-$board.packages.txt
cp "$root/usr/share/onair/packages.txt" "$packages"
made_of=$(grep -E '^(archive|kernel)=' "$root/usr/share/onair/image.txt" | tr '\n' ' ')
mv "$work/root.ext4" "$out/onair-$board.root.ext4"
rm -rf "$work"
say "$image ($(du -h --apparent-size "$image" | cut -f1), $(du -h "$image" | cut -f1) used), $image.bmap, $image.sha256, $packages"
say "Debian packages: $made_of($(wc -l <"$packages") packages)"
