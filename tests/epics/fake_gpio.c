/* Test double of the GPIO character device (v2 ABI) for the GPIO pipeline test, loaded with
 * LD_PRELOAD into rtqual, its IOC and its harness: no chip, no kernel driver, only the wires.
 *
 *   RTQUAL_FAKE_GPIO_DIR=/tmp/x          a folder for one FIFO per input line
 *   RTQUAL_FAKE_GPIO_WIRES=17:27,22:23   jumper wires, output line -> input line
 *
 * open("/dev/gpiochip*") gives a placeholder fd. GPIO_V2_GET_LINE_IOCTL gives, for an input line
 * L, the FIFO DIR/line-L (read side); for an output line, the FIFO of the input line its wire
 * goes to (write side). GPIO_V2_LINE_SET_VALUES_IOCTL on an output writes one struct
 * gpio_v2_line_event (timestamp_ns: CLOCK_MONOTONIC now, as the kernel stamps an edge) into that
 * FIFO when the value changes. Everything else goes to libc. Pipeline tests only: it measures
 * nothing about GPIO hardware. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/gpio.h>

#define MAX_FD 4096

static struct {
	int is_chip, is_output;
	unsigned line, value, seqno;
} fds[MAX_FD];

static int (*real_open)(const char *, int, ...);
static int (*real_ioctl)(int, unsigned long, ...);

static int wire_to(unsigned out)
{
	const char *w = getenv("RTQUAL_FAKE_GPIO_WIRES");
	unsigned a, b;
	int n;
	while (w && sscanf(w, "%u:%u%n", &a, &b, &n) == 2) {
		if (a == out)
			return (int)b;
		w += n;
		if (*w == ',')
			w++;
	}
	return -1;
}

static int line_fifo(unsigned line)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/line-%u", getenv("RTQUAL_FAKE_GPIO_DIR"), line);
	if (mkfifo(path, 0600) < 0 && errno != EEXIST)
		return -1;
	return real_open(path, O_RDWR | O_CLOEXEC);
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = __OPEN_NEEDS_MODE(flags) ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	if (!real_open)
		real_open = dlsym(RTLD_NEXT, "open");
	if (strncmp(path, "/dev/gpiochip", 13) != 0 || !getenv("RTQUAL_FAKE_GPIO_DIR"))
		return real_open(path, flags, mode);
	int fd = real_open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0 && fd < MAX_FD)
		fds[fd].is_chip = 1;
	return fd;
}

int open64(const char *path, int flags, ...) __attribute__((alias("open"))); /* the same on 64-bit */

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (!real_open)
		real_open = dlsym(RTLD_NEXT, "open");
	if (!real_ioctl)
		real_ioctl = dlsym(RTLD_NEXT, "ioctl");
	if (fd < 0 || fd >= MAX_FD)
		return real_ioctl(fd, req, arg);
	if (req == GPIO_V2_GET_LINE_IOCTL && fds[fd].is_chip) {
		struct gpio_v2_line_request *r = arg;
		int output = (r->config.flags & GPIO_V2_LINE_FLAG_OUTPUT) != 0;
		int peer = output ? wire_to(r->offsets[0]) : (int)r->offsets[0];
		if (peer < 0) {
			errno = ENXIO; /* an output with no wire: nothing to drive */
			return -1;
		}
		int lfd = line_fifo((unsigned)peer);
		if (lfd < 0 || lfd >= MAX_FD)
			return -1;
		fds[lfd].is_chip = 0;
		fds[lfd].is_output = output;
		fds[lfd].line = (unsigned)peer;
		fds[lfd].value = 0;
		r->fd = lfd;
		return 0;
	}
	if (req == GPIO_V2_LINE_SET_VALUES_IOCTL && fds[fd].is_output) {
		struct gpio_v2_line_values *v = arg;
		unsigned value = (unsigned)(v->bits & v->mask & 1);
		if (!(v->mask & 1) || value == fds[fd].value)
			return 0;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		struct gpio_v2_line_event ev = {
			.timestamp_ns = (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec,
			.id = value ? GPIO_V2_LINE_EVENT_RISING_EDGE : GPIO_V2_LINE_EVENT_FALLING_EDGE,
			.offset = fds[fd].line,
			.seqno = ++fds[fd].seqno,
			.line_seqno = fds[fd].seqno,
		};
		fds[fd].value = value;
		return write(fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev) ? 0 : -1;
	}
	return real_ioctl(fd, req, arg);
}
