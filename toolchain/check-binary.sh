#!/usr/bin/env bash
# Proves a release build is the one self-contained file docs/ARCHITECTURE.md describes, and says
# where it is and how big.
#
#   toolchain/check-binary.sh BINARY [RUNNER...]     (RUNNER: e.g. qemu-aarch64-static -L SYSROOT)
#
# 1. It loads nothing but the C runtime and the two driver interfaces that load plugins
#    themselves (libasound, libva/libva-drm): its ELF NEEDED entries, read with readelf, so
#    the check works for a foreign architecture too. (`ldd` also shows libdrm.so.2: libva-drm's
#    own dependency, not onair's; onair's libdrm is linked in.)
# 2. Its libavcodec has every encoder onair can select and the MJPEG decoder: `onair version`
#    asks the linked libavcodec by name and says which are missing; a build without one fails
#    here instead of losing the feature on a board.
set -euo pipefail
bin=${1:?usage: toolchain/check-binary.sh BINARY [RUNNER...]}
shift
fail() { echo "toolchain/check-binary.sh: $bin: $*" >&2; exit 1; }
[ -x "$bin" ] || fail "no such executable"

allowed='^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libasound\.so\.2|libva\.so\.2|libva-drm\.so\.2)$'
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
extra=$(echo "$needed" | grep -Ev "$allowed" || true)
[ -z "$extra" ] || fail "loads $(echo "$extra" | tr '\n' ' ')besides the C runtime, libasound and libva; link it statically (toolchain/deps.sh)"

version=$("$@" "$bin" version) || fail "'onair version' failed"
missing=$(echo "$version" | sed -n 's/^codecs missing: //p')
[ -z "$missing" ] || fail "its libavcodec lacks $missing (toolchain/deps.sh's FFmpeg configure line)"
echo "$version" | grep -q '^codecs: ' || fail "'onair version' names no codecs"

size=$(stat -c %s "$bin")
tmp=$(mktemp) && trap 'rm -f "$tmp"' EXIT
stripped=$( { strip -o "$tmp" "$bin" 2>/dev/null || llvm-strip -o "$tmp" "$bin"; } && stat -c %s "$tmp" || echo 0)
printf 'onair: %s, %d MB (%d MB stripped); loads %s\n' "$bin" $(( (size + 524287) / 1048576 )) \
    $(( (stripped + 524287) / 1048576 )) "$(echo "$needed" | tr '\n' ' ' | sed 's/ $//')"
