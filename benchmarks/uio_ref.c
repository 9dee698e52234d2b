/* A bare loop that raises a UIO device's interrupt and blocks on /dev/uioN for it: the reference for rtqual's
 * `event --source uio` active (benchmarks/uio_vs_bare.py builds and runs it). Nothing of rtqual: open, mmap,
 * pread/pwrite, poll, read and clock_gettime, written as directly as the measurement allows.
 *
 *   uio_ref /dev/uioN TRIGGER_OFFSET TRIGGER_VALUE ACK_OFFSET ACK_VALUE ROUNDS PERIOD_US CPU PRIORITY
 *
 * BAR 0 (sysfs resource0) is mapped; the PCI config space (sysfs config) unmasks the interrupt as
 * uio_pci_generic wants (its command register's interrupt-disable bit cleared, then 1 written to the device).
 * Pinned to CPU at SCHED_FIFO PRIORITY, memory locked, /dev/cpu_dma_latency held at 0: at absolute deadlines
 * PERIOD_US apart it reads CLOCK_MONOTONIC (t0), writes the trigger register, waits in poll for the interrupt,
 * reads the event count and CLOCK_MONOTONIC (t1), acknowledges and unmasks. 10 warm-up rounds are discarded.
 * Prints one JSON line {"rounds", "median_ns", "p99_ns", "max_ns"} (nearest rank). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WARMUP 10
#define TIMEOUT_MS 5000

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static void unmask(int cfg, int dev)
{
	uint16_t cmd;
	int32_t one = 1;
	if (pread(cfg, &cmd, 2, 4) == 2 && (cmd & 0x400)) {
		cmd &= (uint16_t)~0x400;
		if (pwrite(cfg, &cmd, 2, 4) != 2)
			perror("uio_ref: config");
	}
	if (write(dev, &one, sizeof(one)) != sizeof(one))
		perror("uio_ref: irqcontrol");
}

int main(int argc, char **argv)
{
	if (argc != 10) {
		fprintf(stderr, "usage: uio_ref /dev/uioN TRIGGER_OFFSET TRIGGER_VALUE ACK_OFFSET ACK_VALUE ROUNDS "
				"PERIOD_US CPU PRIORITY\n");
		return 1;
	}
	unsigned long trig = strtoul(argv[2], NULL, 0), trig_v = strtoul(argv[3], NULL, 0);
	unsigned long ack = strtoul(argv[4], NULL, 0), ack_v = strtoul(argv[5], NULL, 0);
	long rounds = atol(argv[6]), period_ns = atol(argv[7]) * 1000L;
	int cpu = atoi(argv[8]), prio = atoi(argv[9]);
	const char *name = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
	char path[300];
	snprintf(path, sizeof(path), "/sys/class/uio/%s/device/resource0", name);
	int res = open(path, O_RDWR | O_SYNC), dev = open(argv[1], O_RDWR);
	snprintf(path, sizeof(path), "/sys/class/uio/%s/device/config", name);
	int cfg = open(path, O_RDWR);
	struct stat sb;
	int64_t *lat_ns = calloc((size_t)rounds, sizeof(*lat_ns));
	if (rounds < 1 || period_ns < 1000 || !lat_ns || res < 0 || dev < 0 || cfg < 0 || fstat(res, &sb) ||
	    trig + 4 > (unsigned long)sb.st_size || ack + 4 > (unsigned long)sb.st_size) {
		fprintf(stderr, "uio_ref: bad ROUNDS, PERIOD_US or offsets, or the device does not open\n");
		return 1;
	}
	volatile uint32_t *bar = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, res, 0);
	if (bar == MAP_FAILED) {
		perror("uio_ref: mmap");
		return 1;
	}
	int32_t zero = 0;
	int dma = open("/dev/cpu_dma_latency", O_WRONLY);
	if (dma >= 0 && write(dma, &zero, sizeof(zero)) != sizeof(zero))
		close(dma);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	struct sched_param sp = {.sched_priority = prio};
	if (sched_setaffinity(0, sizeof(set), &set) || sched_setscheduler(0, SCHED_FIFO, &sp) ||
	    mlockall(MCL_CURRENT | MCL_FUTURE)) {
		perror("uio_ref: CPU, SCHED_FIFO or mlockall");
		return 1;
	}
	unmask(cfg, dev);
	int64_t deadline = now_ns() + 50000000LL;
	for (long k = -WARMUP; k < rounds; k++, deadline += period_ns) {
		struct timespec ts = {deadline / 1000000000LL, deadline % 1000000000LL};
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		int64_t t0 = now_ns();
		bar[trig / 4] = (uint32_t)trig_v;
		struct pollfd p = {.fd = dev, .events = POLLIN};
		uint32_t count;
		if (poll(&p, 1, TIMEOUT_MS) <= 0 || read(dev, &count, sizeof(count)) != sizeof(count)) {
			fprintf(stderr, "uio_ref: no interrupt within %d ms\n", TIMEOUT_MS);
			bar[ack / 4] = (uint32_t)ack_v;
			unmask(cfg, dev);
			return 1;
		}
		int64_t t1 = now_ns();
		bar[ack / 4] = (uint32_t)ack_v;
		unmask(cfg, dev);
		if (k >= 0)
			lat_ns[k] = t1 - t0;
	}
	qsort(lat_ns, (size_t)rounds, sizeof(*lat_ns), by_value);
	long p50 = (rounds + 1) / 2 - 1, p99 = (rounds * 99 + 99) / 100 - 1;
	printf("{\"rounds\": %ld, \"median_ns\": %" PRId64 ", \"p99_ns\": %" PRId64 ", \"max_ns\": %" PRId64 "}\n",
	       rounds, lat_ns[p50], lat_ns[p99], lat_ns[rounds - 1]);
	return 0;
}
