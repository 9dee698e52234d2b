/* rtqual device support for the EPICS IOC under test.
 *
 *   bi  DTYP "rtqual", SCAN "I/O Intr",
 *       INP "@fifo:/path [ch=N] [mode=immediate|callback] [prio=P] [cpu=C]"
 *        or "@eventfd:FD [...]" or "@gpio:/dev/gpiochipN:LINE [edge=rising|falling|both] [...]"
 *        or "@uio:/dev/uioN [...]"
 *   bo  DTYP "rtqual", OUT "@fifo:/path [ch=N]" or "@eventfd:FD [ch=N] [times=/fifo]"
 *       or "@gpio:/dev/gpiochipN:LINE [ch=N] [times=/fifo]"
 *   ai  DTYP "rtqual latency", SCAN "I/O Intr", PRIO "LOW", INP "@wake|dispatch|chain|total|count [ch=N]"
 *
 * Each bi has its own reader thread that waits with epoll on the input line. A stimulus is one
 * int64 (host endian): its CLOCK_MONOTONIC time in ns (t_stim). The reader stamps t_wake after
 * epoll returns and makes the record process, either in the reader thread itself
 * (mode=immediate: scanIoImmediate) or in the callback threads (mode=callback: scanIoRequest,
 * the default); it then waits until that processing is done, so every stimulus gets exactly one
 * processing. read_bi stamps t_process; the record chain (FLNK, DOL links) ends in the bo whose
 * write_bo stamps t_out and writes one response on its output line: four int64
 * {t_stim, t_wake, t_process, t_out}. The bi and bo meet through a channel number (ch=, default 0).
 * On an eventfd output only t_out is written (an eventfd carries one counter); a GPIO output line
 * is set to the bo's value (GPIO_V2_LINE_SET_VALUES_IOCTL). With times=/fifo either also writes
 * the four times to that FIFO after its line, so a harness watching the line gets the stages too.
 *
 * GPIO lines use the character device v2 ABI (linux/gpio.h): the bi requests its line as an input
 * with edge detection and reads struct gpio_v2_line_event, whose timestamp_ns (CLOCK_MONOTONIC
 * since Linux 5.7) is t_stim. Untested on hardware; tests/epics/fake_gpio.c runs the path against a
 * double of the chip.
 *
 * A UIO input (uio:/dev/uioN, Linux UIO: a device's interrupt delivered to user space) wakes the reader
 * when the device's interrupt came: it reads the 4-byte event count and the record processes. The reader
 * cannot know when the interrupt was raised: t_stim is its own t_wake (the harness that raises the
 * interrupt knows its time, and acknowledges and unmasks the device before the next one: the reader
 * only reads, docs/interrupts.md).
 *
 * Operator view: after dispatch returns, the reader thread copies the event's four times into the
 * channel's publish ring and requests the channel's own IOSCANPVT (scanIoRequest); the "rtqual
 * latency" ai records (PRIO LOW) then read the event in a low-priority callback thread, so
 * publishing never runs inside the measured path. The ring's entry is dropped when the scan
 * completes; a full ring drops events (counted, see dbior).
 *
 * Registered without generated code: the IOC loads this library RTLD_GLOBAL before
 * registerAllRecordDeviceDrivers(), which finds pvar_dset_* and pvar_func_* by name (rtqual.dbd).
 */
#define _GNU_SOURCE
#define USE_TYPED_DSET
#define USE_TYPED_RSET

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/gpio.h>

#include <alarm.h>
#include <callback.h>
#include <dbAccess.h>
#include <dbScan.h>
#include <devSup.h>
#include <epicsEvent.h>
#include <epicsExit.h>
#include <epicsMutex.h>
#include <epicsThread.h>
#include <epicsVersion.h>
#include <initHooks.h>
#include <recGbl.h>
#include <aiRecord.h>
#include <biRecord.h>
#include <boRecord.h>
#include <epicsExport.h>

#define RTQ_CHANNELS 16
#define RTQ_MAX_READERS 64
#define RTQ_PUBLISH_RING 256 /* events waiting for the latency records, per channel */

enum line_kind { LINE_FIFO, LINE_EVENTFD, LINE_GPIO, LINE_UIO };
enum proc_mode { MODE_CALLBACK, MODE_IMMEDIATE };
enum stage { STAGE_WAKE, STAGE_DISPATCH, STAGE_CHAIN, STAGE_TOTAL, STAGE_COUNT };
static const char *const stage_names[] = {"wake", "dispatch", "chain", "total", "count"};

struct event_times {
    int64_t t_stim, t_wake, t_process, t_out;
};

/* The event in flight on one channel: written by the bi side, consumed by the bo; and the
 * responses waiting to be published to the latency records. */
struct channel {
    epicsMutexId lock;
    int pending;
    int64_t t_stim, t_wake, t_process;
    uint64_t responses, unmatched, write_errors;
    struct event_times last;               /* of the last response written */
    int nlat;                              /* latency records bound to this channel */
    IOSCANPVT lat_scan;
    struct event_times ring[RTQ_PUBLISH_RING];
    uint64_t head, tail, dropped;          /* tail: the event the latency records read now */
};

struct line {
    enum line_kind kind;
    char path[256];
    unsigned gpio_line;
    int fd;
};

/* What a link says besides its line. */
struct link_opts {
    int ch;
    enum proc_mode mode;
    unsigned prio;
    int cpu;       /* reader thread CPU, -1: not pinned */
    uint64_t edge; /* GPIO_V2_LINE_FLAG_EDGE_* for a GPIO input */
    char times[256]; /* output: FIFO also given the four times ("": none) */
};

/* The private part of an I/O Intr record (bi, latency ai) starts with its scan: get_ioint_info. */
struct bi_pvt {
    IOSCANPVT scan;
    struct biRecord *prec;
    struct line in;
    struct link_opts o;
    epicsEventId done;
    volatile int completed;
    int stop_fd;
    epicsThreadId thread;
    int64_t t_stim, t_wake; /* of the stimulus being processed */
    uint64_t events, coalesced, timeouts, read_errors;
};

struct bo_pvt {
    struct line out;
    struct line times; /* fd -1: none */
    int ch;
};

struct lat_pvt {
    IOSCANPVT scan; /* the channel's lat_scan */
    enum stage stage;
    int ch;
};

static struct channel channels[RTQ_CHANNELS];
static struct bi_pvt *readers[RTQ_MAX_READERS];
static int nreaders;
static int ioc_running;
static int init_errors; /* records this support could not bind: the IOC is unusable */

/* For the IOC's Python side (ctypes): how many records failed, and the EPICS version built against. */
int rtqualDevsupErrors(void) { return init_errors; }
const char *rtqualEpicsVersion(void) { return EPICS_VERSION_FULL; }

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The latency records have read the event at the ring's tail: drop it. */
static void published(void *usr, IOSCANPVT scan, int prio)
{
    struct channel *c = usr;
    (void)scan;
    (void)prio;
    epicsMutexMustLock(c->lock);
    if (c->tail != c->head)
        c->tail++;
    epicsMutexUnlock(c->lock);
}

static struct channel *chan(int ch)
{
    struct channel *c = &channels[ch];
    if (!c->lock) { /* init_record runs in one thread (iocInit) */
        c->lock = epicsMutexMustCreate();
        scanIoInit(&c->lat_scan);
        scanIoSetComplete(c->lat_scan, published, c);
    }
    return c;
}

/* "fifo:/path ch=1 mode=immediate prio=80 cpu=1" -> line and options; input: the bi's options
 * (mode=, prio=, cpu=, edge=) are allowed. Returns 0, or -1 with msg. */
static int parse_link(const char *s, int input, struct line *ln, struct link_opts *o, const char **msg)
{
    char buf[512];
    char *save = NULL, *tok, *end;
    if (strlen(s) >= sizeof buf) { *msg = "link too long"; return -1; }
    strcpy(buf, s);
    tok = strtok_r(buf, " \t", &save);
    if (!tok) { *msg = "empty link: want fifo:/path, eventfd:FD, gpio:/dev/gpiochipN:LINE or (input) uio:/dev/uioN"; return -1; }
    ln->fd = -1;
    if (strncmp(tok, "fifo:", 5) == 0 && tok[5]) {
        ln->kind = LINE_FIFO;
        if (strlen(tok + 5) >= sizeof ln->path) { *msg = "fifo path too long"; return -1; }
        strcpy(ln->path, tok + 5);
    } else if (strncmp(tok, "eventfd:", 8) == 0 && tok[8]) {
        long fd = strtol(tok + 8, &end, 10);
        if (*end || fd < 0) { *msg = "eventfd:FD wants a file descriptor number"; return -1; }
        ln->kind = LINE_EVENTFD;
        ln->fd = (int)fd;
        snprintf(ln->path, sizeof ln->path, "eventfd:%ld", fd);
    } else if (input && strncmp(tok, "uio:", 4) == 0 && tok[4]) {
        ln->kind = LINE_UIO;
        if (strlen(tok + 4) >= sizeof ln->path) { *msg = "uio path too long"; return -1; }
        strcpy(ln->path, tok + 4);
    } else if (strncmp(tok, "gpio:", 5) == 0) {
        char *colon = strrchr(tok + 5, ':');
        long line = colon && colon[1] ? strtol(colon + 1, &end, 10) : -1;
        if (!colon || colon == tok + 5 || *end || line < 0 || line > 65535) {
            *msg = "gpio: wants gpio:/dev/gpiochipN:LINE";
            return -1;
        }
        *colon = 0;
        if (strlen(tok + 5) >= sizeof ln->path) { *msg = "gpio chip path too long"; return -1; }
        ln->kind = LINE_GPIO;
        strcpy(ln->path, tok + 5);
        ln->gpio_line = (unsigned)line;
    } else {
        *msg = "unknown line: want fifo:/path, eventfd:FD, gpio:/dev/gpiochipN:LINE or (input) uio:/dev/uioN";
        return -1;
    }
    while ((tok = strtok_r(NULL, " \t", &save))) {
        if (strncmp(tok, "ch=", 3) == 0) {
            long v = strtol(tok + 3, &end, 10);
            if (*end || v < 0 || v >= RTQ_CHANNELS) { *msg = "ch= wants 0..15"; return -1; }
            o->ch = (int)v;
        } else if (input && strcmp(tok, "mode=immediate") == 0) {
            o->mode = MODE_IMMEDIATE;
        } else if (input && strcmp(tok, "mode=callback") == 0) {
            o->mode = MODE_CALLBACK;
        } else if (input && strncmp(tok, "prio=", 5) == 0) {
            long v = strtol(tok + 5, &end, 10);
            if (*end || v < epicsThreadPriorityMin || v > epicsThreadPriorityMax) {
                *msg = "prio= wants an EPICS thread priority 0..99";
                return -1;
            }
            o->prio = (unsigned)v;
        } else if (input && strncmp(tok, "cpu=", 4) == 0) {
            long v = strtol(tok + 4, &end, 10);
            cpu_set_t allowed;
            if (*end || !tok[4] || v < 0 || v >= CPU_SETSIZE) { *msg = "cpu= wants a CPU number"; return -1; }
            if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || !CPU_ISSET((int)v, &allowed)) {
                *msg = "cpu= names a CPU outside the IOC's CPU set";
                return -1;
            }
            o->cpu = (int)v;
        } else if (input && ln->kind == LINE_GPIO && strncmp(tok, "edge=", 5) == 0) {
            if (strcmp(tok + 5, "rising") == 0)
                o->edge = GPIO_V2_LINE_FLAG_EDGE_RISING;
            else if (strcmp(tok + 5, "falling") == 0)
                o->edge = GPIO_V2_LINE_FLAG_EDGE_FALLING;
            else if (strcmp(tok + 5, "both") == 0)
                o->edge = GPIO_V2_LINE_FLAG_EDGE_RISING | GPIO_V2_LINE_FLAG_EDGE_FALLING;
            else { *msg = "edge= wants rising, falling or both"; return -1; }
        } else if (!input && ln->kind != LINE_FIFO && strncmp(tok, "times=", 6) == 0 && tok[6]) {
            if (strlen(tok + 6) >= sizeof o->times) { *msg = "times= path too long"; return -1; }
            strcpy(o->times, tok + 6);
        } else {
            *msg = input ? "unknown option (ch=, mode=immediate|callback, prio=, cpu=, edge= for gpio)"
                         : "unknown option (ch=, times= for eventfd and gpio)";
            return -1;
        }
    }
    return 0;
}

/* Request one GPIO line from its chip (v2 ABI): an input with edge events, or an output. */
static int open_gpio(struct line *ln, uint64_t flags)
{
    struct gpio_v2_line_request req;
    int chip = open(ln->path, O_RDWR | O_CLOEXEC);
    if (chip < 0)
        return -1;
    memset(&req, 0, sizeof req);
    req.offsets[0] = ln->gpio_line;
    req.num_lines = 1;
    strcpy(req.consumer, "rtqual");
    req.config.flags = flags;
    int rc = ioctl(chip, GPIO_V2_GET_LINE_IOCTL, &req);
    int err = errno;
    close(chip);
    if (rc < 0) {
        errno = err;
        return -1;
    }
    ln->fd = req.fd;
    return 0;
}

/* Open a line. A FIFO is opened read-write (Linux), so it never reports hang-up when the peer
 * closes and an output FIFO can be opened before anyone reads it. An inherited eventfd is
 * blocking: make it non-blocking. A GPIO line is requested with gpio_flags. */
static int open_line(struct line *ln, uint64_t gpio_flags)
{
    if (ln->kind == LINE_GPIO)
        return open_gpio(ln, gpio_flags);
    if (ln->kind == LINE_UIO) { /* a read waits for the next interrupt: non-blocking, epoll waits */
        struct stat st;
        if (stat(ln->path, &st) != 0)
            return -1;
        if (!S_ISCHR(st.st_mode)) {
            errno = ENODEV; /* reported as "not a UIO device" */
            return -1;
        }
        ln->fd = open(ln->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        return ln->fd < 0 ? -1 : 0;
    }
    if (ln->kind == LINE_FIFO) {
        struct stat st;
        if (stat(ln->path, &st) != 0)
            return -1;
        if (!S_ISFIFO(st.st_mode)) {
            errno = ENOTSUP; /* reported as "not a FIFO" */
            return -1;
        }
        ln->fd = open(ln->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        return ln->fd < 0 ? -1 : 0;
    }
    int fl = fcntl(ln->fd, F_GETFL);
    if (fl < 0 || fcntl(ln->fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -1;
    return 0;
}

static void scan_complete(void *usr, IOSCANPVT scan, int prio)
{
    struct bi_pvt *p = usr;
    (void)scan;
    (void)prio;
    __atomic_add_fetch(&p->completed, 1, __ATOMIC_RELEASE);
    epicsEventMustTrigger(p->done);
}

/* One stimulus: hand its times to the record and process the chain, then wait for the end. */
static void dispatch(struct bi_pvt *p, int64_t t_stim, int64_t t_wake)
{
    p->t_stim = t_stim;
    p->t_wake = t_wake;
    p->events++;
    if (p->o.mode == MODE_IMMEDIATE) {
        for (int prio = 0; prio < NUM_CALLBACK_PRIORITIES; prio++)
            scanIoImmediate(p->scan, prio);
        return;
    }
    __atomic_store_n(&p->completed, 0, __ATOMIC_RELEASE);
    unsigned mask = scanIoRequest(p->scan);
    int expected = __builtin_popcount(mask);
    while (__atomic_load_n(&p->completed, __ATOMIC_ACQUIRE) < expected) {
        if (epicsEventWaitWithTimeout(p->done, 2.0) == epicsEventWaitTimeout) {
            p->timeouts++;
            break;
        }
    }
}

/* After dispatch: if the event got its response, queue its times for the latency records and
 * request their scan (a low-priority callback; never waited for). */
static void publish(struct channel *c, uint64_t responses_before)
{
    epicsMutexMustLock(c->lock);
    if (!c->nlat || c->responses == responses_before) {
        epicsMutexUnlock(c->lock);
        return;
    }
    if (c->head - c->tail >= RTQ_PUBLISH_RING) {
        c->dropped++;
        epicsMutexUnlock(c->lock);
        return;
    }
    c->ring[c->head++ % RTQ_PUBLISH_RING] = c->last;
    epicsMutexUnlock(c->lock);
    if (!scanIoRequest(c->lat_scan)) { /* callback queue full: the event was never requested */
        epicsMutexMustLock(c->lock);
        c->head--;
        c->dropped++;
        epicsMutexUnlock(c->lock);
    }
}

/* Read one stimulus from the input line: 1 and its time, 0 nothing to read, -1 bad read. */
static int read_stimulus(struct bi_pvt *p, int64_t t_wake, int64_t *t_stim)
{
    if (p->in.kind == LINE_GPIO) {
        struct gpio_v2_line_event ev;
        ssize_t r = read(p->in.fd, &ev, sizeof ev);
        if (r != (ssize_t)sizeof ev)
            return r < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
        *t_stim = (int64_t)ev.timestamp_ns; /* CLOCK_MONOTONIC (default event clock) */
        return 1;
    }
    if (p->in.kind == LINE_UIO) { /* the event count: the interrupt came; its raising is the harness's */
        uint32_t count;
        ssize_t r = read(p->in.fd, &count, sizeof count);
        if (r != (ssize_t)sizeof count)
            return r < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
        *t_stim = t_wake;
        return 1;
    }
    uint64_t v;
    ssize_t r = read(p->in.fd, &v, sizeof v);
    if (r != (ssize_t)sizeof v)
        return r < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
    *t_stim = (int64_t)v;
    if (p->in.kind == LINE_EVENTFD && *t_stim > t_wake) {
        /* several eventfd writes summed up: the times are lost, count it */
        p->coalesced++;
        *t_stim = t_wake;
    }
    return 1;
}

static void reader(void *arg)
{
    struct bi_pvt *p = arg;
    struct channel *c = &channels[p->o.ch];
    if (p->o.cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(p->o.cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0) /* 0: this thread */
            fprintf(stderr, "rtqual devsup %s: cannot pin the reader to CPU %d: %s\n", p->prec->name,
                    p->o.cpu, strerror(errno));
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = p->in.fd};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p->in.fd, &ev) != 0) {
        fprintf(stderr, "rtqual devsup %s: epoll: %s\n", p->prec->name, strerror(errno));
        return;
    }
    ev.data.fd = p->stop_fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, p->stop_fd, &ev);
    for (;;) {
        struct epoll_event got[2];
        int n = epoll_wait(ep, got, 2, -1);
        int64_t t_wake = now_ns();
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        int stop = 0, input = 0;
        for (int i = 0; i < n; i++) {
            if (got[i].data.fd == p->stop_fd)
                stop = 1;
            else
                input = 1;
        }
        if (stop)
            break;
        if (!input)
            continue;
        /* One stimulus per wake-up (the next one, if queued, wakes epoll at once). */
        int64_t t_stim;
        int got_one = read_stimulus(p, t_wake, &t_stim);
        if (got_one < 0)
            p->read_errors++;
        if (got_one <= 0)
            continue;
        uint64_t before = __atomic_load_n(&c->responses, __ATOMIC_RELAXED);
        dispatch(p, t_stim, t_wake);
        publish(c, before);
    }
    close(ep);
}

static void stop_readers(void *unused)
{
    (void)unused;
    for (int i = 0; i < nreaders; i++) {
        uint64_t one = 1;
        if (write(readers[i]->stop_fd, &one, sizeof one) < 0)
            continue;
    }
    for (int i = 0; i < nreaders; i++) {
        if (readers[i]->thread) {
            epicsThreadMustJoin(readers[i]->thread);
            readers[i]->thread = NULL;
        }
    }
}

static void start_readers(initHookState state)
{
    if (state != initHookAfterIocRunning || ioc_running)
        return;
    ioc_running = 1;
    for (int i = 0; i < nreaders; i++) {
        struct bi_pvt *p = readers[i];
        epicsThreadOpts opts = EPICS_THREAD_OPTS_INIT;
        char name[32];
        opts.priority = p->o.prio;
        opts.stackSize = epicsThreadGetStackSize(epicsThreadStackSmall);
        opts.joinable = 1;
        snprintf(name, sizeof name, "rtqIn%d", i);
        p->thread = epicsThreadCreateOpt(name, reader, p, &opts);
        if (!p->thread)
            fprintf(stderr, "rtqual devsup %s: cannot start reader thread\n", p->prec->name);
    }
    epicsAtExit(stop_readers, NULL);
}

static long init_error(long status)
{
    init_errors++;
    return status;
}

/* The I/O Intr scan of a bi or latency record (its private part starts with it). */
static long get_ioint_info(int detach, struct dbCommon *prec, IOSCANPVT *pscan)
{
    IOSCANPVT *scan = prec->dpvt;
    (void)detach;
    if (!scan)
        return -1;
    *pscan = *scan;
    return 0;
}

/* ---- bi ---- */

static long bi_init_record(struct dbCommon *pcommon)
{
    struct biRecord *prec = (struct biRecord *)pcommon;
    const char *msg = NULL;
    struct bi_pvt *p;
    if (prec->inp.type != INST_IO) {
        recGblRecordError(S_db_badField, prec, "rtqual bi: INP must be INST_IO (@fifo:/path ...)");
        return init_error(S_db_badField);
    }
    if (nreaders >= RTQ_MAX_READERS) {
        recGblRecordError(S_db_badField, prec, "rtqual bi: too many input records");
        return init_error(S_db_badField);
    }
    p = calloc(1, sizeof *p);
    if (!p)
        return init_error(S_db_noMemory);
    p->prec = prec;
    p->o.mode = MODE_CALLBACK;
    p->o.prio = epicsThreadPriorityHigh;
    p->o.cpu = -1;
    p->o.edge = GPIO_V2_LINE_FLAG_EDGE_RISING;
    if (parse_link(prec->inp.value.instio.string, 1, &p->in, &p->o, &msg) != 0) {
        recGblRecordError(S_db_badField, prec, msg);
        free(p);
        return init_error(S_db_badField);
    }
    if (open_line(&p->in, GPIO_V2_LINE_FLAG_INPUT | p->o.edge) != 0) {
        recGblRecordError(S_db_badField, prec, "rtqual bi: cannot open the input line");
        fprintf(stderr, "rtqual devsup %s: %s: %s\n", prec->name, p->in.path,
                errno == ENOTSUP ? "not a FIFO" : errno == ENODEV ? "not a UIO device" : strerror(errno));
        free(p);
        return init_error(S_db_badField);
    }
    p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    p->done = epicsEventMustCreate(epicsEventEmpty);
    scanIoInit(&p->scan);
    scanIoSetComplete(p->scan, scan_complete, p);
    chan(p->o.ch);
    readers[nreaders++] = p;
    prec->dpvt = p;
    return 0;
}

static long bi_read(struct biRecord *prec)
{
    struct bi_pvt *p = prec->dpvt;
    int64_t t_process = now_ns();
    if (!p)
        return -1;
    struct channel *c = &channels[p->o.ch];
    epicsMutexMustLock(c->lock);
    c->pending = 1;
    c->t_stim = p->t_stim;
    c->t_wake = p->t_wake;
    c->t_process = t_process;
    epicsMutexUnlock(c->lock);
    prec->val = (epicsEnum16)(p->events & 1); /* toggles like a level line */
    prec->udf = 0;
    return 2; /* no RVAL conversion */
}

static long bi_report(int level)
{
    for (int i = 0; i < nreaders; i++) {
        struct bi_pvt *p = readers[i];
        printf("  rtqual bi %s: %s ch=%d mode=%s prio=%u cpu=%d events=%llu coalesced=%llu timeouts=%llu "
               "read_errors=%llu\n", p->prec->name, p->in.path, p->o.ch,
               p->o.mode == MODE_IMMEDIATE ? "immediate" : "callback", p->o.prio, p->o.cpu,
               (unsigned long long)p->events, (unsigned long long)p->coalesced,
               (unsigned long long)p->timeouts, (unsigned long long)p->read_errors);
    }
    if (level > 0) {
        for (int ch = 0; ch < RTQ_CHANNELS; ch++)
            if (channels[ch].lock)
                printf("  rtqual ch %d: responses=%llu unmatched=%llu write_errors=%llu published=%llu "
                       "dropped=%llu\n", ch, (unsigned long long)channels[ch].responses,
                       (unsigned long long)channels[ch].unmatched,
                       (unsigned long long)channels[ch].write_errors,
                       (unsigned long long)channels[ch].tail, (unsigned long long)channels[ch].dropped);
    }
    return 0;
}

static bidset devBiRtqual = {
    {5, bi_report, NULL, bi_init_record, get_ioint_info},
    bi_read,
};
epicsExportAddress(dset, devBiRtqual);

/* ---- bo ---- */

static long bo_init_record(struct dbCommon *pcommon)
{
    struct boRecord *prec = (struct boRecord *)pcommon;
    const char *msg = NULL;
    struct bo_pvt *p;
    if (prec->out.type != INST_IO) {
        recGblRecordError(S_db_badField, prec, "rtqual bo: OUT must be INST_IO (@fifo:/path ...)");
        return init_error(S_db_badField);
    }
    p = calloc(1, sizeof *p);
    if (!p)
        return init_error(S_db_noMemory);
    struct link_opts o = {0};
    if (parse_link(prec->out.value.instio.string, 0, &p->out, &o, &msg) != 0) {
        recGblRecordError(S_db_badField, prec, msg);
        free(p);
        return init_error(S_db_badField);
    }
    p->ch = o.ch;
    p->times = (struct line){.kind = LINE_FIFO, .fd = -1};
    snprintf(p->times.path, sizeof p->times.path, "%s", o.times);
    struct line *bad = open_line(&p->out, GPIO_V2_LINE_FLAG_OUTPUT) != 0 ? &p->out
                       : o.times[0] && open_line(&p->times, 0) != 0 ? &p->times : NULL;
    if (bad) {
        recGblRecordError(S_db_badField, prec, "rtqual bo: cannot open the output line");
        fprintf(stderr, "rtqual devsup %s: %s: %s\n", prec->name, bad->path,
                errno == ENOTSUP ? "not a FIFO" : strerror(errno));
        if (p->out.fd >= 0 && p->out.kind != LINE_EVENTFD)
            close(p->out.fd);
        free(p);
        return init_error(S_db_badField);
    }
    chan(p->ch);
    prec->dpvt = p;
    return 2; /* do not convert RVAL to VAL */
}

static int write_times(int fd, const int64_t msg[4])
{
    return write(fd, msg, 4 * sizeof msg[0]) == 4 * sizeof msg[0] ? 0 : -1; /* <= PIPE_BUF: atomic */
}

static int set_gpio(struct bo_pvt *p, struct boRecord *prec)
{
    struct gpio_v2_line_values v = {.bits = prec->val ? 1 : 0, .mask = 1};
    return ioctl(p->out.fd, GPIO_V2_LINE_SET_VALUES_IOCTL, &v);
}

/* The response on the output line: FIFO 4 x int64, eventfd t_out, GPIO the bo's value; then the
 * four times on the times= FIFO if there is one. */
static int write_response(struct bo_pvt *p, struct boRecord *prec, const int64_t msg[4])
{
    int rc;
    if (p->out.kind == LINE_FIFO)
        return write_times(p->out.fd, msg);
    if (p->out.kind == LINE_EVENTFD) {
        uint64_t v = (uint64_t)msg[3];
        rc = write(p->out.fd, &v, sizeof v) == sizeof v ? 0 : -1;
    } else {
        rc = set_gpio(p, prec);
    }
    return rc == 0 && p->times.fd >= 0 ? write_times(p->times.fd, msg) : rc;
}

static long bo_write(struct boRecord *prec)
{
    struct bo_pvt *p = prec->dpvt;
    int64_t t_out = now_ns();
    if (!p)
        return -1;
    struct channel *c = &channels[p->ch];
    int64_t msg[4];
    int pending;
    epicsMutexMustLock(c->lock);
    pending = c->pending;
    c->pending = 0;
    msg[0] = c->t_stim;
    msg[1] = c->t_wake;
    msg[2] = c->t_process;
    msg[3] = t_out;
    epicsMutexUnlock(c->lock);
    if (!pending) { /* a write not caused by a stimulus (e.g. a CA put): no response */
        c->unmatched++;
        if (p->out.kind == LINE_GPIO && set_gpio(p, prec) != 0)
            recGblSetSevr(prec, WRITE_ALARM, MINOR_ALARM);
        return 0;
    }
    if (write_response(p, prec, msg) != 0) {
        c->write_errors++;
        recGblSetSevr(prec, WRITE_ALARM, MINOR_ALARM);
        return 0;
    }
    epicsMutexMustLock(c->lock);
    c->last = (struct event_times){msg[0], msg[1], msg[2], msg[3]};
    __atomic_add_fetch(&c->responses, 1, __ATOMIC_RELAXED);
    epicsMutexUnlock(c->lock);
    return 0;
}

static bodset devBoRtqual = {
    {5, NULL, NULL, bo_init_record, NULL},
    bo_write,
};
epicsExportAddress(dset, devBoRtqual);

/* ---- ai "rtqual latency": one stage of the event being published, in microseconds ---- */

static long lat_init_record(struct dbCommon *pcommon)
{
    struct aiRecord *prec = (struct aiRecord *)pcommon;
    char buf[64], *save = NULL, *tok;
    struct lat_pvt *p;
    int stage = -1, ch = 0;
    if (prec->inp.type != INST_IO || strlen(prec->inp.value.instio.string) >= sizeof buf) {
        recGblRecordError(S_db_badField, prec, "rtqual latency: INP must be @wake|dispatch|chain|total|count [ch=N]");
        return init_error(S_db_badField);
    }
    strcpy(buf, prec->inp.value.instio.string);
    tok = strtok_r(buf, " \t", &save);
    for (int i = 0; tok && i <= STAGE_COUNT; i++)
        if (strcmp(tok, stage_names[i]) == 0)
            stage = i;
    while (stage >= 0 && (tok = strtok_r(NULL, " \t", &save))) {
        char *end;
        long v = strncmp(tok, "ch=", 3) == 0 ? strtol(tok + 3, &end, 10) : -1;
        if (v < 0 || v >= RTQ_CHANNELS || *end)
            stage = -1;
        else
            ch = (int)v;
    }
    if (stage < 0) {
        recGblRecordError(S_db_badField, prec, "rtqual latency: INP must be @wake|dispatch|chain|total|count [ch=N]");
        return init_error(S_db_badField);
    }
    p = calloc(1, sizeof *p);
    if (!p)
        return init_error(S_db_noMemory);
    p->stage = (enum stage)stage;
    p->ch = ch;
    chan(ch)->nlat++;
    p->scan = channels[ch].lat_scan;
    prec->dpvt = p;
    return 0;
}

static long lat_read(struct aiRecord *prec)
{
    struct lat_pvt *p = prec->dpvt;
    struct event_times e;
    uint64_t count;
    if (!p)
        return -1;
    struct channel *c = &channels[p->ch];
    epicsMutexMustLock(c->lock);
    if (c->tail == c->head) { /* processed without an event (e.g. a CA put to PROC) */
        epicsMutexUnlock(c->lock);
        return 2;
    }
    e = c->ring[c->tail % RTQ_PUBLISH_RING];
    count = c->tail + 1;
    epicsMutexUnlock(c->lock);
    switch (p->stage) {
    case STAGE_WAKE: prec->val = (e.t_wake - e.t_stim) / 1e3; break;
    case STAGE_DISPATCH: prec->val = (e.t_process - e.t_wake) / 1e3; break;
    case STAGE_CHAIN: prec->val = (e.t_out - e.t_process) / 1e3; break;
    case STAGE_TOTAL: prec->val = (e.t_out - e.t_stim) / 1e3; break;
    case STAGE_COUNT: prec->val = (double)count; break;
    }
    prec->udf = 0;
    return 2; /* no conversion */
}

static aidset devAiRtqualLatency = {
    {6, NULL, NULL, lat_init_record, get_ioint_info},
    lat_read,
    NULL,
};
epicsExportAddress(dset, devAiRtqualLatency);

/* ---- registrar ---- */

static void rtqualDevsupRegistrar(void)
{
    initHookRegister(start_readers);
}
epicsExportRegistrar(rtqualDevsupRegistrar);
