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

# The -dev packages of the C libraries in Package.swift's .systemLibrary targets.
dev="libavcodec-dev libavutil-dev libswscale-dev libmicrohttpd-dev libcurl4-openssl-dev libasound2-dev libdrm-dev"
host_pkgs="swiftlang libstdc++-14-dev pkgconf ca-certificates $dev"
sysroot_pkgs="libc6-dev libgcc-14-dev libstdc++-14-dev libswiftlang swiftlang $dev"
want="host: $host_pkgs; arm64 sysroot: $sysroot_pkgs"

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
        --aptopt='APT::Install-Recommends "false"' "${cache_hooks[@]}" trixie "$root/sysroot/arm64" "$mirror"
    # The extract variant skips the merged-/usr links that glibc's linker scripts rely on
    # (libm.so names /lib/aarch64-linux-gnu/libm.so.6).
    for d in lib bin sbin; do [ -e "$root/sysroot/arm64/$d" ] || ln -s "usr/$d" "$root/sysroot/arm64/$d"; done
    # swift-driver looks for an SDK description in every -sdk and warns on each file without one.
    echo '{"CanonicalName": "debian-trixie-arm64", "Version": "13.0"}' > "$root/sysroot/arm64/SDKSettings.json"
    echo "$want" > "$root/.onair-toolchain"
fi

# What the compiler sees inside the root.
scratch=/src/.build-trixie/$arch
flags=(-c "$config" --scratch-path "$scratch" "$@")
# The shipped binary carries the Swift runtime. XCTest exists only as a shared library, and
# Debian's shared Foundation still names its helper libraries, which ship only as archives.
tests=no; [[ " $* " == *" --build-tests "* ]] && tests=yes
if [ "$tests" = yes ]; then flags+=(-Xlinker -L/usr/libexec/swift/lib/swift_static/linux)
else flags+=(--static-swift-stdlib); fi
env=(HOME=/root PATH=/usr/bin:/bin)
[ -n "${ONAIR_SWIFT_VERBOSE:-}" ] && flags+=(-v)
if [ "$arch" = arm64 ]; then
    sysroot=/sysroot/arm64
    resources=$sysroot/usr/libexec/swift/lib/swift_static  # the static stdlib: its modules, archives and .lnk
    flags+=(--triple "$triple" --sdk "$sysroot"
            -Xswiftc -sdk -Xswiftc "$sysroot" -Xswiftc -resource-dir -Xswiftc "$resources"
            -Xswiftc -use-ld=lld -Xcc --sysroot="$sysroot")
    env+=(PKG_CONFIG_SYSROOT_DIR="$sysroot"
          PKG_CONFIG_LIBDIR="$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:$sysroot/usr/share/pkgconfig"
          PKG_CONFIG_PATH="$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:$sysroot/usr/share/pkgconfig")
fi

say "swift build ${flags[*]} ($(grep -A8 '^Package: swiftlang$' "$root/var/lib/dpkg/status" | sed -n 's/^Version: /swiftlang /p'), for $arch)"
mkdir -p "$repo/.build-trixie"
unshare --mount --propagation private bash -ec '
    root=$1; repo=$2; shift 2
    mkdir -p "$root/src" "$root/proc" "$root/dev"
    mount --bind "$repo" "$root/src"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    exec chroot "$root" /usr/bin/env -i "$@"
' _ "$root" "$repo" "${env[@]}" bash -c 'cd /src && exec swift build "$@"' _ "${flags[@]}"
bin=$repo/.build-trixie/$arch/$config/onair
[ -e "$bin" ] || bin=$repo/.build-trixie/$arch/$triple/$config/onair
say "$bin: $(file -b "$bin" | cut -d, -f1-2)"
# It starts: its loader, its libraries and the Swift runtime in it, for arm64 under qemu-user.
if [ "$arch" = arm64 ] && [ "$tests" = no ]; then
    say "$(qemu-aarch64-static -L "$root/sysroot/arm64" "$bin" --version) runs (qemu-aarch64 with the arm64 sysroot)"
fi
