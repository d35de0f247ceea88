// Linux interfaces Swift cannot import directly: GNU-only calls, ioctl(2) (variadic), and
// ioctl request numbers (function-like macros). Where a request's size field must match
// the struct Swift sees, a _Static_assert in linux.c says so at build time.
#ifndef ONAIR_LINUX_H
#define ONAIR_LINUX_H
#include <stdint.h>
#include <linux/videodev2.h>

/// fallocate(2) with FALLOC_FL_KEEP_SIZE: reserves blocks past the end of the file
/// without changing its size, so readers and crash recovery never see the reservation.
/// Returns 0 or an errno value.
int onair_reserve(int fd, int64_t offset, int64_t length);

/// ioctl(2) with a pointer argument, retried on EINTR. Returns 0 or an errno value.
int onair_ioctl(int fd, unsigned long request, void *argument);

/// V4L2 requests (Documentation/userspace-api/media/v4l/user-func.rst).
extern const unsigned long onair_VIDIOC_QUERYCAP;
extern const unsigned long onair_VIDIOC_ENUM_FMT;
extern const unsigned long onair_VIDIOC_ENUM_FRAMESIZES;
extern const unsigned long onair_VIDIOC_ENUM_FRAMEINTERVALS;
extern const unsigned long onair_VIDIOC_S_FMT;
extern const unsigned long onair_VIDIOC_S_PARM;
extern const unsigned long onair_VIDIOC_REQBUFS;
extern const unsigned long onair_VIDIOC_QUERYBUF;
extern const unsigned long onair_VIDIOC_EXPBUF;
extern const unsigned long onair_VIDIOC_QBUF;
extern const unsigned long onair_VIDIOC_DQBUF;
extern const unsigned long onair_VIDIOC_STREAMON;
extern const unsigned long onair_VIDIOC_STREAMOFF;
#endif
