/* pio probe: programmed-I/O transfer speed (SPring-8 VME, Fig. 1: D8/D16/
 * D32 read and write). One pinned thread sweeps a mapped region with
 * volatile accesses of one width; each pass is timed with CLOCK_MONOTONIC.
 * sample = time per access (or per pass) in ns; throughput in the summary. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rtqual/cpulist.h"
#include "rtqual/lifecycle.h"
#include "rtqual/log.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"
#include "rtqual/uio.h"

#define RTTIME_SOFT_US 1000000 /* one pass at RT priority: at most 1 s */
#define RTTIME_HARD_US 2000000

static const char *const width_names[] = {"8", "16", "32", "64", NULL};
enum pio_op { OP_READ, OP_WRITE };
static const char *const op_names[] = {"read", "write", NULL};
enum pio_sample { SAMPLE_ACCESS, SAMPLE_PASS };
static const char *const sample_names[] = {"access", "pass", NULL};
enum pio_map { MAP_SHM, MAP_UIO, MAP_MEM, MAP_BAR };
static const char *const map_kinds[] = {"shm", "uio", "mem", "bar"};

struct pio_cfg {
	int width, op, sample, policy;
	const char *map, *uio, *offset;
	int64_t bar;
	int64_t size, passes, duration_ns, warmup, pause_ns, cpu, priority;
	bool allow_degraded;
	struct sink_out out;
};

/* All state of one pio run. */
struct pio {
	struct run run; /* first: the driver's part */
	struct pio_cfg cfg;
	int kind; /* enum pio_map */
	const char *dev;
	char devbuf[256];
	uint64_t map_index, phys_offset;
	struct uio_dev bar; /* --uio: the device whose BAR is mapped */
	uint64_t bar_offset;
	int fd;
	void *map_base;
	size_t map_len, page_off;
	volatile unsigned char *region;
	size_t bytes; /* swept per pass, a multiple of the width */
	unsigned width_bytes;
	uint64_t accesses; /* per pass */
	pthread_t tid;
	bool started;
	/* results, read after join */
	uint64_t passes_done, checksum;
	int64_t measured_ns;
	bool rttime_hit;
};

#define F(x) offsetof(struct pio, cfg.x)
static const struct opt_def pio_opts[] = {
	{"width", OPT_ENUM, F(width), 0, 0, "32", width_names, "access width in bits (D8/D16/D32/D64)"},
	{"op", OPT_ENUM, F(op), 0, 0, "read", op_names, "read or write every element of the region"},
	{"map", OPT_STRING, F(map), 0, 0, "shm", NULL,
	 "region: shm (memfd shared memory), uio:/dev/uioN[:MAP] (UIO map, size from sysfs), "
	 "mem:OFFSET:SIZE (/dev/mem, physical address)"},
	{"uio", OPT_PATH, F(uio), 0, 0, NULL, NULL,
	 "a PCI device's BAR instead of --map: the UIO device (/dev/uioN) whose sysfs resourceN is mapped; every "
	 "access is a bus access (under qemu: a trap into the emulator)"},
	{"bar", OPT_INT, F(bar), 0, UIO_BARS - 1, "0", NULL, "with --uio: the BAR"},
	{"offset", OPT_STRING, F(offset), 0, 0, "0", NULL,
	 "with --uio: first byte swept in the BAR, bytes (0x... allowed; a range whose registers have no side effects)"},
	{"size", OPT_INT, F(size), 8, 1LL << 32, "1048576", NULL,
	 "bytes swept per pass (default 1 MiB for shm, the whole map for uio/mem, the BAR past --offset)"},
	{"passes", OPT_INT, F(passes), 1, 1000000000, NULL, NULL, "measured passes; replaces --duration"},
	{"duration", OPT_DURATION, F(duration_ns), NS_PER_MS, 24 * 3600 * NS_PER_S, "2s", NULL,
	 "measured time after warm-up (whole passes)"},
	{"warmup", OPT_INT, F(warmup), 0, 1000000, "3", NULL, "passes discarded before measuring"},
	{"pause", OPT_DURATION, F(pause_ns), 0, NS_PER_S, "100us", NULL,
	 "sleep between passes (lets others run; resets the RT-time watchdog)"},
	{"sample", OPT_ENUM, F(sample), 0, 0, "access", sample_names,
	 "histogram sample: mean time per access of a pass (rounded ns) or time per pass"},
	{"cpu", OPT_INT, F(cpu), 0, CPULIST_MAX - 1, NULL, NULL, "CPU to run on (default: last of our affinity mask)"},
	RUN_OPT_POLICY(F, "scheduling policy"),
	RUN_OPT_PRIORITY(F, "40", "RT priority (ignored for other)"),
	RUN_OPT_THRESHOLD(F, "1ms", "samples above it emit event records"),
	SINK_OUT_OPTS(F, "1000"),
	RUN_OPT_ALLOW_DEGRADED(F, RUN_DEGRADED_HELP),
};
#undef F
#define PIO_NOPTS ((int)(sizeof(pio_opts) / sizeof(pio_opts[0])))

/* One pass of each width and direction: volatile, one access per element,
 * never merged or vectorized; reads are summed (one add per access, the
 * cheapest dependency) into a checksum that is emitted. */
#define PIO_PASS(T, BITS)                                                                                   \
	static uint64_t read##BITS(volatile unsigned char *p, uint64_t n)                                  \
	{                                                                                                  \
		volatile T *q = (volatile T *)p;                                                           \
		uint64_t sum = 0;                                                                          \
		for (uint64_t i = 0; i < n; i++)                                                           \
			sum += q[i];                                                                       \
		return sum;                                                                                \
	}                                                                                                  \
	static uint64_t write##BITS(volatile unsigned char *p, uint64_t n, uint64_t pattern)               \
	{                                                                                                  \
		volatile T *q = (volatile T *)p;                                                           \
		for (uint64_t i = 0; i < n; i++)                                                           \
			q[i] = (T)(pattern + i);                                                           \
		return pattern;                                                                            \
	}
PIO_PASS(uint8_t, 8)
PIO_PASS(uint16_t, 16)
PIO_PASS(uint32_t, 32)
PIO_PASS(uint64_t, 64)

static uint64_t pio_pass(const struct pio *t, uint64_t pass)
{
	volatile unsigned char *p = t->region;
	uint64_t n = t->accesses;
	if (t->cfg.op == OP_READ) {
		switch (t->cfg.width) {
		case 0: return read8(p, n);
		case 1: return read16(p, n);
		case 2: return read32(p, n);
		default: return read64(p, n);
		}
	}
	switch (t->cfg.width) {
	case 0: return write8(p, n, pass);
	case 1: return write16(p, n, pass);
	case 2: return write32(p, n, pass);
	default: return write64(p, n, pass);
	}
}

/* Measurement thread: warm-up passes, then timed passes until --passes or
 * the duration is reached, the sink stops or RLIMIT_RTTIME fired. */
static void *pio_thread_main(void *arg)
{
	struct pio *t = arg;
	struct cpu_state *cs = &t->run.sink.cs[0];
	const struct pio_cfg *c = &t->cfg;
	uint64_t sum = 0, pass = 0, measured = 0, wakeups = 0;
	int64_t total_ns = 0, end_ns = INT64_MAX;
	const bool by_passes = c->passes > 0;

	rt_prefault_stack();
	for (;;) {
		if (atomic_load_explicit(&t->run.sink.stop, memory_order_relaxed) || rt_xcpu_caught() ||
		    rt_signals_caught())
			break;
		bool warm = pass < (uint64_t)c->warmup;
		int64_t t0 = mono_now_ns();
		if (!warm && measured == 0 && !by_passes)
			end_ns = t0 + c->duration_ns;
		if (!warm && (by_passes ? measured >= (uint64_t)c->passes : t0 >= end_ns))
			break;
		sum = (sum << 7 | sum >> 57) ^ pio_pass(t, pass);
		int64_t t1 = mono_now_ns();
		int64_t d = t1 - t0;
		pass++;
		wakeups++;
		if (!warm) {
			int64_t s = c->sample == SAMPLE_PASS ? d : (int64_t)((d + (int64_t)(t->accesses / 2)) /
									      (int64_t)t->accesses);
			sink_sample(cs, s, t1, 0);
			measured++;
			total_ns += d;
		}
		if (c->pause_ns > 0) {
			struct timespec ts = ns_to_ts(c->pause_ns);
			nanosleep(&ts, NULL);
		}
	}
	t->passes_done = measured;
	t->measured_ns = total_ns;
	t->checksum = sum;
	t->rttime_hit = rt_xcpu_caught();
	return run_slot_done(&t->run, cs, wakeups);
}

static void pio_params(struct jw *w, const void *ctx)
{
	const struct pio *t = ctx;
	const struct pio_cfg *c = &t->cfg;
	jw_str(w, "map", t->kind == MAP_BAR ? "bar" : c->map);
	jw_str(w, "map_kind", map_kinds[t->kind]);
	if (t->kind == MAP_BAR) {
		jw_str(w, "uio", c->uio);
		jw_i64(w, "bar", c->bar);
		jw_u64(w, "offset", t->bar_offset);
		jw_str(w, "note", "memory-mapped I/O: each access is a bus transaction (under an emulator, a trap into it)");
	}
	jw_i64(w, "width_bits", (int64_t)t->width_bytes * 8);
	jw_str(w, "op", op_names[c->op]);
	jw_str(w, "sample", sample_names[c->sample]);
	jw_u64(w, "bytes_per_pass", t->bytes);
	jw_u64(w, "accesses_per_pass", t->accesses);
	jw_i64(w, "passes", c->passes);
	jw_i64(w, "duration_ns", c->duration_ns);
	jw_i64(w, "warmup", c->warmup);
	jw_i64(w, "pause_ns", c->pause_ns);
	jw_i64(w, "cpu", c->cpu);
	run_params_sched(w, c->policy, c->priority);
	sink_out_params(w, &c->out);
	jw_bool(w, "allow_degraded", c->allow_degraded);
}

/* Summary extension (optional per-slot keys): throughput of the measured
 * passes, exact mean time per access, and the checksum of what was read. */
static void pio_summary_extra(struct jw *w, int slot, const void *ctx)
{
	const struct pio *t = ctx;
	if (slot != 0)
		return;
	uint64_t nbytes = (uint64_t)t->bytes * t->passes_done;
	double bytes = (double)nbytes;
	jw_i64(w, "width_bits", (int64_t)t->width_bytes * 8);
	jw_str(w, "op", op_names[t->cfg.op]);
	jw_u64(w, "passes", t->passes_done);
	jw_u64(w, "bytes", nbytes);
	jw_i64(w, "transfer_ns", t->measured_ns);
	jw_double(w, "throughput_mb_s", t->measured_ns > 0 ? bytes * 1e3 / (double)t->measured_ns : 0.0);
	jw_double(w, "ns_per_access",
		  t->passes_done ? (double)t->measured_ns / ((double)t->accesses * (double)t->passes_done) : 0.0);
	char hex[24];
	snprintf(hex, sizeof(hex), "%016" PRIx64, t->checksum);
	jw_str(w, "checksum", hex);
}

/* Parse a number with C prefixes (0x...), no trailing junk. */
static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!*s || *s == '-')
		return -1;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* --map: which kind and its arguments. */
static int pio_parse_map(struct pio *t)
{
	const char *m = t->cfg.map;
	char *dev = t->devbuf;
	if (strcmp(m, "shm") == 0) {
		t->kind = MAP_SHM;
		return 0;
	}
	if (strncmp(m, "uio:", 4) == 0) {
		const char *p = m + 4, *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		if (n == 0 || n >= sizeof(t->devbuf) || strncmp(p, "/dev/uio", 8) != 0)
			return log_error("--map: expected uio:/dev/uioN[:MAP] (got '%s')", m);
		memcpy(dev, p, n);
		dev[n] = 0;
		if (colon && parse_u64(colon + 1, &t->map_index))
			return log_error("--map: map index '%s' is not a number", colon + 1);
		if (t->map_index > 4)
			return log_error("--map: UIO map index must be 0..4 (got %" PRIu64 ")", t->map_index);
		t->kind = MAP_UIO;
		t->dev = dev;
		return 0;
	}
	if (strncmp(m, "mem:", 4) == 0) {
		char buf[128];
		snprintf(buf, sizeof(buf), "%s", m + 4);
		char *colon = strchr(buf, ':');
		uint64_t size;
		if (!colon)
			return log_error("--map: expected mem:OFFSET:SIZE (got '%s')", m);
		*colon = 0;
		if (parse_u64(buf, &t->phys_offset) || parse_u64(colon + 1, &size) || size == 0)
			return log_error("--map: expected mem:OFFSET:SIZE with numbers (0x... allowed) (got '%s')", m);
		if (run_given(&t->run, "size") && (uint64_t)t->cfg.size > size)
			return log_error("--size %" PRId64 " is larger than the mem: region (%" PRIu64 " bytes)",
					 t->cfg.size, size);
		if (!run_given(&t->run, "size"))
			t->cfg.size = (int64_t)size;
		t->kind = MAP_MEM;
		t->dev = "/dev/mem";
		return 0;
	}
	return log_error("--map: must be shm, uio:/dev/uioN[:MAP] or mem:OFFSET:SIZE (got '%s')", m);
}

/* UIO map size from sysfs (/sys/class/uio/uioN/maps/mapM/size, hex). */
static int uio_map_size(const char *dev, uint64_t index, uint64_t *size)
{
	char path[512], buf[64] = "";
	const char *name = strrchr(dev, '/') + 1;
	snprintf(path, sizeof(path), "/sys/class/uio/%s/maps/map%" PRIu64 "/size", name, index);
	FILE *f = fopen(path, "r");
	if (!f)
		return log_skip("a UIO driver exposing that map", "--map: %s has no map %" PRIu64 " (%s: %s)", dev,
				index, path, strerror(errno));
	bool ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	if (!ok || parse_u64(buf, size) || *size == 0)
		return log_error("--map: cannot read the size of %s map %" PRIu64 " from %s", dev, index, path);
	return 0;
}

/* Does the device exist and may we open it? Exit 3 with the reason if not. */
static int pio_check_device(struct pio *t)
{
	struct stat st;
	if (t->kind == MAP_SHM)
		return 0;
	if (stat(t->dev, &st) != 0) {
		if (t->kind == MAP_UIO)
			return log_skip("a UIO device (load a UIO driver such as uio_pci_generic or uio_pdrv_genirq "
					"for the bus bridge)",
					"--map: %s does not exist (%s): no UIO device on this host", t->dev,
					rt_errname(errno));
		return log_skip("a kernel with CONFIG_DEVMEM (and CONFIG_STRICT_DEVMEM allowing the range)",
				"--map: /dev/mem does not exist (%s)", rt_errname(errno));
	}
	int flags = (t->cfg.op == OP_READ ? O_RDONLY : O_RDWR) | O_CLOEXEC | (t->kind == MAP_MEM ? O_SYNC : 0);
	int fd = open(t->dev, flags);
	if (fd < 0)
		return log_skip("run as root (CAP_SYS_RAWIO for /dev/mem) or read/write access to the device",
				"--map: cannot open %s: %s", t->dev, rt_errname(errno));
	close(fd);
	if (t->kind == MAP_UIO) {
		uint64_t size;
		int rc = uio_map_size(t->dev, t->map_index, &size);
		if (rc)
			return rc;
		if (run_given(&t->run, "size") && (uint64_t)t->cfg.size > size)
			return log_error("--size %" PRId64 " is larger than %s map %" PRIu64 " (%" PRIu64 " bytes)",
					 t->cfg.size, t->dev, t->map_index, size);
		if (!run_given(&t->run, "size"))
			t->cfg.size = (int64_t)size;
	}
	return 0;
}

/* --uio DEV --bar N [--offset]: the BAR mapped now (from sysfs resourceN), the range inside it. */
static int pio_check_bar(struct pio *t)
{
	struct pio_cfg *c = &t->cfg;
	char err[640];
	int rc = uio_find(&t->bar, c->uio, err, sizeof(err));
	if (!rc)
		rc = uio_map_bar(&t->bar, (int)c->bar, err, sizeof(err));
	if (rc == 3)
		return log_skip("root, or read/write access to the device's sysfs resource files", "%s", err);
	if (rc)
		return log_error("%s", err);
	t->kind = MAP_BAR;
	uint64_t len = t->bar.bar_len[c->bar], off;
	if (parse_u64(c->offset, &off))
		return log_error("--offset '%s': a number of bytes (0x... allowed)", c->offset);
	t->bar_offset = off;
	if (off >= len)
		return log_error("--offset 0x%" PRIx64 ": outside BAR %" PRId64 " (%" PRIu64 " bytes)", off, c->bar, len);
	if (run_given(&t->run, "size") && off + (uint64_t)c->size > len)
		return log_error("--offset 0x%" PRIx64 " --size %" PRId64 ": past the end of BAR %" PRId64 " (%" PRIu64
				 " bytes)",
				 off, c->size, c->bar, len);
	if (!run_given(&t->run, "size"))
		c->size = (int64_t)(len - off);
	if (off % 8)
		return log_error("--offset 0x%" PRIx64 ": must be a multiple of 8 (every access width aligned)", off);
	return 0;
}

/* Map the region. 0, or an exit code after the one-line message. */
static int pio_map(struct pio *t)
{
	long pg = sysconf(_SC_PAGESIZE);
	int prot = PROT_READ | (t->cfg.op == OP_WRITE || t->kind == MAP_SHM ? PROT_WRITE : 0);
	off_t off = 0;
	if (t->kind == MAP_BAR) { /* mapped by pio_check_bar */
		t->region = (volatile unsigned char *)t->bar.bar[t->cfg.bar] + t->bar_offset;
		return 0;
	}
	if (t->kind == MAP_SHM) {
		t->fd = memfd_create("rtqual-pio", MFD_CLOEXEC);
		if (t->fd < 0 || ftruncate(t->fd, (off_t)t->cfg.size) != 0)
			return log_error("shared memory of %" PRId64 " bytes: %s", t->cfg.size, strerror(errno));
		t->map_len = (size_t)t->cfg.size;
	} else {
		int flags = (t->cfg.op == OP_READ ? O_RDONLY : O_RDWR) | O_CLOEXEC | (t->kind == MAP_MEM ? O_SYNC : 0);
		t->fd = open(t->dev, flags);
		if (t->fd < 0)
			return log_skip("access to the device", "--map: cannot open %s: %s", t->dev, rt_errname(errno));
		if (t->kind == MAP_UIO) {
			off = (off_t)(t->map_index * (uint64_t)pg); /* UIO: map N is at offset N pages */
		} else {
			t->page_off = (size_t)(t->phys_offset % (uint64_t)pg);
			off = (off_t)(t->phys_offset - t->page_off);
		}
		t->map_len = t->page_off + (size_t)t->cfg.size;
	}
	void *p = mmap(NULL, t->map_len, prot, MAP_SHARED, t->fd, off);
	if (p == MAP_FAILED) {
		int e = errno;
		if (t->kind != MAP_SHM && (e == EPERM || e == EACCES))
			return log_skip("a kernel that allows mapping this range (CONFIG_STRICT_DEVMEM, "
					"iomem=relaxed)",
					"--map: mmap of %s refused (%s)", t->dev, rt_errname(e));
		return log_error("--map: mmap of %s: %s", t->kind == MAP_SHM ? "shared memory" : t->dev, strerror(e));
	}
	t->map_base = p;
	t->region = (volatile unsigned char *)p + t->page_off;
	if (t->kind == MAP_SHM) /* backed by RAM before measuring; a pattern the checksum can tell */
		for (size_t i = 0; i < t->map_len; i++)
			((unsigned char *)p)[i] = (unsigned char)(i * 2654435761u >> 13);
	return 0;
}

/* Options that need more than a range check. */
static int pio_validate(struct run *run)
{
	struct pio *t = (struct pio *)run;
	struct pio_cfg *c = &t->cfg;
	t->fd = -1;
	t->bar.fd = t->bar.cfg_fd = -1;
	if (run_given(run, "passes"))
		c->duration_ns = 0;
	else
		c->passes = 0;
	struct cpulist usable;
	int rc = run_pick_cpu(run, &c->cpu, true, &usable);
	if (rc)
		return rc;
	if (c->policy != RT_OTHER && sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return log_error("--policy %s on the only online CPU would stall the machine for every pass: use "
				 "--policy other",
				 rt_policy_names[c->policy]);
	if (c->policy != RT_OTHER && c->pause_ns == 0)
		return log_error("--pause 0 at --policy %s is an unbounded RT busy loop: give a pause (e.g. 100us) "
				 "or --policy other",
				 rt_policy_names[c->policy]);
	if (sink_out_validate(&c->out, run->a->check))
		return 1;
	if (c->uio && run_given(run, "map"))
		return log_error("--uio and --map exclude each other");
	if (!c->uio && (run_given(run, "bar") || run_given(run, "offset")))
		return log_error("--bar and --offset go with --uio");
	rc = c->uio ? pio_check_bar(t) : pio_parse_map(t);
	if (!rc && !c->uio)
		rc = pio_check_device(t);
	if (rc)
		return rc;
	t->width_bytes = 1u << c->width;
	t->bytes = (size_t)c->size / t->width_bytes * t->width_bytes;
	t->accesses = t->bytes / t->width_bytes;
	if (t->accesses == 0)
		return log_error("--size %" PRId64 " is smaller than one %u-bit access", c->size, t->width_bytes * 8);
	return 0;
}

/* Scheduling and memory locking, tried for real (as the timer probe). */
static int pio_privileges(struct run *run)
{
	struct pio *t = (struct pio *)run;
	return rt_acquire(t->cfg.policy, (int)t->cfg.priority, t->cfg.allow_degraded, &t->run.rt, &t->run.warn);
}

/* The mapping and its fd. */
static void pio_cleanup(struct run *run)
{
	struct pio *t = (struct pio *)run;
	if (t->map_base)
		munmap(t->map_base, t->map_len);
	uio_close(&t->bar);
	if (run->prepared && t->fd >= 0)
		close(t->fd);
}

/* The region, the sink, RLIMIT_RTTIME (a pass at RT priority: at most 1 s); the watchdog:
 * --duration (or a generous bound for --passes) plus a margin. */
static int pio_prepare(struct run *run)
{
	struct pio *t = (struct pio *)run;
	struct pio_cfg *c = &t->cfg;
	int cpu = (int)c->cpu, rc;
	if ((rc = pio_map(t)))
		return rc;
	if (sink_init(&run->sink, &c->out, &cpu, 1, run->err, sizeof(run->err)))
		return log_error("%s", run->err);
	run->sink.summary_extra = pio_summary_extra;
	run->sink.summary_ctx = t;
	if (run->rt.policy != RT_OTHER) {
		rt_xcpu_catch();
		rt_acquire_rttime_limit(RTTIME_SOFT_US, RTTIME_HARD_US, &run->warn);
	}
	uint64_t run_ns = c->passes ? 3600 * (uint64_t)NS_PER_S : (uint64_t)c->duration_ns;
	run->watchdog_s = run_watchdog_s(u128_of(run_ns), 0, 0x7fffffff);
	return 0;
}

/* The one pinned thread that sweeps the region. */
static int pio_start(struct run *run)
{
	struct pio *t = (struct pio *)run;
	return run_thread(run, &t->tid, &t->started, run->rt.priority, (int)t->cfg.cpu, pio_thread_main, t,
			  "the thread");
}

/* Join the sweeping thread. */
static void pio_stop(struct run *run)
{
	struct pio *t = (struct pio *)run;
	if (t->started)
		pthread_join(t->tid, NULL);
}

/* RLIMIT_RTTIME (only a started thread sets it) wins over the watchdog and a stop. */
static int pio_end(struct run *run)
{
	if (((struct pio *)run)->rttime_hit)
		return sink_finish(&run->sink, 1, "error", "a pass ran over 1 s at RT priority (RLIMIT_RTTIME): use a "
				   "smaller --size");
	return run_end(run);
}

/* The default shm region needs memfd_create (Linux 3.17); uio/mem say at
 * run time what they miss (exit 3). */
static bool pio_supported(char *why_not, size_t len)
{
	return probe_fd_supported(memfd_create("rtqual-pio-probe", MFD_CLOEXEC), "memfd_create", why_not, len);
}

const struct probe probe_pio = {
	.name = "pio",
	.summary = "programmed-I/O transfer speed: volatile 8/16/32/64-bit reads or writes over shared memory, a UIO "
		   "map or /dev/mem; ns per access and MB/s",
	.opts = pio_opts, .nopts = PIO_NOPTS, .supported = pio_supported, .label_keys = PROBE_LIST("width"),
	.state_bytes = sizeof(struct pio), .exclusive = PROBE_LIST("duration", "passes"), .params = pio_params,
	.validate = pio_validate, .privileges = pio_privileges, .prepare = pio_prepare,
	.start = pio_start, .stop = pio_stop, .end = pio_end, .cleanup = pio_cleanup,
};
