#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include "onair_linux.h"

int onair_reserve(int fd, int64_t offset, int64_t length) {
    return fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length) == 0 ? 0 : errno;
}
