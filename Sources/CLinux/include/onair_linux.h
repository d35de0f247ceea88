// Linux interfaces Swift cannot import directly: GNU-only calls and (later) ioctl
// numbers and structs, each checked with a _Static_assert where the layout matters.
#ifndef ONAIR_LINUX_H
#define ONAIR_LINUX_H
#include <stdint.h>

/// fallocate(2) with FALLOC_FL_KEEP_SIZE: reserves blocks past the end of the file
/// without changing its size, so readers and crash recovery never see the reservation.
/// Returns 0 or an errno value.
int onair_reserve(int fd, int64_t offset, int64_t length);
#endif
