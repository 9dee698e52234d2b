/* The UIO source's parsing (rtqual/uio.h): register writes, /proc/interrupts lines, trace_pipe lines and the
 * points of one interrupt taken from them in timeline order; the stages of a sample (rtqual/uiostage.h). */
#include "check.h"
#include "rtqual/uio.h"
#include "rtqual/uiostage.h"

static const char INTERRUPTS[] = "           CPU0       CPU1       \n"
				 "  0:         44          0   IO-APIC   2-edge      timer\n"
				 " 21:         50          3   IO-APIC  21-fasteoi   uio_pci_generic\n"
				 " 24:          1          0   IO-APIC   5-edge      ACPI:Ged, uio_shared\n"
				 "NMI:          0          0   Non-maskable interrupts\n";

static void check_reg(const char *s, int bar, uint64_t off, uint32_t val)
{
	struct uio_reg r;
	char err[256] = "";
	CHECK(uio_parse_reg(s, &r, err, sizeof(err)) == 0);
	CHECK(r.bar == bar && r.offset == off && r.value == val);
}

static void check_bad_reg(const char *s, const char *want)
{
	struct uio_reg r;
	char err[256] = "";
	CHECK(uio_parse_reg(s, &r, err, sizeof(err)) == -1);
	CHECK(strstr(err, want) != NULL);
}

int main(void)
{
	check_reg("0:0x60=1", 0, 0x60, 1);
	check_reg("2:96=0xffffffff", 2, 96, 0xffffffffu);
	check_bad_reg("6:0x60=1", "BAR 0-5");
	check_bad_reg("0x60=1", "BAR:OFFSET=VALUE");
	check_bad_reg("0:0x61=1", "multiple of 4");
	check_bad_reg("0:-4=1", "multiple of 4");
	check_bad_reg("0:0x60", "multiple of 4");
	check_bad_reg("0:0x60=0x100000000", "32-bit");
	check_bad_reg("0:0x60=1x", "32-bit");

	CHECK(irq_listed(INTERRUPTS, 21) && irq_listed(INTERRUPTS, 0) && !irq_listed(INTERRUPTS, 2));
	CHECK(!irq_listed(INTERRUPTS, 44)); /* a count is not an IRQ number */
	CHECK(irq_named(INTERRUPTS, "uio_pci_generic") == 21);
	CHECK(irq_named(INTERRUPTS, "uio_shared") == 24); /* a shared line lists its handlers with commas */
	CHECK(irq_named(INTERRUPTS, "pci_generic") == -1 && irq_named(INTERRUPTS, "uio") == -1);

	/* the trace of one interrupt on a threaded kernel: IRQ 21, its thread 120, the reader 300 */
	struct irqtrace t = {.pipe_fd = -1, .irq = 21, .irq_thread = 120, .reader = 300};
	CHECK(!irqtrace_line(&t, "  <idle>-0 [001] d.h1. 99.000001: irq_handler_entry: irq=24 name=ACPI:Ged"));
	CHECK(irqtrace_line(&t, "  <idle>-0 [001] d.h1. 100.000010: irq_handler_entry: irq=21 name=uio_pci_generic"));
	CHECK(irqtrace_line(&t, "  <idle>-0 [001] dNh4. 100.000012: sched_wakeup: comm=irq/21-uio_pci_g pid=120 "
				"prio=49 target_cpu=001"));
	CHECK(irqtrace_line(&t, "  <idle>-0 [001] d..2. 100.000020: sched_switch: prev_comm=swapper/1 prev_pid=0 "
				"prev_prio=120 prev_state=R ==> next_comm=irq/21-uio_pci_g next_pid=120 next_prio=49"));
	CHECK(irqtrace_line(&t, " irq/21-uio-120 [001] d..5. 100.000031: sched_wakeup: comm=a b: c pid=300 prio=19 "
				"target_cpu=000"));
	CHECK(irqtrace_line(&t, "  <idle>-0 [000] d..2. 100.000040: sched_switch: prev_comm=swapper/0 prev_pid=0 "
				"prev_prio=120 prev_state=R ==> next_comm=rtqual-probe next_pid=300 next_prio=19"));
	/* the next interrupt's entry, after the read returned: kept for it */
	CHECK(irqtrace_line(&t, "  <idle>-0 [001] d.h1. 100.001000: irq_handler_entry: irq=21 name=uio_pci_generic"));
	int64_t p[IRQ_POINTS];
	CHECK(irqtrace_event(&t, 100000009500, 100000045000, p) == IRQ_POINTS); /* t0 9.5 us: the entry at 10 us is after it */
	CHECK(p[IRQ_ENTRY] == 100000010000 && p[IRQ_THREAD_WOKEN] == 100000012000);
	CHECK(p[IRQ_THREAD_RUNNING] == 100000020000 && p[READER_WOKEN] == 100000031000);
	CHECK(p[READER_RUNNING] == 100000040000);
	CHECK(t.n == 1 && t.ev[0].point == IRQ_ENTRY);
	CHECK(irqtrace_event(&t, 100000045000, 100001100000, p) == IRQ_THREAD_WOKEN); /* an entry alone */
	CHECK(p[IRQ_ENTRY] == 100001000000 && p[READER_RUNNING] == -1 && t.n == 0);

	/* no IRQ thread (the handler in the hard interrupt): the reader's points follow the entry */
	struct irqtrace h = {.pipe_fd = -1, .irq = 21, .reader = 300};
	CHECK(irqtrace_line(&h, "  <idle>-0 [001] d.h1. 5.000010: irq_handler_entry: irq=21 name=uio_pci_generic"));
	CHECK(irqtrace_line(&h, "  <idle>-0 [001] d.h1. 5.000011: sched_wakeup: comm=rtqual-probe pid=300 prio=19 "
				"target_cpu=001"));
	CHECK(irqtrace_line(&h, "  <idle>-0 [001] d..2. 5.000015: sched_switch: prev_comm=swapper/1 prev_pid=0 "
				"prev_prio=120 prev_state=R ==> next_comm=rtqual-probe next_pid=300 next_prio=19"));
	CHECK(irqtrace_event(&h, 5000000000, 5000020000, p) == IRQ_POINTS);
	CHECK(p[IRQ_THREAD_WOKEN] == -1 && p[IRQ_THREAD_RUNNING] == -1 && p[READER_RUNNING] == 5000015000);

	/* the stages of one sample sum to its total: a point in whole microseconds before t0 or after t1 is clamped */
	struct uio_stages st = {.active = true, .threshold_ns = 1000, .ith = {.pid = 120}};
	CHECK(uio_stages_open(&st, 21, false) == 0 && st.tr == NULL && strstr(st.trace_note, "--stages off"));
	int64_t q[IRQ_POINTS] = {9000, 12000, 20000, 31000, 40000}; /* the entry's microsecond before t0 = 9500 */
	uio_stages_record(&st, q, 9500, 38500);                      /* the reader's switch after t1 */
	CHECK(st.staged == 1 && st.staged_total_ns == 29000 && st.staged_sum_ns == 29000);
	CHECK(st.stage[ST_HARDIRQ]->count == 1 && st.stage[ST_HARDIRQ]->max_ns == 0);
	CHECK(st.stage[ST_READ_RETURNED]->max_ns == 0 && st.stage_over[ST_READER_WOKEN] == 1);
	st.ith.pid = 0; /* no IRQ thread: its two stages are not recorded, the sum still holds */
	int64_t r[IRQ_POINTS] = {10000, -1, -1, 11000, 15000};
	uio_stages_record(&st, r, 9500, 16000);
	CHECK(st.staged == 2 && st.staged_sum_ns == st.staged_total_ns && st.stage[ST_IRQ_THREAD_WOKEN]->count == 1);
	uio_stages_close(&st);
	CHECK_DONE();
}
