/* rtqual device support for the EPICS IOC under test.
 *
 *   bi  DTYP "rtqual", SCAN "I/O Intr", INP "@fifo:/path [ch=N] [mode=immediate|callback] [prio=P]"
 *                                    or "@eventfd:FD [...]"
 *   bo  DTYP "rtqual", OUT "@fifo:/path [ch=N]" or "@eventfd:FD [ch=N]"
 *
 * Each bi has its own reader thread that waits with epoll on the input line. A stimulus is one
 * int64 (host endian): its CLOCK_MONOTONIC time in ns (t_stim). The reader stamps t_wake after
 * epoll returns and makes the record process, either in the reader thread itself
 * (mode=immediate: scanIoImmediate) or in the callback threads (mode=callback: scanIoRequest,
 * the default); it then waits until that processing is done, so every stimulus gets exactly one
 * processing. read_bi stamps t_process; the record chain (FLNK, DOL links) ends in the bo whose
 * write_bo stamps t_out and writes one response on its output line: four int64
 * {t_stim, t_wake, t_process, t_out}. The bi and bo meet through a channel number (ch=, default 0).
 * On an eventfd output only t_out is written (an eventfd carries one counter).
 *
 * Registered without generated code: the IOC loads this library RTLD_GLOBAL before
 * registerAllRecordDeviceDrivers(), which finds pvar_dset_* and pvar_func_* by name (rtqual.dbd).
 */
#define _GNU_SOURCE
#define USE_TYPED_DSET
#define USE_TYPED_RSET

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
#include <biRecord.h>
#include <boRecord.h>
#include <epicsExport.h>

#define RTQ_CHANNELS 16
#define RTQ_MAX_READERS 64

enum line_kind { LINE_FIFO, LINE_EVENTFD };
enum proc_mode { MODE_CALLBACK, MODE_IMMEDIATE };

/* The event in flight on one channel: written by the bi side, consumed by the bo. */
struct channel {
    epicsMutexId lock;
    int pending;
    int64_t t_stim, t_wake, t_process;
    uint64_t responses, unmatched, write_errors;
};

struct line {
    enum line_kind kind;
    char path[256];
    int fd;
};

struct bi_pvt {
    struct biRecord *prec;
    struct line in;
    int ch;
    enum proc_mode mode;
    unsigned prio;
    IOSCANPVT scan;
    epicsEventId done;
    volatile int completed;
    int stop_fd;
    epicsThreadId thread;
    int64_t t_stim, t_wake; /* of the stimulus being processed */
    uint64_t events, coalesced, timeouts, read_errors;
};

struct bo_pvt {
    struct line out;
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

static struct channel *chan(int ch)
{
    struct channel *c = &channels[ch];
    if (!c->lock)
        c->lock = epicsMutexMustCreate(); /* init_record runs in one thread (iocInit) */
    return c;
}

/* "fifo:/path ch=1 mode=immediate prio=80" -> fields; returns 0 or -1 with msg. */
static int parse_link(const char *s, struct line *ln, int *ch, enum proc_mode *mode, unsigned *prio,
                      const char **msg)
{
    char buf[512];
    char *save = NULL, *tok;
    if (strlen(s) >= sizeof buf) { *msg = "link too long"; return -1; }
    strcpy(buf, s);
    tok = strtok_r(buf, " \t", &save);
    if (!tok) { *msg = "empty link: want fifo:/path or eventfd:FD"; return -1; }
    ln->fd = -1;
    if (strncmp(tok, "fifo:", 5) == 0 && tok[5]) {
        ln->kind = LINE_FIFO;
        if (strlen(tok + 5) >= sizeof ln->path) { *msg = "fifo path too long"; return -1; }
        strcpy(ln->path, tok + 5);
    } else if (strncmp(tok, "eventfd:", 8) == 0 && tok[8]) {
        char *end;
        long fd = strtol(tok + 8, &end, 10);
        if (*end || fd < 0) { *msg = "eventfd:FD wants a file descriptor number"; return -1; }
        ln->kind = LINE_EVENTFD;
        ln->fd = (int)fd;
        snprintf(ln->path, sizeof ln->path, "eventfd:%ld", fd);
    } else {
        *msg = "unknown line: want fifo:/path or eventfd:FD";
        return -1;
    }
    while ((tok = strtok_r(NULL, " \t", &save))) {
        char *end;
        if (strncmp(tok, "ch=", 3) == 0) {
            long v = strtol(tok + 3, &end, 10);
            if (*end || v < 0 || v >= RTQ_CHANNELS) { *msg = "ch= wants 0..15"; return -1; }
            *ch = (int)v;
        } else if (mode && strcmp(tok, "mode=immediate") == 0) {
            *mode = MODE_IMMEDIATE;
        } else if (mode && strcmp(tok, "mode=callback") == 0) {
            *mode = MODE_CALLBACK;
        } else if (prio && strncmp(tok, "prio=", 5) == 0) {
            long v = strtol(tok + 5, &end, 10);
            if (*end || v < epicsThreadPriorityMin || v > epicsThreadPriorityMax) {
                *msg = "prio= wants an EPICS thread priority 0..99";
                return -1;
            }
            *prio = (unsigned)v;
        } else {
            *msg = "unknown option (ch=, mode=immediate|callback, prio=)";
            return -1;
        }
    }
    return 0;
}

/* Open a line. A FIFO is opened read-write (Linux), so it never reports hang-up when the peer
 * closes and an output FIFO can be opened before anyone reads it. An inherited eventfd is
 * blocking: make it non-blocking. */
static int open_line(struct line *ln)
{
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
    if (p->mode == MODE_IMMEDIATE) {
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

static void reader(void *arg)
{
    struct bi_pvt *p = arg;
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
        uint64_t v;
        ssize_t r = read(p->in.fd, &v, sizeof v);
        if (r != (ssize_t)sizeof v) {
            if (r < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            p->read_errors++;
            continue;
        }
        int64_t t_stim = (int64_t)v;
        if (p->in.kind == LINE_EVENTFD && t_stim > t_wake) {
            /* several eventfd writes summed up: the times are lost, count it */
            p->coalesced++;
            t_stim = t_wake;
        }
        dispatch(p, t_stim, t_wake);
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
        opts.priority = p->prio;
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
    p->mode = MODE_CALLBACK;
    p->prio = epicsThreadPriorityHigh;
    if (parse_link(prec->inp.value.instio.string, &p->in, &p->ch, &p->mode, &p->prio, &msg) != 0) {
        recGblRecordError(S_db_badField, prec, msg);
        free(p);
        return init_error(S_db_badField);
    }
    if (open_line(&p->in) != 0) {
        recGblRecordError(S_db_badField, prec, "rtqual bi: cannot open the input line");
        fprintf(stderr, "rtqual devsup %s: %s: %s\n", prec->name, p->in.path,
                errno == ENOTSUP ? "not a FIFO" : strerror(errno));
        free(p);
        return init_error(S_db_badField);
    }
    p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    p->done = epicsEventMustCreate(epicsEventEmpty);
    scanIoInit(&p->scan);
    scanIoSetComplete(p->scan, scan_complete, p);
    chan(p->ch);
    readers[nreaders++] = p;
    prec->dpvt = p;
    return 0;
}

static long bi_get_ioint_info(int detach, struct dbCommon *prec, IOSCANPVT *pscan)
{
    struct bi_pvt *p = prec->dpvt;
    (void)detach;
    if (!p)
        return -1;
    *pscan = p->scan;
    return 0;
}

static long bi_read(struct biRecord *prec)
{
    struct bi_pvt *p = prec->dpvt;
    int64_t t_process = now_ns();
    if (!p)
        return -1;
    struct channel *c = &channels[p->ch];
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
        printf("  rtqual bi %s: %s ch=%d mode=%s prio=%u events=%llu coalesced=%llu timeouts=%llu "
               "read_errors=%llu\n", p->prec->name, p->in.path, p->ch,
               p->mode == MODE_IMMEDIATE ? "immediate" : "callback", p->prio,
               (unsigned long long)p->events, (unsigned long long)p->coalesced,
               (unsigned long long)p->timeouts, (unsigned long long)p->read_errors);
    }
    if (level > 0) {
        for (int ch = 0; ch < RTQ_CHANNELS; ch++)
            if (channels[ch].lock)
                printf("  rtqual ch %d: responses=%llu unmatched=%llu write_errors=%llu\n", ch,
                       (unsigned long long)channels[ch].responses,
                       (unsigned long long)channels[ch].unmatched,
                       (unsigned long long)channels[ch].write_errors);
    }
    return 0;
}

static bidset devBiRtqual = {
    {5, bi_report, NULL, bi_init_record, bi_get_ioint_info},
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
    if (parse_link(prec->out.value.instio.string, &p->out, &p->ch, NULL, NULL, &msg) != 0) {
        recGblRecordError(S_db_badField, prec, msg);
        free(p);
        return init_error(S_db_badField);
    }
    if (open_line(&p->out) != 0) {
        recGblRecordError(S_db_badField, prec, "rtqual bo: cannot open the output line");
        fprintf(stderr, "rtqual devsup %s: %s: %s\n", prec->name, p->out.path,
                errno == ENOTSUP ? "not a FIFO" : strerror(errno));
        free(p);
        return init_error(S_db_badField);
    }
    chan(p->ch);
    prec->dpvt = p;
    return 2; /* do not convert RVAL to VAL */
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
        return 0;
    }
    ssize_t w;
    if (p->out.kind == LINE_FIFO) {
        w = write(p->out.fd, msg, sizeof msg); /* <= PIPE_BUF: atomic */
        if (w != (ssize_t)sizeof msg) {
            c->write_errors++;
            recGblSetSevr(prec, WRITE_ALARM, MINOR_ALARM);
            return 0;
        }
    } else {
        uint64_t v = (uint64_t)t_out;
        w = write(p->out.fd, &v, sizeof v);
        if (w != (ssize_t)sizeof v) {
            c->write_errors++;
            recGblSetSevr(prec, WRITE_ALARM, MINOR_ALARM);
            return 0;
        }
    }
    c->responses++;
    return 0;
}

static bodset devBoRtqual = {
    {5, NULL, NULL, bo_init_record, NULL},
    bo_write,
};
epicsExportAddress(dset, devBoRtqual);

/* ---- registrar ---- */

static void rtqualDevsupRegistrar(void)
{
    initHookRegister(start_readers);
}
epicsExportRegistrar(rtqualDevsupRegistrar);
