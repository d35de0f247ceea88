#!/bin/bash
# make bundle BOARD=NAME: out/onair-NAME.raucb, a RAUC update bundle of the root file system
# make image built (out/onair-NAME.root.ext4: its kernel, initramfs and command line inside,
# in /boot and /usr/share/onair), signed with KEY (and CERT, its certificate).
#
#   image/bundle.sh BOARD OUTDIR KEY CERT [ROOTFS [BUNDLE]]   (the system test makes its own)
#
# The bundle is RAUC's verity format (rauc.readthedocs.io, "Bundle Formats"): a SquashFS
# with the manifest and the image, its dm-verity hash tree, and a CMS signature over the
# manifest, which names the root hash. The board checks the signature against its keyring
# and that the bundle is for it (compatible=onair-BOARD) before writing anything, and every
# block against the hash tree as it reads it. Its version is the image's (image.txt).
set -euo pipefail

board=${1:?board name}
out=${2:?output folder}
key=${3:?signing key}
cert=${4:?certificate}
rootfs=${5:-$out/onair-$board.root.ext4}
say() { echo "make bundle: $*"; }
[ -f "$rootfs" ] || { echo "make bundle BOARD=$board: $rootfs is missing (make image makes it)." >&2; exit 2; }
for f in "$key" "$cert"; do
    [ -f "$f" ] || { echo "make bundle BOARD=$board: $f is missing (UPDATE_KEY, UPDATE_CERT)" >&2; exit 2; }
done
info=$(debugfs -R "cat /usr/share/onair/image.txt" "$rootfs" 2>/dev/null)
version=$(sed -n 's/^version=//p' <<<"$info")
[ "$(sed -n 's/^board=//p' <<<"$info")" = "$board" ] && [ -n "$version" ] ||
    { echo "make bundle BOARD=$board: $rootfs is not a root file system of board $board (its /usr/share/onair/image.txt says: ${info:-nothing})" >&2; exit 2; }

bundle=${6:-$out/onair-$board.raucb}
work=$(mktemp -d "$out/bundle-$board.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/content"
ln "$rootfs" "$work/content/rootfs.ext4" 2>/dev/null || cp "$rootfs" "$work/content/rootfs.ext4"
cat > "$work/content/manifest.raucm" <<EOF
[update]
compatible=onair-$board
version=$version

[bundle]
format=verity

[image.rootfs]
filename=rootfs.ext4
EOF
rm -f "$bundle"
rauc bundle --cert="$cert" --key="$key" --keyring="$cert" "$work/content" "$work/bundle.raucb" >"$work/log" 2>&1 ||
    { cat "$work/log" >&2; echo "make bundle BOARD=$board: rauc bundle failed" >&2; exit 2; }
mv "$work/bundle.raucb" "$bundle"
say "$bundle ($(du -h --apparent-size "$bundle" | cut -f1)): onair-$board $version, signed by $(openssl x509 -noout -subject -in "$cert" | sed 's/^subject=//')"
