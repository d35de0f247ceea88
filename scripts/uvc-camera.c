/*
 * uvc-camera: a USB webcam for the system test (make vm-test), made in user space.
 *
 * Through GadgetFS on the guest's dummy_hcd, this program is a UVC 1.1 camera as cheap
 * webcams are: one MJPEG format in several sizes and frame intervals, streamed over a bulk
 * endpoint (USB Video Class 1.1 §2.4.3; the configfs UVC function offers only isochronous
 * endpoints, which dummy_hcd lacks). The guest's own uvcvideo driver binds to it, so onair
 * meets the kernel's real USB and UVC stack. Each picture carries its index in a band of 16
 * black or white blocks across its middle (the most significant bit first), so the frames
 * decoded from onair's stream tell which of the camera's pictures they are.
 *
 *   uvc-camera [--gadget DIR] [--console PATH] [--unplug-after N] [--away S] [--bad-every N]
 *
 * --unplug-after N: after the N-th picture the device goes off the bus (its GadgetFS file is
 * closed) for S seconds (--away, default 4), then comes back, the indices going on.
 * --bad-every N: picture k with k % N == N / 2 is sent broken, in turn: cut short (with the
 * end-of-frame bit), its header ruined, its first payload's header invalid (uvcvideo drops
 * that payload), stopped mid-frame (the next picture toggles the frame bit), and flagged by
 * the error bit. What happens is said on stderr and, with --console, on that terminal;
 * UVC_CAMERA_DEBUG=1 in the environment adds each control request the host sends.
 *
 * JPEGs come from libavcodec's MJPEG encoder, the library onair links. Only the requests a
 * host sends a camera are answered; anything else is stalled.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/usb/ch9.h>
#include <linux/usb/gadgetfs.h>
#include <libavcodec/avcodec.h>

/* UVC 1.1 §A: class codes, descriptor subtypes, requests, controls; payload header bits (§2.4.3.3). */
enum {
    CC_VIDEO = 0x0e, SC_VIDEOCONTROL = 0x01, SC_VIDEOSTREAMING = 0x02, SC_COLLECTION = 0x03,
    CS_INTERFACE = 0x24, VC_HEADER = 0x01, VC_INPUT_TERMINAL = 0x02, VC_OUTPUT_TERMINAL = 0x03,
    VS_INPUT_HEADER = 0x01, VS_FORMAT_MJPEG = 0x06, VS_FRAME_MJPEG = 0x07, VS_COLORFORMAT = 0x0d,
    SET_CUR = 0x01, GET_CUR = 0x81, GET_MIN = 0x82, GET_MAX = 0x83, GET_RES = 0x84, GET_LEN = 0x85,
    GET_INFO = 0x86, GET_DEF = 0x87, VS_PROBE = 0x01, VS_COMMIT = 0x02,
    HEADER_FID = 0x01, HEADER_EOF = 0x02, HEADER_ERR = 0x40, HEADER_EOH = 0x80,
};
#define STREAMING_INTERFACE 1
#define ENDPOINT 0x81 /* dummy_hcd's "ep1in-bulk" */
#define PROBE_SIZE 34 /* UVC 1.1 §4.3.1.1, Table 4-47 */
/* A payload (header + data) as the probe states it: uvcvideo ends a payload when a transfer
 * comes short or reaches this size, and sizes its bulk transfers by it. */
#define PAYLOAD 4096
#define HEADER 2

struct frame_size { int width, height, count; uint32_t intervals[6]; /* 100 ns units */ };
/* Three sizes, the middle one 16:9 and slow, as a cheap webcam lists them. The whole
 * configuration stays under 256 bytes: on the guest's kernel (Debian's 6.1) a longer one
 * is never read whole through GadgetFS and dummy_hcd (297 bytes timed out, 247 did not). */
static const struct frame_size sizes[] = {
    {640, 480, 6, {333333, 400000, 500000, 666666, 1000000, 2000000}},
    {1280, 720, 2, {1000000, 2000000}},
    {320, 240, 6, {333333, 400000, 500000, 666666, 1000000, 2000000}},
};
#define SIZES ((int)(sizeof sizes / sizeof sizes[0]))

static const char *gadget_dir = "/dev/gadget";
static const char *console;
static long unplug_after, away_s = 4, bad_every;

/* What the host asked for and what the streaming thread does: shared under `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct {
    int endpoint;          /* the bulk endpoint's file, -1 when not configured */
    int committed;         /* the host committed a format and has not stopped since */
    unsigned generation;   /* counts commits, stops and unplugs */
    int frame, interval;   /* the committed frame index (1-based) and interval */
    int unplug;            /* the streaming thread asks for the unplug */
    int idle;              /* the streaming thread is not writing */
} shared = {.endpoint = -1, .idle = 1};
static pthread_t streamer;
static int speed_high = 1;
static unsigned char probe[PROBE_SIZE];

static void say(const char *format, ...) {
    char line[256];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    fprintf(stderr, "uvc-camera: %s\n", line);
    /* Opened for each line: getty's vhangup() at its start ends every earlier open of the
     * serial port. */
    FILE *out = console ? fopen(console, "w") : NULL;
    if (out) { fprintf(out, "uvc-camera: %s\r\n", line); fclose(out); }
}

static void fail(const char *what) {
    say("%s: %s", what, strerror(errno));
    exit(1);
}

/* --- descriptors (UVC 1.1 §3) --------------------------------------------------------- */

struct buffer { unsigned char bytes[1024]; int length; };
static void put8(struct buffer *b, int v) { b->bytes[b->length++] = (unsigned char)v; }
static void put16(struct buffer *b, int v) { put8(b, v & 0xff); put8(b, (v >> 8) & 0xff); }
static void put32(struct buffer *b, uint32_t v) { put16(b, v & 0xffff); put16(b, v >> 16); }
static void set16(unsigned char *p, int v) { p[0] = v & 0xff; p[1] = (v >> 8) & 0xff; }
static void set32(unsigned char *p, uint32_t v) { set16(p, v & 0xffff); set16(p + 2, v >> 16); }
static uint32_t get32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* The configuration for one speed: an interface association, the VideoControl interface
 * (a camera terminal feeding a streaming output terminal) and the VideoStreaming one. */
static void configuration(struct buffer *b, int max_packet) {
    b->length = 0;
    put8(b, 9); put8(b, USB_DT_CONFIG); put16(b, 0); put8(b, 2); put8(b, 1); put8(b, 0);
    put8(b, USB_CONFIG_ATT_ONE); put8(b, 250);
    put8(b, 8); put8(b, USB_DT_INTERFACE_ASSOCIATION); put8(b, 0); put8(b, 2);
    put8(b, CC_VIDEO); put8(b, SC_COLLECTION); put8(b, 0); put8(b, 2);
    put8(b, 9); put8(b, USB_DT_INTERFACE); put8(b, 0); put8(b, 0); put8(b, 0);
    put8(b, CC_VIDEO); put8(b, SC_VIDEOCONTROL); put8(b, 0); put8(b, 2);
    int vc = b->length;
    put8(b, 13); put8(b, CS_INTERFACE); put8(b, VC_HEADER); put16(b, 0x0110); put16(b, 0);
    put32(b, 48000000); put8(b, 1); put8(b, STREAMING_INTERFACE);
    put8(b, 18); put8(b, CS_INTERFACE); put8(b, VC_INPUT_TERMINAL); put8(b, 1); put16(b, 0x0201);
    put8(b, 0); put8(b, 0); put16(b, 0); put16(b, 0); put16(b, 0); put8(b, 3); put8(b, 0); put8(b, 0); put8(b, 0);
    put8(b, 9); put8(b, CS_INTERFACE); put8(b, VC_OUTPUT_TERMINAL); put8(b, 2); put16(b, 0x0101);
    put8(b, 0); put8(b, 1); put8(b, 0);
    set16(b->bytes + vc + 5, b->length - vc);
    put8(b, 9); put8(b, USB_DT_INTERFACE); put8(b, STREAMING_INTERFACE); put8(b, 0); put8(b, 1);
    put8(b, CC_VIDEO); put8(b, SC_VIDEOSTREAMING); put8(b, 0); put8(b, 0);
    int vs = b->length;
    put8(b, 14); put8(b, CS_INTERFACE); put8(b, VS_INPUT_HEADER); put8(b, 1); put16(b, 0);
    put8(b, ENDPOINT); put8(b, 0); put8(b, 2); put8(b, 0); put8(b, 0); put8(b, 0); put8(b, 1); put8(b, 0);
    put8(b, 11); put8(b, CS_INTERFACE); put8(b, VS_FORMAT_MJPEG); put8(b, 1); put8(b, SIZES);
    put8(b, 1); put8(b, 1); put8(b, 0); put8(b, 0); put8(b, 0); put8(b, 0);
    for (int i = 0; i < SIZES; i++) {
        const struct frame_size *s = &sizes[i];
        uint32_t most = (uint32_t)(s->width * s->height * 2);
        put8(b, 26 + 4 * s->count); put8(b, CS_INTERFACE); put8(b, VS_FRAME_MJPEG); put8(b, i + 1); put8(b, 0);
        put16(b, s->width); put16(b, s->height);
        put32(b, most * 8 * 5); put32(b, most * 8 * 30); put32(b, most);
        put32(b, s->intervals[0]); put8(b, s->count);
        for (int k = 0; k < s->count; k++) put32(b, s->intervals[k]);
    }
    put8(b, 6); put8(b, CS_INTERFACE); put8(b, VS_COLORFORMAT); put8(b, 1); put8(b, 1); put8(b, 4);
    set16(b->bytes + vs + 4, b->length - vs);
    put8(b, USB_DT_ENDPOINT_SIZE); put8(b, USB_DT_ENDPOINT); put8(b, ENDPOINT); put8(b, USB_ENDPOINT_XFER_BULK);
    put16(b, max_packet); put8(b, 0);
    set16(b->bytes + 2, b->length);
}

static void device_descriptor(struct buffer *b) {
    b->length = 0;
    /* pid.codes' test VID:PID (1209:0001); multi-function class with an association. */
    put8(b, USB_DT_DEVICE_SIZE); put8(b, USB_DT_DEVICE); put16(b, 0x0200); put8(b, 0xef); put8(b, 0x02);
    put8(b, 0x01); put8(b, 64); put16(b, 0x1209); put16(b, 0x0001); put16(b, 0x0100); put8(b, 1); put8(b, 2);
    put8(b, 0); put8(b, 1);
}

/* The ep0 file: named after the controller, the one file GadgetFS has before binding. */
static int open_controller(void) {
    DIR *dir = opendir(gadget_dir);
    if (!dir) fail(gadget_dir);
    char path[512] = "";
    for (struct dirent *e; (e = readdir(dir));)
        if (e->d_name[0] != '.' && strncmp(e->d_name, "ep", 2) != 0) snprintf(path, sizeof path, "%s/%s", gadget_dir, e->d_name);
    closedir(dir);
    if (!path[0]) { errno = ENOENT; fail("no USB device controller in GadgetFS (is dummy_hcd loaded?)"); }
    int fd = open(path, O_RDWR);
    if (fd < 0) fail(path);
    struct buffer full, high, device;
    configuration(&full, 64);
    configuration(&high, 512);
    device_descriptor(&device);
    unsigned char all[4 + sizeof full.bytes * 2 + sizeof device.bytes];
    int n = 0;
    memset(all, 0, 4); n = 4;  /* tag 0 */
    memcpy(all + n, full.bytes, full.length); n += full.length;
    memcpy(all + n, high.bytes, high.length); n += high.length;
    memcpy(all + n, device.bytes, device.length); n += device.length;
    if (write(fd, all, n) != n) fail("writing the descriptors");
    return fd;
}

static int open_endpoint(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/ep1in-bulk", gadget_dir);
    int fd = open(path, O_RDWR);
    if (fd < 0) fail(path);
    unsigned char config[4 + 2 * USB_DT_ENDPOINT_SIZE] = {1, 0, 0, 0};
    for (int i = 0; i < 2; i++) {
        unsigned char *d = config + 4 + i * USB_DT_ENDPOINT_SIZE;
        d[0] = USB_DT_ENDPOINT_SIZE; d[1] = USB_DT_ENDPOINT; d[2] = ENDPOINT; d[3] = USB_ENDPOINT_XFER_BULK;
        set16(d + 4, i == 0 ? 64 : 512); d[6] = 0;
    }
    if (write(fd, config, sizeof config) != (ssize_t)sizeof config) fail("configuring the bulk endpoint");
    return fd;
}

/* --- probe and commit (UVC 1.1 §4.3.1.1) ---------------------------------------------- */

/* The nearest interval the frame lists (0: its default). */
static uint32_t nearest_interval(const struct frame_size *s, uint32_t wanted) {
    uint32_t best = s->intervals[0];
    for (int k = 0; wanted && k < s->count; k++) {
        uint32_t a = s->intervals[k] > wanted ? s->intervals[k] - wanted : wanted - s->intervals[k];
        uint32_t b = best > wanted ? best - wanted : wanted - best;
        if (a < b) best = s->intervals[k];
    }
    return best;
}

/* The device's answer to a probe: what it will do of what was asked. */
static void negotiate(unsigned char *out, const unsigned char *asked) {
    int frame = asked ? asked[3] : 1;
    if (frame < 1 || frame > SIZES) frame = 1;
    const struct frame_size *s = &sizes[frame - 1];
    uint32_t interval = nearest_interval(s, asked ? get32(asked + 4) : 0);
    memset(out, 0, PROBE_SIZE);
    out[2] = 1;
    out[3] = (unsigned char)frame;
    set32(out + 4, interval);
    set32(out + 18, (uint32_t)(s->width * s->height * 2));  /* dwMaxVideoFrameSize */
    set32(out + 22, PAYLOAD);                                /* dwMaxPayloadTransferSize */
    set32(out + 26, 48000000);                               /* dwClockFrequency */
    out[30] = 3; /* bmFramingInfo: FID and EOF are used */
}

/* GadgetFS: an empty read of ep0 stalls a request that wants data from the device, and
 * completes (acknowledges) one that brings none. */
static void stall(int ep0) { (void)!read(ep0, NULL, 0); }
static void ack(int ep0) { stall(ep0); }
static void answer(int ep0, const void *data, int length, int asked) {
    if (write(ep0, data, length < asked ? length : asked) < 0) say("ep0 answer: %s", strerror(errno));
}

static void kick_streamer(void) {
    pthread_cond_broadcast(&changed);
    pthread_kill(streamer, SIGUSR1);  /* ends a write the host is not reading */
}

static void stream_request(int ep0, const struct usb_ctrlrequest *c) {
    int control = c->wValue >> 8, length = c->wLength;
    if (control != VS_PROBE && control != VS_COMMIT) {
        if (c->bRequestType & USB_DIR_IN) stall(ep0);
        else { unsigned char ignored[64]; (void)!read(ep0, ignored, length < 64 ? length : 64); }
        return;
    }
    unsigned char data[PROBE_SIZE];
    switch (c->bRequest) {
    case SET_CUR: {
        unsigned char asked[PROBE_SIZE] = {0};
        if (read(ep0, asked, length < PROBE_SIZE ? length : PROBE_SIZE) < 0) { say("SET_CUR: %s", strerror(errno)); return; }
        negotiate(data, asked);
        if (control == VS_PROBE) { memcpy(probe, data, PROBE_SIZE); return; }
        pthread_mutex_lock(&lock);
        shared.frame = data[3];
        shared.interval = (int)get32(data + 4);
        shared.committed = 1;
        shared.generation++;
        pthread_mutex_unlock(&lock);
        const struct frame_size *s = &sizes[data[3] - 1];
        say("committed %dx%d MJPEG at %.2f fps", s->width, s->height, 1e7 / get32(data + 4));
        kick_streamer();
        return;
    }
    case GET_CUR: answer(ep0, probe, PROBE_SIZE, length); return;
    case GET_MIN: case GET_MAX: case GET_DEF: case GET_RES:
        negotiate(data, NULL);
        answer(ep0, data, PROBE_SIZE, length);
        return;
    case GET_LEN: answer(ep0, (unsigned char[]){PROBE_SIZE, 0}, 2, length); return;
    case GET_INFO: answer(ep0, (unsigned char[]){0x03}, 1, length); return;
    default: stall(ep0);
    }
}

static void string_descriptor(int ep0, int index, int length) {
    static const char *const strings[] = {NULL, "onair", "onair test webcam"};
    unsigned char d[64] = {0};
    if (index == 0) { d[0] = 4; d[1] = USB_DT_STRING; d[2] = 0x09; d[3] = 0x04; answer(ep0, d, 4, length); return; }
    if (index >= (int)(sizeof strings / sizeof strings[0])) { stall(ep0); return; }
    int n = 2;
    for (const char *p = strings[index]; *p && n < 62; p++) { d[n++] = (unsigned char)*p; d[n++] = 0; }
    d[0] = (unsigned char)n; d[1] = USB_DT_STRING;
    answer(ep0, d, n, length);
}

/* The host stopped or reset the camera: the streaming thread stops writing. */
static void stop_streaming(void) {
    pthread_mutex_lock(&lock);
    shared.committed = 0;
    shared.generation++;
    pthread_mutex_unlock(&lock);
    kick_streamer();
}

static void setup(int ep0, const struct usb_ctrlrequest *c) {
    int type = c->bRequestType & USB_TYPE_MASK;
    if (type == USB_TYPE_CLASS && (c->bRequestType & USB_RECIP_MASK) == USB_RECIP_INTERFACE
        && (c->wIndex & 0xff) == STREAMING_INTERFACE) {
        stream_request(ep0, c);
        return;
    }
    if (type != USB_TYPE_STANDARD) {
        if (c->bRequestType & USB_DIR_IN || c->wLength == 0) stall(ep0);
        else { unsigned char ignored[64]; (void)!read(ep0, ignored, c->wLength < 64 ? c->wLength : 64); }
        return;
    }
    switch (c->bRequest) {
    case USB_REQ_GET_DESCRIPTOR:
        if ((c->wValue >> 8) == USB_DT_STRING) string_descriptor(ep0, c->wValue & 0xff, c->wLength);
        else stall(ep0);
        return;
    case USB_REQ_SET_CONFIGURATION:
        pthread_mutex_lock(&lock);
        if (c->wValue == 1 && shared.endpoint < 0) shared.endpoint = open_endpoint();
        pthread_mutex_unlock(&lock);
        ack(ep0);
        return;
    case USB_REQ_SET_INTERFACE:
        if ((c->wIndex & 0xff) == STREAMING_INTERFACE) stop_streaming();
        ack(ep0);
        return;
    case USB_REQ_GET_INTERFACE: answer(ep0, (unsigned char[]){0}, 1, c->wLength); return;
    default: stall(ep0);
    }
}

/* --- pictures ----------------------------------------------------------------------- */

struct encoder { AVCodecContext *context; AVFrame *frame; AVPacket *packet; int width, height; };

static void open_encoder(struct encoder *e, int width, int height) {
    if (e->context && e->width == width && e->height == height) return;
    avcodec_free_context(&e->context);
    av_frame_free(&e->frame);
    av_packet_free(&e->packet);
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG);
    e->context = avcodec_alloc_context3(codec);
    e->context->width = width;
    e->context->height = height;
    e->context->pix_fmt = AV_PIX_FMT_YUVJ420P;
    e->context->time_base = (AVRational){1, 30};
    e->context->flags |= AV_CODEC_FLAG_QSCALE;
    e->context->global_quality = FF_QP2LAMBDA * 4;
    if (avcodec_open2(e->context, codec, NULL) < 0) { errno = EINVAL; fail("opening libavcodec's MJPEG encoder"); }
    e->frame = av_frame_alloc();
    e->frame->format = AV_PIX_FMT_YUVJ420P;
    e->frame->width = width;
    e->frame->height = height;
    if (av_frame_get_buffer(e->frame, 0) < 0) fail("a picture");
    e->packet = av_packet_alloc();
    e->width = width;
    e->height = height;
}

/* Picture `index`: dark grey, a band of 16 blocks across the middle third (white: a one). */
static AVPacket *picture(struct encoder *e, long index) {
    AVFrame *f = e->frame;
    av_frame_make_writable(f);
    int w = e->width, h = e->height;
    for (int y = 0; y < h; y++) {
        unsigned char *row = f->data[0] + y * f->linesize[0];
        int in_band = y >= h * 3 / 8 && y < h * 5 / 8;
        for (int x = 0; x < w; x++) {
            int bit = 15 - x * 16 / w;
            row[x] = in_band ? ((index >> bit) & 1 ? 235 : 16) : (unsigned char)(64 + (x + index * 4) % 64);
        }
    }
    for (int p = 1; p <= 2; p++)
        for (int y = 0; y < h / 2; y++) memset(f->data[p] + y * f->linesize[p], 128, w / 2);
    f->pts = index;
    if (avcodec_send_frame(e->context, f) < 0 || avcodec_receive_packet(e->context, e->packet) < 0) {
        errno = EIO;
        fail("encoding a picture");
    }
    return e->packet;
}

/* --- streaming ---------------------------------------------------------------------- */

enum broken { WHOLE, CUT_SHORT, RUINED_HEADER, INVALID_PAYLOAD_HEADER, STOPPED_MID_FRAME, ERROR_BIT, KINDS };
static const char *const broken_names[] = {"whole", "cut short", "header ruined", "payload header invalid",
                                           "stopped mid-frame", "error bit set"};

/* Writes one picture as payloads of at most PAYLOAD bytes. A payload must not end on a
 * packet boundary below PAYLOAD, or the host would take the next one as its continuation;
 * such a payload gives its last byte to one more. Returns 0, or -1 when the write was
 * cut off (a new commit, a stop, the host gone). */
static int send_picture(int fd, const unsigned char *jpeg, int length, int fid, enum broken kind, int max_packet) {
    unsigned char payload[PAYLOAD];
    int sent = 0, first = 1;
    if (kind == CUT_SHORT || kind == STOPPED_MID_FRAME) length /= 2;
    while (sent < length || first) {
        int n = length - sent < PAYLOAD - HEADER ? length - sent : PAYLOAD - HEADER;
        if (n + HEADER < PAYLOAD && (n + HEADER) % max_packet == 0) n--;
        int last = sent + n == length;
        payload[0] = HEADER;
        payload[1] = HEADER_EOH | fid | (last && kind != STOPPED_MID_FRAME ? HEADER_EOF : 0) | (kind == ERROR_BIT ? HEADER_ERR : 0);
        if (kind == INVALID_PAYLOAD_HEADER && first) payload[0] = 0xff;  /* longer than the payload */
        memcpy(payload + HEADER, jpeg + sent, n);
        if (write(fd, payload, n + HEADER) != n + HEADER) return -1;
        sent += n;
        first = 0;
    }
    return 0;
}

static void sleep_until(struct timespec *t) {
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL) == EINTR) {}
}

static void *stream(void *unused) {
    (void)unused;
    struct sched_param normal = {.sched_priority = 0};
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal);
    struct encoder encoder = {0};
    long index = 0;
    int fid = 0, unplugged = 0;
    for (;;) {
        pthread_mutex_lock(&lock);
        shared.idle = 1;
        pthread_cond_broadcast(&changed);
        while (!shared.committed || shared.endpoint < 0 || shared.unplug) pthread_cond_wait(&changed, &lock);
        unsigned generation = shared.generation;
        int fd = shared.endpoint, frame = shared.frame, interval = shared.interval;
        shared.idle = 0;
        pthread_mutex_unlock(&lock);
        const struct frame_size *s = &sizes[frame - 1];
        open_encoder(&encoder, s->width, s->height);
        struct timespec next;
        clock_gettime(CLOCK_MONOTONIC, &next);
        for (;;) {
            pthread_mutex_lock(&lock);
            int current = shared.generation == generation;
            pthread_mutex_unlock(&lock);
            if (!current) break;
            AVPacket *packet = picture(&encoder, index);
            enum broken kind = WHOLE;
            if (bad_every > 0 && index % bad_every == bad_every / 2) kind = (enum broken)(1 + (index / bad_every) % (KINDS - 1));
            if (kind == RUINED_HEADER && av_packet_make_writable(packet) == 0) {
                /* The start-of-frame segment (ITU-T T.81 §B.2.2) made a reserved marker. */
                for (int i = 2; i + 1 < packet->size; i++)
                    if (packet->data[i] == 0xff && packet->data[i + 1] == 0xc0) { packet->data[i + 1] = 0x01; break; }
            }
            if (send_picture(fd, packet->data, packet->size, fid, kind, speed_high ? 512 : 64) < 0) {
                say("picture %ld not sent whole: %s", index, strerror(errno));
                break;
            }
            if (kind != WHOLE) say("picture %ld sent %s", index, broken_names[kind]);
            fid ^= 1;
            index++;
            if (!unplugged && unplug_after > 0 && index == unplug_after) {
                unplugged = 1;
                pthread_mutex_lock(&lock);
                shared.unplug = 1;
                pthread_mutex_unlock(&lock);
                break;
            }
            long ns = next.tv_nsec + (long)interval * 100;
            next.tv_sec += ns / 1000000000;
            next.tv_nsec = ns % 1000000000;
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec > next.tv_sec + 1) next = now;  /* the host stopped reading a while */
            sleep_until(&next);
        }
    }
    return NULL;
}

static void on_signal(int signal) { (void)signal; }

/* One time on the bus: enumeration, the host's requests, until the streaming thread asks
 * for the unplug. */
static void plugged_in(void) {
    int ep0 = open_controller();
    say("plugged in");
    for (;;) {
        struct pollfd p = {.fd = ep0, .events = POLLIN};
        int ready = poll(&p, 1, 100);
        pthread_mutex_lock(&lock);
        int unplug = shared.unplug;
        pthread_mutex_unlock(&lock);
        if (unplug) break;
        if (ready <= 0) continue;
        struct usb_gadgetfs_event events[5];
        ssize_t n = read(ep0, events, sizeof events);
        /* EIDRM: GadgetFS says the request before was cancelled (the host gave up on it or
         * sent the next one first); the host asks again, as a USB device must expect. */
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            if (errno == EIDRM) { say("a request was cancelled by the host"); continue; }
            fail("reading ep0");
        }
        for (int i = 0; i < (int)(n / (ssize_t)sizeof events[0]); i++) {
            switch (events[i].type) {
            case GADGETFS_CONNECT: if (getenv("UVC_CAMERA_DEBUG")) say("connect %d", events[i].u.speed); speed_high = events[i].u.speed == USB_SPEED_HIGH; break;
            case GADGETFS_DISCONNECT: stop_streaming(); break;
            case GADGETFS_SETUP:
                setup(ep0, &events[i].u.setup);
                if (getenv("UVC_CAMERA_DEBUG")) {
                    const struct usb_ctrlrequest *c = &events[i].u.setup;
                    say("setup %02x %02x %04x %04x %d", c->bRequestType, c->bRequest, c->wValue, c->wIndex, c->wLength);
                }
                break;
            default: break;
            }
        }
    }
    /* Off the bus: the streaming thread is idle once it asked; then the files go. */
    pthread_mutex_lock(&lock);
    shared.committed = 0;
    shared.generation++;
    pthread_mutex_unlock(&lock);
    kick_streamer();
    pthread_mutex_lock(&lock);
    while (!shared.idle) pthread_cond_wait(&changed, &lock);
    if (shared.endpoint >= 0) close(shared.endpoint);
    shared.endpoint = -1;
    pthread_mutex_unlock(&lock);
    close(ep0);
    say("unplugged for %ld s", away_s);
    sleep((unsigned)away_s);
    pthread_mutex_lock(&lock);
    shared.unplug = 0;
    pthread_mutex_unlock(&lock);
}

static long number(const char *flag, const char *text) {
    char *end;
    long value = strtol(text ? text : "", &end, 10);
    if (!text || *end || value < 0 || value > 1000000) { fprintf(stderr, "uvc-camera: %s needs a number from 0 to 1000000\n", flag); exit(2); }
    return value;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--gadget") && value) gadget_dir = argv[++i];
        else if (!strcmp(argv[i], "--console") && value) console = argv[++i];
        else if (!strcmp(argv[i], "--unplug-after")) { unplug_after = number(argv[i], value); i++; }
        else if (!strcmp(argv[i], "--away")) { away_s = number(argv[i], value); i++; }
        else if (!strcmp(argv[i], "--bad-every")) { bad_every = number(argv[i], value); i++; }
        else { fprintf(stderr, "uvc-camera: unknown argument '%s' (see the top of scripts/uvc-camera.c)\n", argv[i]); return 2; }
    }
    /* A control request's OUT data must be read before the host's next request reaches the
     * device: dummy_hcd completes the host's transfer as soon as the data is in the kernel,
     * and GadgetFS drops data not read by then (the read fails with EIDRM). The thread that
     * answers ep0 runs first; its streaming sibling is given the ordinary policy back. */
    struct sched_param realtime = {.sched_priority = 50};
    if (sched_setscheduler(0, SCHED_FIFO, &realtime) < 0) say("SCHED_FIFO: %s (requests may be lost under load)", strerror(errno));
    struct sigaction action = {.sa_handler = on_signal};  /* no SA_RESTART: a write is cut off */
    sigaction(SIGUSR1, &action, NULL);
    negotiate(probe, NULL);
    if (pthread_create(&streamer, NULL, stream, NULL)) fail("the streaming thread");
    for (;;) plugged_in();
}
