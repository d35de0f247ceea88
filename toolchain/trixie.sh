#!/usr/bin/env bash
# Builds onair with Debian trixie's Swift 6.0.3 (swiftlang), for amd64 or arm64.
#
#   toolchain/trixie.sh ARCH [CONFIG [SWIFT-BUILD-ARGS...]]
#       ARCH: amd64 | arm64, CONFIG: release (default) | debug; e.g. `amd64 debug --build-tests`
#
# The compiler is always the amd64 swiftlang, run in a trixie build root (this machine's
# bookworm is too old for it: glibc 2.38). arm64 is cross-compiled: the root holds an arm64
# sysroot, unpacked without running anything (mmdebstrap --variant=extract), with the
# arm64 Swift runtime and resources (swiftlang/libswiftlang:arm64) and the arm64 -dev
# packages of every C library onair links; clang and lld come with swiftlang. Building
# natively in an arm64 root under qemu-user emulation was the other way: README.md says
# why this one (measured).
#
# The root is made once per machine in $ONAIR_TOOLCHAIN (/var/cache/onair-toolchain) and
# remade when the package list below changes. The build runs in a private mount namespace
# (the source bind-mounted at /src, /proc and /dev for the compiler), so nothing stays
# mounted. Output: .build-trixie/ARCH/CONFIG/onair (ELF for ARCH, Swift stdlib static).
set -euo pipefail

arch=${1:?usage: toolchain/trixie.sh amd64|arm64 [release|debug]}
config=${2:-release}
shift $(( $# < 2 ? $# : 2 ))
case "$arch" in amd64) triple=x86_64-unknown-linux-gnu ;; arm64) triple=aarch64-unknown-linux-gnu ;;
    *) echo "toolchain/trixie.sh: ARCH must be amd64 or arm64, not '$arch'" >&2; exit 2 ;; esac
case "$config" in release|debug) ;; *) echo "toolchain/trixie.sh: CONFIG must be release or debug, not '$config'" >&2; exit 2 ;; esac

repo=$(cd "$(dirname "$0")/.." && pwd)
base=${ONAIR_TOOLCHAIN:-/var/cache/onair-toolchain}
root=$base/trixie-amd64
mirror=http://deb.debian.org/debian
say() { echo "toolchain: $*"; }

# What toolchain/deps.sh builds the static libraries from, for each architecture: the
# archives Debian ships (OpenSSL with zlib and zstd, libdrm, libopus) and the headers of the two shared ones
# (libasound, libva); for the amd64 build it runs natively in the root, which also needs
# FFmpeg's assembler and what `apt-get source` unpacks with.
dev="libssl-dev zlib1g-dev libzstd-dev libdrm-dev libopus-dev libsrt-openssl-dev libva-dev libasound2-dev"
host_pkgs="swiftlang libstdc++-14-dev pkg-config ca-certificates make dpkg-dev xz-utils nasm $dev"
sysroot_pkgs="libc6-dev libgcc-14-dev libstdc++-14-dev libswiftlang swiftlang $dev"
want="host: $host_pkgs; arm64 sysroot: $sysroot_pkgs"

# One maker of the root at a time (two builds at once, amd64 and arm64, share it).
mkdir -p "$base"
exec 8>"$base/.lock"
flock 8
if [ "$(cat "$root/.onair-toolchain" 2>/dev/null)" != "$want" ]; then
    mkdir -p "$base/debs"
    cache_hooks=(--setup-hook="mkdir -p \"\$1/var/cache/apt/archives\" && find '$base/debs' -name '*.deb' -exec cp -t \"\$1/var/cache/apt/archives\" {} + || true"
                 --customize-hook="find \"\$1/var/cache/apt/archives\" -name '*.deb' -exec cp -nt '$base/debs' {} +"
                 --skip=download/empty)
    rm -rf "$root"
    say "trixie build root with Swift 6.0.3 (once per machine, $root)"
    mmdebstrap --quiet --mode=root --variant=minbase --include="$(echo "$host_pkgs" | tr ' ' ',')" \
        --aptopt='APT::Install-Recommends "false"' "${cache_hooks[@]}" trixie "$root" "$mirror"
    say "arm64 sysroot in it (unpacked, nothing run)"
    mkdir -p "$root/sysroot"
    mmdebstrap --quiet --mode=root --variant=extract --architectures=arm64 \
        --include="$(echo "$sysroot_pkgs" | tr ' ' ',')" \
        --aptopt='APT::Install-Recommends "false"' "${cache_hooks[@]}" \
        --extract-hook="find \"\$1/var/cache/apt/archives\" -name '*.deb' -exec cp -nt '$base/debs' {} +" \
        --extract-hook='for f in "$1"/var/cache/apt/archives/*_arm64.deb; do dpkg-deb -W --showformat="\${Package} \${Version}\n" "$f"; done > "$1/onair-packages"' \
        trixie "$root/sysroot/arm64" "$mirror"
    # The extract variant runs no customize hooks (its .debs are cached by an extract hook)
    # and records no package status, so the versions toolchain/deps.sh keys its cache on are
    # read from the .deb files (onair-packages; older cached ones too, the newest is used). It
    # also skips the merged-/usr links that glibc's linker scripts rely on
    # (libm.so names /lib/aarch64-linux-gnu/libm.so.6).
    for d in lib bin sbin; do [ -e "$root/sysroot/arm64/$d" ] || ln -s "usr/$d" "$root/sysroot/arm64/$d"; done
    # swift-driver looks for an SDK description in every -sdk and warns on each file without one.
    echo '{"CanonicalName": "debian-trixie-arm64", "Version": "13.0"}' > "$root/sysroot/arm64/SDKSettings.json"
    echo "$want" > "$root/.onair-toolchain"
fi
flock -u 8

# What the compiler sees inside the root.
scratch=/src/.build-trixie/$arch
flags=(-c "$config" --scratch-path "$scratch" "$@")
# The shipped binary carries the Swift runtime. XCTest exists only as a shared library, and
# Debian's shared Foundation still names its helper libraries, which ship only as archives.
tests=no; [[ " $* " == *" --build-tests "* ]] && tests=yes
if [ "$tests" = yes ]; then flags+=(-Xlinker -L/usr/libexec/swift/lib/swift_static/linux)
else flags+=(--static-swift-stdlib -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic); fi  # DT_RELR: see the Makefile
# swiftlang's clang and llvm-ar build the static libraries (toolchain/deps.sh).
env=(HOME=/root PATH=/usr/bin:/bin:/usr/libexec/swift/bin)
# Where the static libraries are cached: /var/cache/onair-deps, seen inside the sysroot (for
# arm64: the .pc paths are then relative to it, as SwiftPM's PKG_CONFIG_SYSROOT_DIR wants).
deps_mount=/deps
[ -n "${ONAIR_SWIFT_VERBOSE:-}" ] && flags+=(-v)
if [ "$arch" = arm64 ]; then
    sysroot=/sysroot/arm64
    deps_mount=$sysroot/deps
    resources=$sysroot/usr/libexec/swift/lib/swift_static  # the static stdlib: its modules, archives and .lnk
    flags+=(--triple "$triple" --sdk "$sysroot"
            -Xswiftc -sdk -Xswiftc "$sysroot" -Xswiftc -resource-dir -Xswiftc "$resources"
            -Xswiftc -use-ld=lld -Xcc --sysroot="$sysroot")
    # SwiftPM reads PKG_CONFIG_LIBDIR before PKG_CONFIG_PATH, where the static libraries'
    # .pc files come first, so only PKG_CONFIG_PATH is set.
    env+=(ONAIR_SYSROOT="$sysroot" PKG_CONFIG_SYSROOT_DIR="$sysroot"
          PKG_CONFIG_PATH="$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:$sysroot/usr/share/pkgconfig")
fi

say "swift build ${flags[*]} ($(grep -A8 '^Package: swiftlang$' "$root/var/lib/dpkg/status" | sed -n 's/^Version: /swiftlang /p'), for $arch)"
mkdir -p "$repo/.build-trixie"
deps_cache=${ONAIR_DEPS:-/var/cache/onair-deps}
mkdir -p "$deps_cache"
unshare --mount --propagation private bash -ec '
    root=$1; repo=$2; deps=$3; deps_mount=$4; shift 4
    mkdir -p "$root/src" "$root/proc" "$root/dev" "$root$deps_mount"
    mount --bind "$repo" "$root/src"
    mount --bind "$deps" "$root$deps_mount"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    exec chroot "$root" /usr/bin/env -i "$@"
' _ "$root" "$repo" "$deps_cache" "$deps_mount" "${env[@]}" ONAIR_DEPS="$deps_mount" bash -c '
    set -e
    cd /src
    prefix=$(toolchain/deps.sh '"$arch"')
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    exec swift build "$@"' _ "${flags[@]}"
bin=$repo/.build-trixie/$arch/$config/onair
[ -e "$bin" ] || bin=$repo/.build-trixie/$arch/$triple/$config/onair
say "$bin: $(file -b "$bin" | cut -d, -f1-2)"
# It starts (its loader, the shared libraries it keeps and the Swift runtime in it; for arm64
# under qemu-user with the arm64 sysroot), and it is the self-contained file it should be.
if [ "$tests" = no ]; then
    runner=(); [ "$arch" = arm64 ] && runner=(qemu-aarch64-static -L "$root/sysroot/arm64")
    "$repo/toolchain/check-binary.sh" "$bin" "${runner[@]}"
fi
