// libdrm for Swift: the KMS calls the preview makes, plus the dumb-buffer ioctls, whose
// request numbers are function-like macros Swift cannot import.
#ifndef ONAIR_CDRM_SHIM_H
#define ONAIR_CDRM_SHIM_H
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include <drm_fourcc.h>

/// DRM_IOCTL_MODE_CREATE_DUMB: a CPU-mappable buffer. Returns 0 or an errno.
static inline int onair_drm_create_dumb(int fd, uint32_t width, uint32_t height, uint32_t bpp,
                                        uint32_t *handle, uint32_t *pitch, uint64_t *size) {
    struct drm_mode_create_dumb request;
    memset(&request, 0, sizeof request);
    request.width = width; request.height = height; request.bpp = bpp;
    if (drmIoctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, &request) != 0) return errno;
    *handle = request.handle; *pitch = request.pitch; *size = request.size;
    return 0;
}

/// DRM_IOCTL_MODE_MAP_DUMB: the offset to mmap the buffer at. Returns 0 or an errno.
static inline int onair_drm_map_dumb(int fd, uint32_t handle, uint64_t *offset) {
    struct drm_mode_map_dumb request;
    memset(&request, 0, sizeof request);
    request.handle = handle;
    if (drmIoctl(fd, DRM_IOCTL_MODE_MAP_DUMB, &request) != 0) return errno;
    *offset = request.offset;
    return 0;
}

static inline void onair_drm_destroy_dumb(int fd, uint32_t handle) {
    struct drm_mode_destroy_dumb request = { .handle = handle };
    drmIoctl(fd, DRM_IOCTL_MODE_DESTROY_DUMB, &request);
}

/// A page-flip completion handler that sets *(int *)data to 1.
static inline void onair_drm_flip_done(int fd, unsigned int frame, unsigned int sec, unsigned int usec, void *data) {
    (void)fd; (void)frame; (void)sec; (void)usec;
    *(int *)data = 1;
}

/// Reads pending DRM events (page flips); `done` is set when a flip has completed.
static inline int onair_drm_handle_events(int fd, int *done) {
    drmEventContext context;
    memset(&context, 0, sizeof context);
    context.version = 2;
    context.page_flip_handler = onair_drm_flip_done;
    (void)done;
    return drmHandleEvent(fd, &context);
}

static inline uint32_t onair_drm_format_xrgb8888(void) { return DRM_FORMAT_XRGB8888; }
static inline uint32_t onair_drm_page_flip_event(void) { return DRM_MODE_PAGE_FLIP_EVENT; }
static inline int onair_drm_connected(const drmModeConnector *c) { return c->connection == DRM_MODE_CONNECTED; }

// The Debian source versions toolchain/deps.sh built or took the static libraries from;
// "" when the build links Debian's shared libraries instead (a bare `swift build`).
#if __has_include(<onair-deps.h>)
#include <onair-deps.h>
#endif
static inline const char *onair_debian_libdrm(void) {
#ifdef ONAIR_DEBIAN_LIBDRM
    return ONAIR_DEBIAN_LIBDRM;
#else
    return "";
#endif
}
#endif
