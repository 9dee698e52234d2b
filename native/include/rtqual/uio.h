/* A Linux UIO device (uio_pci_generic, uio_pdrv_genirq, ...): finding it in sysfs, its interrupt
 * (number, the IRQ thread that serves it on a threaded kernel), its PCI BARs mapped from sysfs
 * `resourceN`, the UIO way of waiting for and unmasking the interrupt, and a register write
 * "BAR:OFFSET=VALUE" (the trigger and acknowledge of the event probe's uio source).
 * RTQUAL_SYSFS (tests) replaces /sys, RTQUAL_PROC replaces /proc. */
#ifndef RTQUAL_UIO_H
#define RTQUAL_UIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UIO_BARS 6

/* One 32-bit register write: BAR:OFFSET=VALUE (numbers in C notation: 0x60, 96). */
struct uio_reg {
	int bar;
	uint64_t offset;
	uint32_t value;
};

struct uio_dev {
	char path[256];  /* the device as given (/dev/uioN) */
	char sys[512];   /* its sysfs folder, SYSFS/class/uio/uioN */
	char name[64];   /* the driver's name for it (sysfs name) */
	int fd;          /* -1: not open */
	int irq;         /* -1: none found */
	int cfg_fd;      /* the PCI config space (-1: not a PCI device, or not writable) */
	void *bar[UIO_BARS];
	size_t bar_len[UIO_BARS];
};

/* The IRQ thread serving an interrupt (irq/N-NAME), as ps shows it; pid 0 when there is none. */
struct irq_thread {
	pid_t pid;
	char comm[64];
	int policy, priority, cpu;
};

/* "BAR:OFFSET=VALUE" into *r; 0, or -1 with err (one line). */
int uio_parse_reg(const char *s, struct uio_reg *r, char *err, size_t len);
/* Whether the /proc/interrupts text has a line for irq. */
bool irq_listed(const char *interrupts, int irq);
/* The IRQ whose /proc/interrupts line names `name` as its last word, or -1. */
int irq_named(const char *interrupts, const char *name);

/* Find the UIO device at path (a character device with SYSFS/class/uio/uioN whose dev matches): its sysfs
 * folder and name, nothing opened. 0; 1 with err (not a UIO device), 3 (not permitted). */
int uio_find(struct uio_dev *d, const char *path, char *err, size_t len);
/* Find the UIO device at path (a character device with SYSFS/class/uio/uioN whose dev matches) and
 * its interrupt (`irq` >= 0: that one, which must exist in /proc/interrupts). Returns 0; 1 with err
 * for bad input (not a UIO device, no interrupt, the IRQ does not exist); 3 when not permitted. */
int uio_open(struct uio_dev *d, const char *path, int irq, char *err, size_t len);
/* Map BAR `bar` (SYSFS/.../device/resourceN) read-write; 0, or 1 with err (no such BAR), 3 (permission). */
int uio_map_bar(struct uio_dev *d, int bar, char *err, size_t len);
/* Check that r lies inside its BAR (mapping it); 0 or 1 with err. */
int uio_check_reg(struct uio_dev *d, const struct uio_reg *r, const char *opt, char *err, size_t len);
/* One 32-bit write of r (its BAR mapped by uio_check_reg). */
void uio_write_reg(const struct uio_dev *d, const struct uio_reg *r);
/* The interrupt enabled: the PCI command register's interrupt-disable bit cleared (PCI only), then
 * 1 written to the device (uio's irqcontrol; ENOSYS, no irqcontrol, is fine). 0, or -1 with errno. */
int uio_unmask(struct uio_dev *d);
/* Wait at most timeout_ns for the interrupt; read its 4-byte event count into *count. 1: came, 0:
 * timed out, -1: error (errno). */
int uio_wait(struct uio_dev *d, int64_t timeout_ns, uint32_t *count);
/* The event count the kernel holds (SYSFS/.../event); -1 when unreadable. */
int64_t uio_event_count(const struct uio_dev *d);
/* The IRQ thread of irq (irq/IRQ-*; on a shared line the one named after handler `name`), with its
 * policy, priority and last CPU. */
void irq_thread_find(int irq, const char *name, struct irq_thread *t);
/* The reader of the UIO device at path in another process: a thread whose name starts with comm_prefix
 * (e.g. the IOC's "rtqIn0") in the first other process holding the device open; 0 when none. */
pid_t uio_reader_find(const char *path, const char *comm_prefix);
/* Unmap, close. */
void uio_close(struct uio_dev *d);

/* The kernel's own times of one interrupt's way to a reader, from rtqual's tracefs instance
 * (instances/rtqual-PID-uio, trace clock mono): irq_handler_entry of the IRQ, sched_wakeup and
 * sched_switch of its IRQ thread (none on a kernel that runs the handler in the hard interrupt)
 * and of the reader. The trace's times are whole microseconds. */
enum irqtrace_point { IRQ_ENTRY, IRQ_THREAD_WOKEN, IRQ_THREAD_RUNNING, READER_WOKEN, READER_RUNNING, IRQ_POINTS };
#define IRQTRACE_PENDING 256

struct irqtrace {
	char dir[256]; /* the instance */
	int pipe_fd;
	int irq;
	pid_t irq_thread, reader;
	struct irqtrace_ev {
		int64_t ns;
		int point;
	} ev[IRQTRACE_PENDING]; /* parsed, not yet used, in time order */
	int n;
	uint64_t dropped; /* pending events pushed out by newer ones */
	char part[512];   /* a line read in part */
	size_t part_len;
};

/* The mounted tracefs with instances (SYSFS/kernel/tracing or the debugfs one), or NULL. */
const char *irqtrace_root(void);
/* The instance made and its events on; 0, or -1 with err (no tracefs, no permission: the reason). */
int irqtrace_open(struct irqtrace *t, int irq, pid_t irq_thread, char *err, size_t len);
/* The reader's events on (called by the reader itself); 0 or -1 with errno. */
int irqtrace_reader(struct irqtrace *t, pid_t reader);
/* One line of trace_pipe text into the pending events (tests); true when it was one of ours. */
bool irqtrace_line(struct irqtrace *t, const char *line);
/* The points of the interrupt the reader saw at to_ns, the first IRQ entry at or after from_ns and each
 * point after the one before (p[READER_RUNNING] <= to_ns); the events up to to_ns are used up. Returns
 * the first point not found, IRQ_POINTS when every one was (without an IRQ thread its two are -1). */
int irqtrace_event(struct irqtrace *t, int64_t from_ns, int64_t to_ns, int64_t p[IRQ_POINTS]);
/* The instance removed. */
void irqtrace_close(struct irqtrace *t);

#endif
