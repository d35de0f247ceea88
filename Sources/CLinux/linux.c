#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <linux/falloc.h>
#include "onair_linux.h"

int onair_reserve(int fd, int64_t offset, int64_t length) {
    return fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length) == 0 ? 0 : errno;
}

int onair_ioctl(int fd, unsigned long request, void *argument) {
    int result;
    do { result = ioctl(fd, request, argument); } while (result == -1 && errno == EINTR);
    return result == -1 ? errno : 0;
}

// Each request encodes the size of the struct it carries (_IOC_SIZE); the kernel rejects
// a mismatch with ENOTTY. These hold whatever the ABI (LP64, or 32-bit with 64-bit time).
_Static_assert(_IOC_SIZE(VIDIOC_QUERYCAP) == sizeof(struct v4l2_capability), "v4l2_capability");
_Static_assert(_IOC_SIZE(VIDIOC_ENUM_FMT) == sizeof(struct v4l2_fmtdesc), "v4l2_fmtdesc");
_Static_assert(_IOC_SIZE(VIDIOC_ENUM_FRAMESIZES) == sizeof(struct v4l2_frmsizeenum), "v4l2_frmsizeenum");
_Static_assert(_IOC_SIZE(VIDIOC_ENUM_FRAMEINTERVALS) == sizeof(struct v4l2_frmivalenum), "v4l2_frmivalenum");
_Static_assert(_IOC_SIZE(VIDIOC_S_FMT) == sizeof(struct v4l2_format), "v4l2_format");
_Static_assert(_IOC_SIZE(VIDIOC_S_PARM) == sizeof(struct v4l2_streamparm), "v4l2_streamparm");
_Static_assert(_IOC_SIZE(VIDIOC_REQBUFS) == sizeof(struct v4l2_requestbuffers), "v4l2_requestbuffers");
_Static_assert(_IOC_SIZE(VIDIOC_QBUF) == sizeof(struct v4l2_buffer), "v4l2_buffer");
_Static_assert(_IOC_SIZE(VIDIOC_EXPBUF) == sizeof(struct v4l2_exportbuffer), "v4l2_exportbuffer");
// Fixed-size structs whose layout the uAPI promises on every ABI.
_Static_assert(sizeof(struct v4l2_capability) == 104, "v4l2_capability layout");
_Static_assert(sizeof(struct v4l2_fmtdesc) == 64, "v4l2_fmtdesc layout");
_Static_assert(sizeof(struct v4l2_pix_format) == 48, "v4l2_pix_format layout");
_Static_assert(offsetof(struct v4l2_format, fmt) == 8, "v4l2_format.fmt follows the type and padding");

const unsigned long onair_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
const unsigned long onair_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
const unsigned long onair_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
const unsigned long onair_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
const unsigned long onair_VIDIOC_S_FMT = VIDIOC_S_FMT;
const unsigned long onair_VIDIOC_S_PARM = VIDIOC_S_PARM;
const unsigned long onair_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
const unsigned long onair_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
const unsigned long onair_VIDIOC_EXPBUF = VIDIOC_EXPBUF;
const unsigned long onair_VIDIOC_QBUF = VIDIOC_QBUF;
const unsigned long onair_VIDIOC_DQBUF = VIDIOC_DQBUF;
const unsigned long onair_VIDIOC_STREAMON = VIDIOC_STREAMON;
const unsigned long onair_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
