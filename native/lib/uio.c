/* A Linux UIO device: sysfs lookup, its interrupt and IRQ thread, BARs, wait and unmask (uio.h). */
#include "rtqual/uio.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define PCI_COMMAND 0x04
#define PCI_COMMAND_INTX_DISABLE 0x400
#define INTERRUPTS_MAX (256 * 1024)

static const char *sysfs_root(void)
{
	const char *s = getenv("RTQUAL_SYSFS");
	return s && *s ? s : "/sys";
}

/* The first line of a small file, newline cut; false when unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

/* /proc/interrupts, whole (NUL-terminated, malloc'd), or NULL. */
static char *read_interrupts(void)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char *buf = malloc(INTERRUPTS_MAX);
	if (!f || !buf) {
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	size_t n = fread(buf, 1, INTERRUPTS_MAX - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

int uio_parse_reg(const char *s, struct uio_reg *r, char *err, size_t len)
{
	char *end;
	errno = 0;
	long bar = strtol(s, &end, 0);
	if (end == s || *end != ':' || bar < 0 || bar >= UIO_BARS)
		return snprintf(err, len, "'%s': want BAR:OFFSET=VALUE with BAR 0-%d (e.g. 0:0x60=1)", s, UIO_BARS - 1),
		       -1;
	const char *o = end + 1;
	unsigned long long off = strtoull(o, &end, 0);
	if (end == o || *end != '=' || errno || *o == '-' || off % 4)
		return snprintf(err, len, "'%s': OFFSET must be a number, a multiple of 4 (32-bit registers)", s), -1;
	const char *v = end + 1;
	unsigned long long val = strtoull(v, &end, 0);
	if (end == v || *end || errno || *v == '-' || val > UINT32_MAX)
		return snprintf(err, len, "'%s': VALUE must be a 32-bit number", s), -1;
	r->bar = (int)bar;
	r->offset = off;
	r->value = (uint32_t)val;
	return 0;
}

bool irq_listed(const char *interrupts, int irq)
{
	for (const char *p = interrupts; p && *p;) {
		while (*p == ' ')
			p++;
		char *end;
		long n = strtol(p, &end, 10);
		if (end != p && *end == ':' && n == irq)
			return true;
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return false;
}

int irq_named(const char *interrupts, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = interrupts; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t ll = eol ? (size_t)(eol - p) : strlen(p);
		while (ll && isspace((unsigned char)p[ll - 1]))
			ll--;
		const char *q = p;
		while (*q == ' ')
			q++;
		char *end;
		long n = strtol(q, &end, 10);
		if (end != q && *end == ':' && ll > nl && memcmp(p + ll - nl, name, nl) == 0 &&
		    (p[ll - nl - 1] == ' ' || p[ll - nl - 1] == ','))
			return (int)n;
		p = eol ? eol + 1 : NULL;
	}
	return -1;
}

int uio_find(struct uio_dev *d, const char *path, char *err, size_t len)
{
	struct stat sb;
	char file[640], buf[128];
	memset(d, 0, sizeof(*d));
	d->fd = d->cfg_fd = d->irq = -1;
	snprintf(d->path, sizeof(d->path), "%s", path);
	if (stat(path, &sb) < 0)
		return snprintf(err, len, "--uio %s: %s", path, strerror(errno)), errno == EACCES ? 3 : 1;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	snprintf(d->sys, sizeof(d->sys), "%s/class/uio/%s", sysfs_root(), base);
	snprintf(file, sizeof(file), "%s/dev", d->sys);
	unsigned maj, min;
	if (!S_ISCHR(sb.st_mode) || !read_line(file, buf, sizeof(buf)) || sscanf(buf, "%u:%u", &maj, &min) != 2 ||
	    maj != major(sb.st_rdev) || min != minor(sb.st_rdev))
		return snprintf(err, len,
				"--uio %s: not a UIO device (%s; a UIO device is /dev/uioN with %s/class/uio/uioN)",
				path, S_ISCHR(sb.st_mode) ? "no matching sysfs entry" : "not a character device",
				sysfs_root()),
		       1;
	snprintf(file, sizeof(file), "%s/name", d->sys);
	if (!read_line(file, d->name, sizeof(d->name)))
		snprintf(d->name, sizeof(d->name), "%s", base);
	return 0;
}

int uio_open(struct uio_dev *d, const char *path, int irq, char *err, size_t len)
{
	char file[640], buf[128];
	int rc = uio_find(d, path, err, len);
	if (rc)
		return rc;
	char *ints = read_interrupts();
	if (irq >= 0) {
		if (!ints || !irq_listed(ints, irq)) {
			free(ints);
			return snprintf(err, len, "--irq %d: no such interrupt (no line %d: in /proc/interrupts)", irq, irq),
			       1;
		}
		d->irq = irq;
	} else {
		snprintf(file, sizeof(file), "%s/device/irq", d->sys);
		if (read_line(file, buf, sizeof(buf)) && atoi(buf) > 0 && ints && irq_listed(ints, atoi(buf)))
			d->irq = atoi(buf);
		else if (ints)
			d->irq = irq_named(ints, d->name);
	}
	free(ints);
	if ((d->fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return snprintf(err, len, "--uio %s: %s", path, strerror(errno)),
		       errno == EACCES || errno == EPERM ? 3 : 1;
	if (d->irq < 0)
		return snprintf(err, len,
				"--uio %s (%s): no interrupt found (no IRQ in sysfs or in /proc/interrupts; a device "
				"with one: give --irq N)",
				path, d->name),
		       1;
	snprintf(file, sizeof(file), "%s/device/config", d->sys);
	d->cfg_fd = open(file, O_RDWR | O_CLOEXEC); /* PCI only */
	return 0;
}

int uio_map_bar(struct uio_dev *d, int bar, char *err, size_t len)
{
	char file[640];
	struct stat sb;
	if (d->bar[bar])
		return 0;
	snprintf(file, sizeof(file), "%s/device/resource%d", d->sys, bar);
	int fd = open(file, O_RDWR | O_SYNC | O_CLOEXEC);
	if (fd < 0)
		return snprintf(err, len, "BAR %d of %s: %s (%s)", bar, d->path, strerror(errno), file),
		       errno == EACCES || errno == EPERM ? 3 : 1;
	if (fstat(fd, &sb) < 0 || sb.st_size <= 0) {
		close(fd);
		return snprintf(err, len, "BAR %d of %s: empty (%s)", bar, d->path, file), 1;
	}
	void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (p == MAP_FAILED)
		return snprintf(err, len, "BAR %d of %s: mmap: %s (an I/O-port BAR cannot be mapped)", bar, d->path,
				strerror(e)),
		       e == EACCES || e == EPERM ? 3 : 1;
	d->bar[bar] = p;
	d->bar_len[bar] = (size_t)sb.st_size;
	return 0;
}

int uio_check_reg(struct uio_dev *d, const struct uio_reg *r, const char *opt, char *err, size_t len)
{
	int rc = uio_map_bar(d, r->bar, err, len);
	if (rc)
		return rc;
	if (r->offset + 4 > d->bar_len[r->bar])
		return snprintf(err, len, "--%s %d:0x%" PRIx64 ": outside BAR %d (%zu bytes)", opt, r->bar, r->offset,
				r->bar, d->bar_len[r->bar]),
		       1;
	return 0;
}

void uio_write_reg(const struct uio_dev *d, const struct uio_reg *r)
{
	*(volatile uint32_t *)((char *)d->bar[r->bar] + r->offset) = r->value;
}

int uio_unmask(struct uio_dev *d)
{
	uint16_t cmd;
	if (d->cfg_fd >= 0 && pread(d->cfg_fd, &cmd, 2, PCI_COMMAND) == 2 && (cmd & PCI_COMMAND_INTX_DISABLE)) {
		cmd &= (uint16_t)~PCI_COMMAND_INTX_DISABLE;
		if (pwrite(d->cfg_fd, &cmd, 2, PCI_COMMAND) != 2)
			return -1;
	}
	int32_t one = 1;
	if (write(d->fd, &one, sizeof(one)) != (ssize_t)sizeof(one) && errno != ENOSYS)
		return -1;
	return 0;
}

int uio_wait(struct uio_dev *d, int64_t timeout_ns, uint32_t *count)
{
	struct pollfd p = {.fd = d->fd, .events = POLLIN};
	struct timespec ts = {.tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000};
	int r = ppoll(&p, 1, &ts, NULL);
	if (r <= 0)
		return r < 0 && errno != EINTR ? -1 : 0;
	ssize_t n = read(d->fd, count, sizeof(*count));
	if (n != (ssize_t)sizeof(*count)) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	return 1;
}

int64_t uio_event_count(const struct uio_dev *d)
{
	char file[640], buf[64];
	snprintf(file, sizeof(file), "%s/event", d->sys);
	return read_line(file, buf, sizeof(buf)) ? strtoll(buf, NULL, 10) : -1;
}

void irq_thread_find(int irq, const char *name, struct irq_thread *t)
{
	char want[32], file[300], comm[64];
	memset(t, 0, sizeof(*t));
	t->cpu = -1;
	snprintf(want, sizeof(want), "irq/%d-", irq);
	DIR *dir = opendir("/proc");
	if (!dir)
		return;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(file, sizeof(file), "/proc/%s/comm", e->d_name);
		if (!read_line(file, comm, sizeof(comm)) || strncmp(comm, want, strlen(want)) != 0)
			continue;
		const char *action = comm + strlen(want); /* the handler's name, cut to the comm's 15 characters */
		bool ours = strncmp(name, action, strlen(action)) == 0;
		if (t->pid && !ours)
			continue; /* a shared line: the thread named after our handler wins */
		t->pid = (pid_t)atoi(e->d_name);
		snprintf(t->comm, sizeof(t->comm), "%s", comm);
		if (ours)
			break;
	}
	closedir(dir);
	if (!t->pid)
		return;
	struct sched_param sp;
	t->policy = sched_getscheduler(t->pid);
	t->priority = sched_getparam(t->pid, &sp) == 0 ? sp.sched_priority : 0;
	char stat[1024];
	snprintf(file, sizeof(file), "/proc/%d/stat", (int)t->pid);
	if (read_line(file, stat, sizeof(stat))) {
		const char *p = strrchr(stat, ')');
		for (int field = 2; p && field < 39; field++) /* field 39: the CPU it last ran on */
			p = strchr(p + 1, ' ');
		if (p)
			t->cpu = atoi(p + 1);
	}
}

/* Whether process pid holds the file `want` (a canonical path) open. */
static bool holds_open(const char *pid, const char *want)
{
	char dir[300], link[600], target[512];
	snprintf(dir, sizeof(dir), "/proc/%s/fd", pid);
	DIR *d = opendir(dir);
	if (!d)
		return false;
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = 0;
			found = strcmp(target, want) == 0;
		}
	}
	closedir(d);
	return found;
}

pid_t uio_reader_find(const char *path, const char *comm_prefix)
{
	char want[512], file[640], comm[64];
	if (!realpath(path, want))
		return 0;
	pid_t found = 0, self = getpid();
	DIR *dir = opendir("/proc");
	if (!dir)
		return 0;
	struct dirent *e;
	while (!found && (e = readdir(dir))) {
		if (!isdigit((unsigned char)e->d_name[0]) || atoi(e->d_name) == self || !holds_open(e->d_name, want))
			continue;
		snprintf(file, sizeof(file), "/proc/%s/task", e->d_name);
		DIR *tasks = opendir(file);
		struct dirent *k;
		while (tasks && !found && (k = readdir(tasks))) {
			snprintf(file, sizeof(file), "/proc/%s/task/%s/comm", e->d_name, k->d_name);
			if (isdigit((unsigned char)k->d_name[0]) && read_line(file, comm, sizeof(comm)) &&
			    strncmp(comm, comm_prefix, strlen(comm_prefix)) == 0)
				found = (pid_t)atoi(k->d_name);
		}
		if (tasks)
			closedir(tasks);
	}
	closedir(dir);
	return found;
}

void uio_close(struct uio_dev *d)
{
	if (!d->path[0])
		return; /* never found: nothing to release */
	for (int b = 0; b < UIO_BARS; b++)
		if (d->bar[b])
			munmap(d->bar[b], d->bar_len[b]);
	if (d->cfg_fd >= 0)
		close(d->cfg_fd);
	if (d->fd >= 0)
		close(d->fd);
	d->fd = d->cfg_fd = -1;
	memset(d->bar, 0, sizeof(d->bar));
}

/* ---- the kernel's times of one interrupt (irqtrace) ---- */

static const char *const tracefs_dirs[] = {"kernel/tracing", "kernel/debug/tracing"}; /* under SYSFS */

static int tracefs_write(const struct irqtrace *t, const char *file, const char *text)
{
	char path[640];
	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

const char *irqtrace_root(void)
{
	static char root[200];
	for (size_t i = 0; i < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]); i++) {
		char inst[256];
		snprintf(root, sizeof(root), "%s/%s", sysfs_root(), tracefs_dirs[i]);
		snprintf(inst, sizeof(inst), "%s/instances", root);
		if (access(inst, F_OK) == 0)
			return root;
	}
	return NULL;
}

int irqtrace_open(struct irqtrace *t, int irq, pid_t irq_thread, char *err, size_t len)
{
	char filter[128];
	memset(t, 0, sizeof(*t));
	t->pipe_fd = -1;
	t->irq = irq;
	t->irq_thread = irq_thread;
	const char *root = irqtrace_root();
	if (!root)
		return snprintf(err, len, "no tracefs (mount -t tracefs nodev /sys/kernel/tracing)"), -1;
	snprintf(t->dir, sizeof(t->dir), "%s/instances/rtqual-%d-uio", root, (int)getpid());
	if (mkdir(t->dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, len, "cannot make the tracefs instance %s: %s", t->dir, strerror(errno));
		t->dir[0] = 0;
		return -1;
	}
	snprintf(filter, sizeof(filter), "irq == %d", irq);
	if (tracefs_write(t, "trace_clock", "mono") || tracefs_write(t, "events/irq/irq_handler_entry/filter", filter) ||
	    tracefs_write(t, "events/irq/irq_handler_entry/enable", "1"))
		return snprintf(err, len, "%s: cannot set the mono clock or irq_handler_entry: %s", t->dir,
				strerror(errno)),
		       -1;
	return 0;
}

int irqtrace_reader(struct irqtrace *t, pid_t reader)
{
	char wake[128], run[128], path[640];
	t->reader = reader;
	if (t->irq_thread) {
		snprintf(wake, sizeof(wake), "pid == %d || pid == %d", (int)t->irq_thread, (int)reader);
		snprintf(run, sizeof(run), "next_pid == %d || next_pid == %d", (int)t->irq_thread, (int)reader);
	} else {
		snprintf(wake, sizeof(wake), "pid == %d", (int)reader);
		snprintf(run, sizeof(run), "next_pid == %d", (int)reader);
	}
	if (tracefs_write(t, "events/sched/sched_wakeup/filter", wake) ||
	    tracefs_write(t, "events/sched/sched_switch/filter", run) ||
	    tracefs_write(t, "events/sched/sched_wakeup/enable", "1") ||
	    tracefs_write(t, "events/sched/sched_switch/enable", "1"))
		return -1;
	snprintf(path, sizeof(path), "%s/trace_pipe", t->dir);
	t->pipe_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	return t->pipe_fd < 0 ? -1 : 0;
}

/* "SECONDS.FRACTION" ending just before `end` (the trace's time of the line), ns; -1 if none. */
static int64_t trace_time_ns(const char *line, const char *end)
{
	const char *s = end;
	while (s > line && s[-1] != ' ')
		s--;
	char *dot;
	long long sec = strtoll(s, &dot, 10);
	if (dot == s || *dot != '.')
		return -1;
	int64_t frac = 0, scale = 1000000000;
	for (const char *q = dot + 1; q < end && isdigit((unsigned char)*q); q++) {
		scale /= 10;
		frac += (*q - '0') * scale;
	}
	return (int64_t)sec * 1000000000 + frac;
}

static void pending_add(struct irqtrace *t, int64_t ns, int point)
{
	if (t->n == IRQTRACE_PENDING) {
		memmove(t->ev, t->ev + 1, sizeof(t->ev[0]) * (IRQTRACE_PENDING - 1));
		t->n--;
		t->dropped++;
	}
	t->ev[t->n].ns = ns;
	t->ev[t->n++].point = point;
}

bool irqtrace_line(struct irqtrace *t, const char *line)
{
	static const char *const kinds[] = {": irq_handler_entry: ", ": sched_wakeup: ", ": sched_switch: "};
	for (int k = 0; k < 3; k++) {
		const char *p = strstr(line, kinds[k]);
		if (!p)
			continue;
		int64_t ns = trace_time_ns(line, p);
		const char *f = strstr(p, k == 0 ? " irq=" : k == 1 ? " pid=" : " next_pid=");
		if (ns < 0 || !f)
			return false;
		long id = strtol(strchr(f, '=') + 1, NULL, 10);
		int point = -1;
		if (k == 0 && id == t->irq)
			point = IRQ_ENTRY;
		else if (k > 0 && t->irq_thread && id == t->irq_thread)
			point = k == 1 ? IRQ_THREAD_WOKEN : IRQ_THREAD_RUNNING;
		else if (k > 0 && t->reader && id == t->reader)
			point = k == 1 ? READER_WOKEN : READER_RUNNING;
		if (point < 0)
			return false;
		pending_add(t, ns, point);
		return true;
	}
	return false;
}

/* What trace_pipe has now, into the pending events. */
static void irqtrace_drain(struct irqtrace *t)
{
	char buf[8192];
	ssize_t n;
	while (t->pipe_fd >= 0 && (n = read(t->pipe_fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (t->part_len < sizeof(t->part) - 1)
					t->part[t->part_len++] = buf[i];
				continue;
			}
			t->part[t->part_len] = 0;
			irqtrace_line(t, t->part);
			t->part_len = 0;
		}
	}
}

int irqtrace_event(struct irqtrace *t, int64_t from_ns, int64_t to_ns, int64_t p[IRQ_POINTS])
{
	irqtrace_drain(t);
	int next = IRQ_ENTRY, used = 0;
	int64_t after = from_ns - from_ns % 1000; /* the trace's times are whole microseconds */
	for (int k = 0; k < IRQ_POINTS; k++)
		p[k] = -1;
	for (int i = 0; i < t->n && t->ev[i].ns <= to_ns; i++) {
		used = i + 1;
		if (next < IRQ_POINTS && t->ev[i].point == next && t->ev[i].ns >= after) {
			p[next] = after = t->ev[i].ns;
			next++;
			if (next == IRQ_THREAD_WOKEN && !t->irq_thread)
				next = READER_WOKEN;
		}
	}
	memmove(t->ev, t->ev + used, sizeof(t->ev[0]) * (size_t)(t->n - used));
	t->n -= used;
	return next;
}

void irqtrace_close(struct irqtrace *t)
{
	if (t->pipe_fd >= 0)
		close(t->pipe_fd);
	t->pipe_fd = -1;
	if (t->dir[0]) {
		tracefs_write(t, "events/enable", "0");
		rmdir(t->dir);
		t->dir[0] = 0;
	}
}
