#!/bin/sh
# make image: what the image is made of, written into the root (run by mmdebstrap as its
# last customize hook, while apt's lists are still there):
#   /usr/share/onair/packages.txt  every package, version and architecture (sorted)
#   /usr/share/onair/image.txt     the board, the image's version (onair's, the commit's
#                                  time and name: what an update bundle names), the
#                                  suite, the Date of the newest archive index the
#                                  packages came from (main, -updates, -security), and
#                                  the kernel
# The same package state gives the same files: nothing written here reads a clock. The
# build's log gets how current the image is (issue 34's measure): how old the archive's
# newest index was at build time, and how many installed packages the suites it was built
# from have a newer version of (0: no known security fix is missing).
set -eu
root=$1 board=$2 suite=$3 version=$4
mkdir -p "$root/usr/share/onair"
chroot "$root" dpkg-query -W -f='${Package} ${Version} ${Architecture}\n' | LC_ALL=C sort >"$root/usr/share/onair/packages.txt"
newest=0
for list in "$root"/var/lib/apt/lists/*Release; do
    date=$(sed -n 's/^Date: //p' "$list" | head -1)
    [ -n "$date" ] || continue
    seconds=$(date -u -d "$date" +%s)
    [ "$seconds" -gt "$newest" ] && newest=$seconds
done
[ "$newest" -gt 0 ] || { echo "make image: no Date in the archive's Release files under $root/var/lib/apt/lists" >&2; exit 2; }
kernel=$(ls "$root/usr/lib/modules" | sort -V | tail -1)
behind=$(chroot "$root" apt-get --simulate --quiet --quiet upgrade 2>/dev/null | grep -c '^Inst ' || true)
echo "make image: packages as of $(date -u -d "@$newest" +%Y-%m-%dT%H:%MZ) ($(( ($(date -u +%s) - newest) / 3600 )) h before this build); $behind of $(wc -l <"$root/usr/share/onair/packages.txt") installed packages have a newer version in the archive"
cat >"$root/usr/share/onair/image.txt" <<INFO
board=$board
version=$version
suite=$suite
archive=$(date -u -d "@$newest" +%Y-%m-%dT%H:%M:%SZ)
kernel=$kernel
INFO
