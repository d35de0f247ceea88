// libsrt (Debian's libsrt-openssl-dev: libsrt.a on OpenSSL, linked statically through
// toolchain/deps.sh's srt.pc) for SRT destinations: a caller in live mode.
#include <srt/srt.h>
