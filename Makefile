# onair: make run | make test | make bench | make fuzz | make structure | make build [ARCH=arm64] | make deps | make clean
# Every Debian package the build, the tests and the benchmark need is installed by
# `make deps`, which the other targets call first; it is quick when all are present.

SHELL := /bin/bash
export PATH := $(PATH):/opt/swift/usr/bin

# Build: what toolchain/deps.sh needs to build FFmpeg, libcurl, libmicrohttpd and libsrtp2 minimal from
# Debian's source packages (dpkg-dev unpacks them, nasm assembles FFmpeg's x86 code), the
# archives it links as Debian ships them (OpenSSL with zlib and zstd, libdrm, libopus), and the headers of the
# two libraries that stay shared (libasound, libva).
BUILD_DEBS := pkg-config dpkg-dev nasm libssl-dev zlib1g-dev libzstd-dev libdrm-dev libopus-dev libsrt-openssl-dev libva-dev libasound2-dev
# Tests and benchmark (installed by `make test` and `make bench`, not `make run`): ffmpeg decodes and compares, Chromium plays the stream natively,
# nginx and Apache (WebDAV PUT) are the HTTP origins that publishing is tested against, and python3-venv
# holds the S3-compatible test server (moto, from PyPI); GNU time measures the peak memory
# of processes smaller than the benchmark's Python; GStreamer's hlsdemux2 (plugins-good) is
# the second player the low-latency playlists must still play as regular HLS; Firefox (ESR,
# driven over its own Marionette protocol) is the browser without native HLS; Debian's
# wpa_supplicant reads the configuration onair writes for [wifi] and answers its control socket.
TEST_DEBS := ffmpeg chromium firefox-esr nginx libnginx-mod-rtmp libnginx-mod-stream srt-tools apache2 python3-venv time gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-libav wpasupplicant bind9-dnsutils zbar-tools
# Images and the system test: the root file system from Debian packages (mmdebstrap),
# partitions as files (mtools, dosfstools, e2fsprogs, fdisk), bmap-tools, and QEMU with
# OVMF to boot the result; arm64 images run their packages' scripts through qemu-user and
# boot on QEMU's aarch64 virt machine. The board's LAN in the system test: dnsmasq (DHCP) in a
# namespace of the test's own (scripts/vm_lan.py), where the ONVIF clients find the board.
IMAGE_DEBS := mmdebstrap mtools dosfstools e2fsprogs fdisk bmap-tools file binutils qemu-system-x86 qemu-utils ovmf \
	qemu-user-static binfmt-support arch-test qemu-system-arm dnsmasq-base python3-venv rauc squashfs-tools openssl
# Other architectures and Swift 6.0: Debian trixie's swiftlang in a build root
# (toolchain/trixie.sh); qemu-user runs a foreign build once to show it starts.
TOOLCHAIN_DEBS := mmdebstrap file qemu-user-static
BOARD ?= qemu-x86_64
HOST_ARCH := $(shell dpkg --print-architecture)
ARCH ?= $(HOST_ARCH)
BOARD_ARCH = $(shell . board/$(BOARD)/board.conf 2>/dev/null && echo $$ARCH)

# The host's Swift builds for the host; any other ARCH is built with trixie's Swift 6.0.3.
# The tests, the benchmark and `make run` use the host's build. Every build links the
# static libraries of toolchain/deps.sh (made once per machine), found through the .pc files
# in its prefix; toolchain/check-binary.sh then proves what the binary loads and links.
bin_for = $(if $(filter $(HOST_ARCH),$(1)),.build/release/onair,.build-trixie/$(1)/release/onair)
RELEASE_BIN := .build/release/onair
WITH_DEPS = deps=$$(toolchain/deps.sh $(HOST_ARCH)) && export PKG_CONFIG_PATH=$$deps/lib/pkgconfig &&
# Linked by the toolchain's lld (a SwiftPM toolset: -Xswiftc -use-ld no longer reaches the
# link) so relative relocations can be packed (DT_RELR, glibc 2.36+): a PIE's table of them
# shrinks from 1.4 MB to a few KB. Gold, swiftc's default here, cannot. The Swift runtime's
# -export-dynamic is undone: nothing loaded at run time (ALSA plugins, VA drivers) refers
# back into onair, and the 4,600 exported names cost 0.3 MB.
LLD_TOOLSET := .build/lld-toolset.json
SWIFT_RELEASE = $(WITH_DEPS) mkdir -p .build && printf '{"schemaVersion": "1.0", "linker": {"path": "%s"}}\n' "$$(command -v ld.lld)" > $(LLD_TOOLSET) && \
	swift build -c release --static-swift-stdlib --toolset $(LLD_TOOLSET) -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic

# moto's server mode: an S3-compatible server that checks SigV4 signatures, for the tests.
MOTO := .build/moto/bin/moto_server
# ONVIF's real clients from PyPI (issue 32): WS-Discovery, and onvif-zeep as NVRs' scripts use it.
# python-zeroconf: the mDNS and DNS-SD client that finds the board by name on its LAN.
ONVIF_CLIENTS := .build/onvif/installed
# A WebRTC stack that is not a browser's (issue 45): aiortc, which offers H.264 as
# Constrained Baseline only and decodes with libavcodec (PyAV's wheel carries its own).
WEBRTC_CLIENTS := .build/webrtc/installed

DEBS_deps := $(BUILD_DEBS)
DEBS_test-deps := $(BUILD_DEBS) $(TEST_DEBS)
DEBS_image-deps := $(IMAGE_DEBS)
DEBS_toolchain-deps := $(TOOLCHAIN_DEBS)

.PHONY: all deps test-deps image-deps toolchain-deps ci-prepare build swift-6.0 run test bench fuzz structure image image-check image-repro bundle vm-test vm-boot clean

all: build

deps test-deps image-deps toolchain-deps:
	@missing=$$(for p in $(DEBS_$@); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing $$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
ifeq ($(ARCH),$(HOST_ARCH))
	$(SWIFT_RELEASE)
	toolchain/check-binary.sh $(RELEASE_BIN)
else
	$(MAKE) toolchain-deps
	toolchain/trixie.sh $(ARCH)
endif

# The oldest Swift onair supports: everything, tests included, built with Debian's 6.0.3.
swift-6.0: toolchain-deps
	toolchain/trixie.sh $(HOST_ARCH) debug --build-tests

# The main job on the embedded defaults: synthetic camera + mic when there is no camera,
# served at http://127.0.0.1:8080 until Ctrl-C.
run: build
	$(RELEASE_BIN) run

# Unit tests, then the integration tests that run the release binary for real. The tests
# are XCTest; Swift Testing is off so the run closes on XCTest's summary line.
test: test-deps $(MOTO) $(ONVIF_CLIENTS) $(WEBRTC_CLIENTS)
	mkdir -p .build && date +%s > .build/test-started
	$(SWIFT_RELEASE)
	toolchain/check-binary.sh $(RELEASE_BIN)
	$(WITH_DEPS) ONAIR_BINARY=$(abspath $(RELEASE_BIN)) swift test --disable-swift-testing 2>&1 | tee .build/test.log; \
		status=$${PIPESTATUS[0]}; toolchain/test-report.sh .build/test.log $$(cat .build/test-started); exit $$status

# Each of the tests' Python clients lives in a venv made once per machine (as toolchain/
# deps.sh's libraries are), under $(VENVS), named by what it holds; .build/<name> links to
# it, so a fresh clone on a machine that has them installs nothing.
VENVS ?= /var/cache/onair-venvs
define venv
	@dir=$(VENVS)/$(1)-$$(echo "$(2)" | sha256sum | cut -c1-12); \
	if [ ! -e $$dir/installed ]; then \
		echo "make: a venv for $(1): $(2)"; rm -rf $$dir && python3 -m venv $$dir && $$dir/bin/pip install -q $(2) && touch $$dir/installed; \
	fi; \
	mkdir -p .build && { [ -L .build/$(1) ] || rm -rf .build/$(1); } && ln -sfn $$dir .build/$(1)
endef

$(MOTO):
	$(call venv,moto,'moto[server]==5.2.5' 'boto3==1.*')

$(ONVIF_CLIENTS):
	$(call venv,onvif,'onvif-zeep==0.2.12' 'WSDiscovery==2.1.2' 'zeroconf==0.147.0')

$(WEBRTC_CLIENTS):
	$(call venv,webrtc,'aiortc==1.16.0')

bench: test-deps build $(WEBRTC_CLIENTS)
	ONAIR_BINARY=$(abspath $(RELEASE_BIN)) python3 scripts/bench.py

# The fuzzer of every reader of outside input (boxes, playlists, whole streams, onair.conf,
# Range headers, raw HTTP), FUZZ_CASES cases each (make test runs 1,500). A crash or hang
# leaves its input in fuzz-crashes/ and fails; `.build/debug/onair-fuzz --replay TARGET FILE`
# runs one input (under gdb, say), and Tests/FuzzTests/Corpus/<target>/ keeps it for make test.
FUZZ_CASES ?= 200000
FUZZ_SEED ?= 1
# The numbers the source's shape is judged by (names outside StreamLayout, errno sites,
# @unchecked Sendable, long files and functions, sleeps in unit tests); -v lists each place.
structure:
	python3 toolchain/structure.py $(if $(V),-v)

fuzz: test-deps
	$(SWIFT_RELEASE) --product onair
	$(SWIFT_RELEASE) --product onair-fuzz
	ONAIR_BINARY=$(abspath $(RELEASE_BIN)) .build/release/onair-fuzz --cases $(FUZZ_CASES) --seed $(FUZZ_SEED) --crashes fuzz-crashes

# Update bundles are signed with UPDATE_KEY, and boards trust UPDATE_CERT (its keyring is
# set when the image is built). Unless told otherwise, a development key of this machine,
# made once: fine for tests, not for boards in the field (README, "Updates").
UPDATE_KEY ?= .build/update-key/development.key.pem
UPDATE_CERT ?= .build/update-key/development.cert.pem
.build/update-key/development.key.pem .build/update-key/development.cert.pem:
	mkdir -p .build/update-key && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500 \
		-subj "/O=onair/CN=onair development update key $$(hostname)" \
		-keyout .build/update-key/development.key.pem -out .build/update-key/development.cert.pem 2>/dev/null

# What the tests and the images need, made before any of them (.ci/run's first steps):
# Debian's packages, the tests' Python clients and the update key.
ci-prepare: test-deps image-deps toolchain-deps $(MOTO) $(ONVIF_CLIENTS) $(WEBRTC_CLIENTS) $(UPDATE_KEY) $(UPDATE_CERT)

# A flashable image for BOARD (board/<name>/): out/onair-BOARD.img, .bmap and .sha256.
image: image-deps $(UPDATE_KEY) $(UPDATE_CERT)
	$(MAKE) build ARCH=$(BOARD_ARCH)
	$(if $(filter qemu-x86_64,$(BOARD)),$(MAKE) $(UVC_CAMERA))
	UPDATE_CERTS=$(UPDATE_CERT) image/build.sh $(BOARD) $(call bin_for,$(BOARD_ARCH)) out

# A signed update bundle of the image's root file system: out/onair-BOARD.raucb.
bundle: image
	image/bundle.sh $(BOARD) out $(UPDATE_KEY) $(UPDATE_CERT)

# The system test's USB webcam (scripts/uvc-camera.c), which the qemu-x86_64 test board
# carries (board.conf's TEST_HELPERS): a UVC camera made through GadgetFS on the guest's
# dummy USB controller, its JPEGs from the libavcodec onair links.
UVC_CAMERA := .build/helpers/uvc-camera
$(UVC_CAMERA): scripts/uvc-camera.c
	$(WITH_DEPS) mkdir -p $(@D) && cc -O2 -Wall -Wextra -o $@ $< $$(pkg-config --static --cflags --libs libavcodec libavutil) -lpthread

# What a Raspberry Pi needs of its image, checked on the image file (BOARD=rpi4|rpi5).
image-check:
	python3 scripts/check_rpi_boot.py out/onair-$(BOARD).img board/$(BOARD)

# Reproducibility: a second build of the same commit must be byte-identical to the first.
image-repro: image
	UPDATE_CERTS=$(UPDATE_CERT) image/build.sh $(BOARD) $(call bin_for,$(BOARD_ARCH)) out/repro
	cmp out/onair-$(BOARD).img out/repro/onair-$(BOARD).img
	@echo "make image-repro: two builds of out/onair-$(BOARD).img are byte-identical"
	rm -rf out/repro

# The system test: boots the qemu-x86_64 image under QEMU, presses the button, watches the
# serial console, cuts the power (scripts/vm_test.py says what it checks). `vm-test` builds
# the image first; `vm-boot` boots out/onair-BOARD.img as it is (.ci/run builds the Pi
# images beside the test suite and boots them afterwards). Both read the stream the board
# recorded with the host's build of onair ($(RELEASE_BIN)), built here when a Pi's
# image was the only build (a no-op after `make test`).
vm-test: image
	$(MAKE) vm-boot BOARD=$(BOARD)

vm-boot: $(ONVIF_CLIENTS)
	$(MAKE) build ARCH=$(HOST_ARCH)
	ONAIR_BINARY=$(abspath $(RELEASE_BIN)) BOARD=$(BOARD) python3 scripts/vm_test.py

clean:
	rm -rf .build .build-trixie var out
