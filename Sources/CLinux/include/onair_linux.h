// Linux interfaces Swift cannot import directly: GNU-only calls, ioctl(2) (variadic), and
// ioctl request numbers (function-like macros). Where a request's size field must match
// the struct Swift sees, a _Static_assert in linux.c says so at build time.
#ifndef ONAIR_LINUX_H
#define ONAIR_LINUX_H
#include <stdint.h>
#include <linux/videodev2.h>
#include <linux/gpio.h>
#include <linux/input.h>

/// fallocate(2) with FALLOC_FL_KEEP_SIZE: reserves blocks past the end of the file
/// without changing its size, so readers and crash recovery never see the reservation.
/// Returns 0 or an errno value.
int onair_reserve(int fd, int64_t offset, int64_t length);

/// pipe2(2) (GNU): both ends O_CLOEXEC, and O_NONBLOCK when `nonblocking`. 0 or -1 (errno).
int onair_pipe(int ends[2], int nonblocking);

/// accept4(2) (GNU) with SOCK_NONBLOCK and SOCK_CLOEXEC: the connection, or -1 (errno).
/// `address` takes a struct sockaddr_storage; `length` its size in, the address's out.
int onair_accept(int socket, void *address, unsigned int *length);

/// recvmsg(2) of one IPv4 datagram on a socket with IP_PKTINFO set (ip(7)): the byte
/// count or -1 (errno); `source` takes a struct sockaddr_in, and `local` the 4 bytes of the
/// address it was received on (in_pktinfo's ipi_spec_dst: the interface's own address for
/// a multicast or broadcast datagram), zero when the kernel did not say. The CMSG_* macros
/// that walk the control data are what Swift cannot import.
long onair_receive_with_local(int socket, void *buffer, unsigned long size, void *source, uint8_t local[4]);

/// mkostemp(3) (GNU) with O_CLOEXEC: the descriptor, or -1 (errno).
int onair_mkostemp(char *name_template);

/// Names the calling thread (pthread_setname_np, a GNU extension Swift's Glibc does not
/// export): what `top -H`, gdb and /proc/PID/task/*/comm show. The kernel keeps 15 bytes.
int onair_name_thread(const char *name);

/// CLOCK_MONOTONIC nanoseconds when the process started (a constructor's reading, before
/// the Swift runtime and main): the origin of every log line's t_ms.
int64_t onair_process_start_ns(void);

/// Whether the kernel holds the wall clock synchronised: adjtimex(2) read-only (modes 0,
/// no privilege needed), STA_UNSYNC clear. NTP daemons (systemd-timesyncd, chrony) clear
/// it once they discipline the clock; the kernel sets it again when maxerror grows past
/// 16 s without an update. 1 synchronised, 0 not, -errno when adjtimex failed.
int onair_clock_synchronized(void);

/// ioctl(2) with a pointer argument, retried on EINTR. Returns 0 or an errno value.
int onair_ioctl(int fd, unsigned long request, void *argument);

/// VIDIOC_EXPBUF's flags: the DMABUF read-only and close-on-exec (O_RDONLY | O_CLOEXEC).
extern const uint32_t onair_dmabuf_export_flags;

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

/// GPIO character device uAPI v2 (Documentation/userspace-api/gpio/chardev.rst): asks
/// `chip_fd` for one input line with edge events on both edges, the given bias
/// (0 none, 1 pull-up, 2 pull-down, 3 disabled), active-low, and a hardware debounce
/// period (0: none). The line's event fd comes back in `line_fd`. Returns 0 or an errno.
int onair_gpio_request_input(int chip_fd, uint32_t offset, int active_low, int bias, uint32_t debounce_us,
                             const char *consumer, int *line_fd);

/// Requests one output line (a tally light), initially `value`; its fd in `line_fd`.
int onair_gpio_request_output(int chip_fd, uint32_t offset, int active_low, int value, const char *consumer, int *line_fd);

/// Sets an output line requested by onair_gpio_request_output.
int onair_gpio_set(int line_fd, int value);

/// A requested line's level (1 active, 0 not, as its active-low flag makes it), or a
/// negative errno.
int onair_gpio_get(int line_fd);

/// GPIO_V2_GET_LINEINFO_IOCTL: whether line `offset` of `chip_fd` is held (1) or free
/// (0), and who holds it (the consumer the kernel reports, NUL-terminated, at most
/// `size` - 1 bytes). Returns 0 or an errno (EINVAL: no such line).
int onair_gpio_line_holder(int chip_fd, uint32_t offset, int *used, char *consumer, int size);

/// Size of one struct gpio_v2_line_event as read(2) returns it.
extern const int onair_gpio_event_size;

/// evdev: whether the device reports key `code` (EVIOCGBIT(EV_KEY)). 1, 0, or -errno.
int onair_evdev_has_key(int fd, unsigned int code);

/// Size of one struct input_event on this ABI.
extern const int onair_input_event_size;
#endif
