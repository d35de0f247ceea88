#!/usr/bin/env bash
# The C libraries onair links statically, built minimal from Debian's own source packages
# (docs/ARCHITECTURE.md, Dependencies), once per machine.
#
#   toolchain/deps.sh ARCH        prints the prefix (include/, lib/, lib/pkgconfig/)
#
# Runs on the system whose Debian release the binary is for: this machine (bookworm) for
# its own architecture, or trixie's build root (toolchain/trixie.sh) for arm64, where the
# compiler is the clang that comes with swiftlang, aimed at the arm64 sysroot that Swift
# links against (ONAIR_SYSROOT).
#
# Built here: x264, 8-bit 4:2:0 only; FFmpeg's libavcodec/libavutil/libswscale with only the
# encoders onair can select (libx264, h264/hevc VA-API, h264/hevc V4L2 M2M, aac) and the
# MJPEG decoder; libcurl with HTTP and HTTPS through OpenSSL and nothing else; libmicrohttpd
# without TLS, auth, upgrade or post processing; libsrtp2 on OpenSSL's ciphers (Debian's
# libsrtp2.a is built on NSS, which ships no static archives). Taken as Debian ships them:
# libssl.a and libcrypto.a (libssl-dev) with libz.a and libzstd.a, libdrm.a (libdrm-dev),
# libopus.a (libopus-dev) and libsrt.a (libsrt-openssl-dev: SRT on the same OpenSSL,
# position-independent as Debian builds it). libva and libasound stay shared: they load the board's drivers and
# plugins themselves.
#
# The prefix is $ONAIR_DEPS/ARCH-SUITE-KEY, KEY a hash of every source package version and
# every configure line below; a changed Debian version (a security update) or recipe makes
# a new prefix, an unchanged one is reused. The .pc files in it list every library to link,
# the static ones by file name (-l:libx264.a), so the link cannot pick a shared copy.
set -euo pipefail

arch=${1:?usage: toolchain/deps.sh amd64|arm64}
cache=${ONAIR_DEPS:-/var/cache/onair-deps}
# One run at a time on a machine: an amd64 and an arm64 build at once (two makes, say)
# would fetch sources into the same $cache/sources.
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
host=$(dpkg --print-architecture)
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
say() { echo "deps: $*" >&2; }
case "$arch" in
    amd64) gnu=x86_64-linux-gnu; ffarch=x86_64 ;;
    arm64) gnu=aarch64-linux-gnu; ffarch=aarch64 ;;
    *) echo "toolchain/deps.sh: ARCH must be amd64 or arm64, not '$arch'" >&2; exit 2 ;;
esac

# The compiler and where the target's headers and libraries are.
if [ "$arch" = "$host" ]; then
    sysroot=
    cc=gcc ar=ar ranlib=ranlib
    cross_ff=() cross_ac=()
    pkgdirs=/usr/lib/$gnu/pkgconfig:/usr/share/pkgconfig
else
    sysroot=${ONAIR_SYSROOT:?toolchain/deps.sh: an $arch build needs ONAIR_SYSROOT (toolchain/trixie.sh sets it)}
    cc="clang --target=$gnu --sysroot=$sysroot -fuse-ld=lld -Wno-unused-command-line-argument"
    ar=llvm-ar ranlib=llvm-ranlib
    cross_ff=(--enable-cross-compile --arch="$ffarch" --target-os=linux --disable-stripping)
    cross_ac=(--host="$gnu")
    pkgdirs=$sysroot/usr/lib/$gnu/pkgconfig:$sysroot/usr/share/pkgconfig
fi
export PKG_CONFIG_LIBDIR=$pkgdirs PKG_CONFIG_PATH=$pkgdirs PKG_CONFIG_SYSROOT_DIR=$sysroot

# The recipes. Each configure line is part of the cache key.
ffmpeg_conf=(--enable-static --disable-shared --enable-pic --disable-debug
    --disable-programs --disable-doc --disable-network --disable-autodetect --disable-everything
    --disable-avformat --disable-avdevice --disable-avfilter --disable-swresample --disable-postproc
    --enable-gpl --enable-libx264 --enable-vaapi --enable-v4l2-m2m
    --enable-encoder=libx264,h264_vaapi,hevc_vaapi,h264_v4l2m2m,hevc_v4l2m2m,aac,mjpeg
    --enable-decoder=mjpeg --pkg-config-flags=--static)
curl_conf=(--enable-static --disable-shared --with-pic --with-openssl --without-libpsl
    --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet --disable-tftp
    --disable-pop3 --disable-imap --disable-smtp --disable-gopher --disable-mqtt --disable-smb
    --disable-ftp --disable-file --disable-manual --disable-docs --disable-ntlm --disable-ntlm-wb
    --disable-kerberos-auth --disable-negotiate-auth --disable-unix-sockets --disable-alt-svc
    --disable-hsts --disable-cookies --disable-websockets --disable-proxy --disable-netrc --disable-doh
    --disable-mime --disable-form-api --disable-headers-api --disable-bindlocal --disable-progress-meter
    --disable-get-easy-options --disable-libcurl-option --disable-tls-srp --disable-verbose
    --without-libidn2 --without-librtmp --without-libssh2 --without-libssh --without-nghttp2
    --without-nghttp3 --without-ngtcp2 --without-brotli --without-zstd --without-zlib
    --without-gssapi --without-libgsasl
    --with-ca-bundle=/etc/ssl/certs/ca-certificates.crt --with-ca-path=/etc/ssl/certs)
mhd_conf=(--enable-static --disable-shared --with-pic --disable-https --disable-curl --disable-doc
    --disable-examples --disable-postprocessor --disable-bauth --disable-dauth --disable-httpupgrade
    --disable-nls)
srtp_conf=(--enable-openssl --disable-pcap)
# Archives Debian ships that link as they are: package, files.
# trixie's libcrypto is built with zlib and zstd compression, so their archives come too
# (a link takes only the members something references: none, where OpenSSL does not).
archives="libssl-dev:libssl.a,libcrypto.a zlib1g-dev:libz.a libzstd-dev:libzstd.a libdrm-dev:libdrm.a libopus-dev:libopus.a libsrt-openssl-dev:libsrt.a"
# x264 is built too, though Debian ships libx264.a: Debian's holds the 8- and the 10-bit
# encoders and OpenCL kernels (2.2 MB of the binary; onair encodes 8-bit 4:2:0 only), and its
# arm64 build is not position-independent (absolute relocations in its assembly), so it
# cannot go into a PIE.
x264_conf=(--enable-static --enable-pic --disable-cli --disable-opencl --bit-depth=8 --chroma-format=420 --disable-interlaced
    --disable-lavf --disable-swscale --disable-ffms --disable-gpac --disable-lsmash)
sources="x264 ffmpeg curl libmicrohttpd libsrtp2"
# Every function and object in its own section, so the final link (--gc-sections) keeps only
# what onair reaches; no unwind tables (C code throws nothing; a crash's backtrace stops at
# the first C frame instead), which are a tenth of the code's size.
sections="-ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables"

# Source versions: deb-src of this system's release, plus the release before it as a fallback
# where the registry's pool lacks a source package (trixie's x264, seen 2026-12): the older
# version is only taken when no newer one can be fetched.
case "$suite" in trixie) older=bookworm ;; *) older= ;; esac
fallback=/etc/apt/sources.list.d/onair-deb-src-older.list
if ! apt-get source --print-uris ffmpeg >/dev/null 2>&1 || { [ -n "$older" ] && [ ! -f "$fallback" ]; }; then
    say "adding deb-src for $suite${older:+ and $older} (apt-get source)"
    # The same sources as the packages, as deb-src (deb822 or one-line lists).
    for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
        [ -f "$f" ] || continue
        case "$f" in
            *.sources) sed 's/^Types: deb$/Types: deb-src/' "$f" > /etc/apt/sources.list.d/onair-deb-src.sources ;;
            *) grep '^deb ' "$f" | sed 's/^deb /deb-src /' > /etc/apt/sources.list.d/onair-deb-src.list ;;
        esac
    done
    [ -z "$older" ] || echo "deb-src http://deb.debian.org/debian $older main" > "$fallback"
    apt-get update -qq
fi
# The newest version the registry can actually serve (an index may name one that its pool
# does not have yet); fetched once into $cache/sources, where later runs find it.
mkdir -p "$cache/sources"
src_version() {
    local v
    for v in $(apt-cache showsrc --only-source "$1" | sed -n 's/^Version: //p' | sort -rV); do
        if (cd "$cache/sources" && apt-get source --download-only -qq "$1=$v" >/dev/null 2>&1); then echo "$v"; return; fi
        say "$1 $v: not in the registry's pool, trying an older one"
    done
}
# A sysroot unpacked without dpkg (toolchain/trixie.sh) lists its packages in onair-packages.
dev_version() {
    if [ -f "$sysroot/onair-packages" ]; then sed -n "s/^$1 //p" "$sysroot/onair-packages" | sort -V | tail -1
    else dpkg-query --admindir="$sysroot/var/lib/dpkg" -W -f='${Version}' "$1:$arch"; fi
}
declare -A version
for p in $sources; do version[$p]=$(src_version "$p"); done
for a in $archives; do version[${a%%:*}]=$(dev_version "${a%%:*}"); done
for p in "${!version[@]}"; do [ -n "${version[$p]}" ] || { echo "toolchain/deps.sh: no version of $p for $suite/$arch" >&2; exit 1; }; done

recipe="$arch $suite cc=$cc
ffmpeg ${version[ffmpeg]} ${ffmpeg_conf[*]} ${cross_ff[*]}
curl ${version[curl]} ${curl_conf[*]} ${cross_ac[*]}
libmicrohttpd ${version[libmicrohttpd]} ${mhd_conf[*]} ${cross_ac[*]}
x264 ${version[x264]} ${x264_conf[*]} ${cross_ac[*]}
libsrtp2 ${version[libsrtp2]} ${srtp_conf[*]} ${cross_ac[*]}
cflags $sections
$(for a in $archives; do echo "${a%%:*} ${version[${a%%:*}]}"; done)
pc v1"
key=$(printf '%s' "$recipe" | sha256sum | cut -c1-12)
prefix=$cache/$arch-$suite-$key
if [ -f "$prefix/.complete" ]; then echo "$prefix"; exit 0; fi

say "building the static libraries for $arch ($suite) into $prefix (once per machine)"
work=$cache/work-$arch-$suite
rm -rf "$work" "$prefix"
mkdir -p "$work" "$prefix/lib/pkgconfig" "$prefix/include"
cd "$work"
jobs=$(( $(nproc) + 1 ))
started=$SECONDS
for p in $sources; do
    dpkg-source -x --no-check "$cache/sources/${p}_${version[$p]#*:}.dsc" "$p" >/dev/null
done

say "x264 ${version[x264]}"
(cd x264 && CC="$cc" AR="$ar" RANLIB="$ranlib" STRIP=true ./configure --prefix="$prefix" --extra-cflags="$sections" \
    "${cross_ac[@]}" "${x264_conf[@]}" >configure.log 2>&1 || { tail -n 20 configure.log config.log >&2; exit 1; }
 make -j"$jobs" >make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
 make install-lib-static >/dev/null)
# FFmpeg's configure finds it through pkg-config, which puts the sysroot before its paths.
sed -i "s|^prefix=.*|prefix=${prefix#"$sysroot"}|" "$prefix/lib/pkgconfig/x264.pc"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig:$PKG_CONFIG_PATH

say "ffmpeg ${version[ffmpeg]}"
(cd ffmpeg && ./configure --prefix="$prefix" --cc="$cc" --ar="$ar" --ranlib="$ranlib" --extra-cflags="$sections" \
    "${cross_ff[@]}" "${ffmpeg_conf[@]}" >configure.log 2>&1 || { tail -n 20 configure.log ffbuild/config.log >&2; exit 1; }
 make -j"$jobs" >make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
 make install >/dev/null)

say "curl ${version[curl]}"
(cd curl && CC="$cc" AR="$ar" RANLIB="$ranlib" CFLAGS="-O2 $sections" ./configure --prefix="$prefix" "${cross_ac[@]}" "${curl_conf[@]}" >configure.log 2>&1 ||
    { tail -n 20 configure.log >&2; exit 1; }
 make -j"$jobs" -C lib >make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
 make -C lib install >/dev/null && make -C include install >/dev/null)

say "libmicrohttpd ${version[libmicrohttpd]}"
(cd libmicrohttpd && CC="$cc" AR="$ar" RANLIB="$ranlib" CFLAGS="-O2 $sections" ./configure --prefix="$prefix" "${cross_ac[@]}" "${mhd_conf[@]}" >configure.log 2>&1 ||
    { tail -n 20 configure.log >&2; exit 1; }
 make -j"$jobs" -C src/microhttpd >make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
 make -C src/microhttpd install >/dev/null && make -C src/include install >/dev/null)

say "libsrtp2 ${version[libsrtp2]}"
# Its configure finds OpenSSL through pkg-config (the target's libcrypto.pc).
(cd libsrtp2 && CC="$cc" AR="$ar" RANLIB="$ranlib" CFLAGS="-O2 -fPIC $sections" ./configure --prefix="$prefix" "${cross_ac[@]}" "${srtp_conf[@]}" >configure.log 2>&1 ||
    { tail -n 20 configure.log >&2; exit 1; }
 make -j"$jobs" libsrtp2.a >make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
 mkdir -p "$prefix/include/srtp2" && cp include/srtp.h crypto/include/cipher.h crypto/include/auth.h crypto/include/crypto_types.h "$prefix/include/srtp2/" &&
 cp libsrtp2.a "$prefix/lib/")

# Debian's archives, and libdrm's headers beside them (onair's preview includes them).
for a in $archives; do
    for f in $(echo "${a#*:}" | tr , ' '); do cp "${sysroot:-}/usr/lib/$gnu/$f" "$prefix/lib/"; done
done
cp -r "${sysroot:-}/usr/include/libdrm" "${sysroot:-}"/usr/include/xf86drm*.h "$prefix/include/"
rm -f "$prefix"/lib/*.la

# The .pc files Package.swift's system libraries are found by, each naming all it needs.
# Paths in them are relative to the sysroot, which SwiftPM (like pkg-config) puts before them.
pc() {  # name, version, libs, [extra cflags]
    printf 'prefix=%s\nName: %s\nDescription: %s, static (toolchain/deps.sh)\nVersion: %s\nCflags: -I${prefix}/include%s\nLibs: -L${prefix}/lib %s\n' \
        "${prefix#"$sysroot"}" "$1" "$1" "$2" "${4:-}" "$3" > "$prefix/lib/pkgconfig/$1.pc"
}
pc libavcodec "${version[ffmpeg]}" "-l:libavcodec.a -l:libswscale.a -l:libavutil.a -l:libx264.a -lva-drm -lva -lm -ldl -lpthread"
pc libcurl "${version[curl]}" "-l:libcurl.a -l:libssl.a -l:libcrypto.a -l:libzstd.a -l:libz.a -ldl -lpthread"
pc libmicrohttpd "${version[libmicrohttpd]}" "-l:libmicrohttpd.a -lpthread"
pc libdrm "${version[libdrm-dev]}" "-l:libdrm.a" " -I\${prefix}/include/libdrm"
pc libsrtp2 "${version[libsrtp2]}" "-l:libsrtp2.a -l:libcrypto.a -ldl -lpthread"
pc opus "${version[libopus-dev]}" "-l:libopus.a -lm"
# libsrt is C++: the C++ runtime the binary already carries.
pc srt "${version[libsrt-openssl-dev]}" "-l:libsrt.a -l:libcrypto.a -l:libzstd.a -l:libz.a -lstdc++ -lm -ldl -lpthread"

# What `onair version` reports of the libraries linked in: Debian's package versions.
{
    echo "/* Written by toolchain/deps.sh: the Debian source versions linked into onair. */"
    for p in ffmpeg curl libmicrohttpd x264 libsrtp2 libssl-dev libdrm-dev libopus-dev libsrt-openssl-dev; do
        n=$(echo "${p%-dev}" | tr 'a-z0-9-' 'A-Z0-9_')
        v=${version[$p]:-${version[${p%-dev}]:-}}
        echo "#define ONAIR_DEBIAN_${n} \"$v\""
    done
    echo "#define ONAIR_DEBIAN_SUITE \"$suite\""
} > "$prefix/include/onair-deps.h"
printf '%s\n' "$recipe" > "$prefix/recipe"
cd / && rm -rf "$work"
touch "$prefix/.complete"
say "done in $(( SECONDS - started )) s: $(du -sh "$prefix/lib" | cut -f1) of archives"
echo "$prefix"
