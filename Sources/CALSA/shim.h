// libasound for Swift: the PCM API. The *_alloca helpers are macros Swift cannot call, so
// onair uses the *_malloc/*_free pairs instead. libasound prints its own diagnostics to
// stderr through a variadic handler Swift cannot write; onair_alsa_quiet installs a silent
// one so a bad device gets onair's single error line and nothing else.
#ifndef ONAIR_CALSA_SHIM_H
#define ONAIR_CALSA_SHIM_H
#include <alsa/asoundlib.h>

static void onair_alsa_silent(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}
static inline void onair_alsa_quiet(void) { snd_lib_error_set_handler(onair_alsa_silent); }
#endif
