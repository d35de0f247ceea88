#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/timex.h>
#include <linux/falloc.h>
#include "onair_linux.h"

int onair_reserve(int fd, int64_t offset, int64_t length) {
    return fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length) == 0 ? 0 : errno;
}

int onair_pipe(int ends[2], int nonblocking) {
    return pipe2(ends, O_CLOEXEC | (nonblocking ? O_NONBLOCK : 0));
}

int onair_accept(int socket, void *address, unsigned int *length) {
    socklen_t size = *length;
    int fd = accept4(socket, (struct sockaddr *)address, &size, SOCK_NONBLOCK | SOCK_CLOEXEC);
    *length = size;
    return fd;
}

long onair_receive_with_local(int socket, void *buffer, unsigned long size, void *source, uint8_t local[4]) {
    struct iovec vector = {.iov_base = buffer, .iov_len = size};
    union { char bytes[CMSG_SPACE(sizeof(struct in_pktinfo))]; struct cmsghdr align; } control;
    struct msghdr message = {.msg_name = source, .msg_namelen = sizeof(struct sockaddr_in), .msg_iov = &vector, .msg_iovlen = 1,
                             .msg_control = control.bytes, .msg_controllen = sizeof(control.bytes)};
    memset(local, 0, 4);
    ssize_t count = recvmsg(socket, &message, MSG_DONTWAIT);
    if (count < 0) return -1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == IPPROTO_IP && header->cmsg_type == IP_PKTINFO) {
            struct in_pktinfo info;
            memcpy(&info, CMSG_DATA(header), sizeof(info));
            memcpy(local, &info.ipi_spec_dst, 4);
        }
    }
    return count;
}

int onair_mkostemp(char *name_template) {
    return mkostemp(name_template, O_CLOEXEC);
}

int onair_clock_synchronized(void) {
    struct timex state;
    memset(&state, 0, sizeof state);  // modes 0: read only
    if (adjtimex(&state) == -1) return -errno;
    return (state.status & STA_UNSYNC) ? 0 : 1;
}

const uint32_t onair_dmabuf_export_flags = O_RDONLY | O_CLOEXEC;

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

// GPIO uAPI v2 layouts (<linux/gpio.h>): fixed by the kernel ABI on every architecture.
_Static_assert(sizeof(struct gpio_v2_line_event) == 48, "gpio_v2_line_event");
_Static_assert(sizeof(struct gpio_v2_line_attribute) == 16, "gpio_v2_line_attribute");
_Static_assert(sizeof(struct gpio_v2_line_config_attribute) == 24, "gpio_v2_line_config_attribute");
_Static_assert(sizeof(struct gpio_v2_line_config) == 272, "gpio_v2_line_config");
_Static_assert(sizeof(struct gpio_v2_line_request) == 592, "gpio_v2_line_request");
_Static_assert(sizeof(struct gpio_v2_line_values) == 16, "gpio_v2_line_values");
_Static_assert(_IOC_SIZE(GPIO_V2_GET_LINE_IOCTL) == sizeof(struct gpio_v2_line_request), "GPIO_V2_GET_LINE_IOCTL");
_Static_assert(offsetof(struct gpio_v2_line_event, id) == 8, "gpio_v2_line_event.id");

const int onair_gpio_event_size = sizeof(struct gpio_v2_line_event);
const int onair_input_event_size = sizeof(struct input_event);

static int gpio_request(int chip_fd, uint32_t offset, uint64_t flags, int with_debounce, uint32_t debounce_us,
                        int with_value, int value, const char *consumer, int *line_fd) {
    struct gpio_v2_line_request request;
    memset(&request, 0, sizeof request);
    request.offsets[0] = offset;
    request.num_lines = 1;
    strncpy(request.consumer, consumer, sizeof request.consumer - 1);
    request.config.flags = flags;
    unsigned int attrs = 0;
    if (with_debounce && debounce_us > 0) {
        request.config.attrs[attrs].attr.id = GPIO_V2_LINE_ATTR_ID_DEBOUNCE;
        request.config.attrs[attrs].attr.debounce_period_us = debounce_us;
        request.config.attrs[attrs].mask = 1;
        attrs++;
    }
    if (with_value) {
        request.config.attrs[attrs].attr.id = GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES;
        request.config.attrs[attrs].attr.values = value ? 1 : 0;
        request.config.attrs[attrs].mask = 1;
        attrs++;
    }
    request.config.num_attrs = attrs;
    int error = onair_ioctl(chip_fd, GPIO_V2_GET_LINE_IOCTL, &request);
    if (error == 0) *line_fd = request.fd;
    return error;
}

int onair_gpio_request_input(int chip_fd, uint32_t offset, int active_low, int bias, uint32_t debounce_us,
                             const char *consumer, int *line_fd) {
    uint64_t flags = GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING | GPIO_V2_LINE_FLAG_EDGE_FALLING;
    if (active_low) flags |= GPIO_V2_LINE_FLAG_ACTIVE_LOW;
    if (bias == 1) flags |= GPIO_V2_LINE_FLAG_BIAS_PULL_UP;
    if (bias == 2) flags |= GPIO_V2_LINE_FLAG_BIAS_PULL_DOWN;
    if (bias == 3) flags |= GPIO_V2_LINE_FLAG_BIAS_DISABLED;
    return gpio_request(chip_fd, offset, flags, 1, debounce_us, 0, 0, consumer, line_fd);
}

int onair_gpio_request_output(int chip_fd, uint32_t offset, int active_low, int value, const char *consumer, int *line_fd) {
    uint64_t flags = GPIO_V2_LINE_FLAG_OUTPUT | (active_low ? GPIO_V2_LINE_FLAG_ACTIVE_LOW : 0);
    return gpio_request(chip_fd, offset, flags, 0, 0, 1, value, consumer, line_fd);
}

int onair_gpio_line_holder(int chip_fd, uint32_t offset, int *used, char *consumer, int size) {
    struct gpio_v2_line_info info;
    memset(&info, 0, sizeof info);
    info.offset = offset;
    int result = onair_ioctl(chip_fd, GPIO_V2_GET_LINEINFO_IOCTL, &info);
    if (result != 0) return result;
    *used = (info.flags & GPIO_V2_LINE_FLAG_USED) ? 1 : 0;
    if (size > 0) {
        snprintf(consumer, (size_t)size, "%.*s", (int)sizeof info.consumer, info.consumer);
    }
    return 0;
}

int onair_gpio_get(int line_fd) {
    struct gpio_v2_line_values values = { .bits = 0, .mask = 1 };
    int result = onair_ioctl(line_fd, GPIO_V2_LINE_GET_VALUES_IOCTL, &values);
    return result != 0 ? -result : (int)(values.bits & 1);
}

int onair_gpio_set(int line_fd, int value) {
    struct gpio_v2_line_values values = { .bits = value ? 1 : 0, .mask = 1 };
    return onair_ioctl(line_fd, GPIO_V2_LINE_SET_VALUES_IOCTL, &values);
}

int onair_evdev_has_key(int fd, unsigned int code) {
    unsigned long bits[(KEY_MAX + 8 * sizeof(unsigned long)) / (8 * sizeof(unsigned long))];
    memset(bits, 0, sizeof bits);
    if (ioctl(fd, EVIOCGBIT(EV_KEY, sizeof bits), bits) < 0) return -errno;
    return (bits[code / (8 * sizeof(unsigned long))] >> (code % (8 * sizeof(unsigned long)))) & 1;
}

int onair_name_thread(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = 0;
    return pthread_setname_np(pthread_self(), truncated);
}

// CLOCK_MONOTONIC as the process starts: a constructor runs once the loader has mapped the
// shared libraries, before the Swift runtime and main, so t_ms leaves out only exec and the
// loader (what the bench times from outside).
static int64_t process_start_ns;
__attribute__((constructor(101))) static void onair_note_process_start(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    process_start_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}
int64_t onair_process_start_ns(void) { return process_start_ns; }
