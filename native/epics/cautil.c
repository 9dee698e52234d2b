/* Channel Access helpers shared by rtqual-ca's commands (see cautil.h). */
#include "cautil.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <epicsThread.h>

#include "rtqual/timens.h"

#define REPEATER_WAIT_NS (10 * NS_PER_S) /* its thread binds the port; under an emulator with a load beside, seconds */

/* libca's repeater loop (exported by libca, not declared in its headers). */
void caRepeaterThread(void *unused);

/* EPICS_CA_REPEATER_PORT, or the CA default 5065. */
unsigned cau_repeater_port(void)
{
	const char *s = getenv("EPICS_CA_REPEATER_PORT");
	long p = s ? strtol(s, NULL, 10) : 0;
	return p > 0 && p < 65536 ? (unsigned)p : 5065u;
}

/* true if a UDP socket is bound to `port` on any address (as the repeater binds). */
bool cau_port_busy(unsigned port)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_ANY)};
	if (s < 0)
		return false;
	bool busy = bind(s, (struct sockaddr *)&a, sizeof(a)) != 0;
	close(s);
	return busy;
}

/* Run libca's repeater in a thread of this process and wait until it holds
 * its port. 0, or -1 if the port did not become busy. */
int cau_repeater_start(void)
{
	unsigned port = cau_repeater_port();
	if (!epicsThreadCreate("CAC-repeater", epicsThreadPriorityLow,
			       epicsThreadGetStackSize(epicsThreadStackMedium), caRepeaterThread, NULL))
		return -1;
	for (int64_t end = mono_now_ns() + REPEATER_WAIT_NS; mono_now_ns() < end;) {
		if (cau_port_busy(port))
			return 0;
		sleep_until_ns(mono_now_ns() + 10 * NS_PER_MS);
	}
	return -1;
}

/* The preemptive-callback CA context of the calling thread. With
 * own_repeater, a repeater runs in-process if none holds the port (else libca
 * would try to spawn a caRepeater executable that epicscorelibs lacks). */
int cau_context(bool own_repeater, char *err, size_t len)
{
	if (own_repeater && !cau_port_busy(cau_repeater_port()))
		cau_repeater_start(); /* best effort: only beacons need it */
	int st = ca_context_create(ca_enable_preemptive_callback);
	if (st != ECA_NORMAL) {
		snprintf(err, len, "cannot create a CA client context: %s", ca_message(st));
		return -1;
	}
	return 0;
}

/* "EPICS_CA_ADDR_LIST=... EPICS_CA_AUTO_ADDR_LIST=..." for messages. */
const char *cau_addr_list(char *buf, size_t len)
{
	const char *l = getenv("EPICS_CA_ADDR_LIST"), *a = getenv("EPICS_CA_AUTO_ADDR_LIST");
	const char *p = getenv("EPICS_CA_SERVER_PORT");
	snprintf(buf, len, "EPICS_CA_ADDR_LIST=%s, EPICS_CA_AUTO_ADDR_LIST=%s, EPICS_CA_SERVER_PORT=%s",
		 l ? l : "(unset)", a ? a : "(unset: YES)", p ? p : "(unset: 5064)");
	return buf;
}

/* Create n channels and wait up to timeout_s for all to connect. 0, or -1
 * with err naming the first PV that did not connect and how many did not. */
int cau_connect(chid *ch, int n, char *const *names, double timeout_s, char *err, size_t len)
{
	for (int i = 0; i < n; i++) {
		int st = ca_create_channel(names[i], NULL, NULL, CA_PRIORITY_DEFAULT, &ch[i]);
		if (st != ECA_NORMAL) {
			snprintf(err, len, "PV '%s': %s", names[i], ca_message(st));
			return -1;
		}
	}
	int st = ca_pend_io(timeout_s);
	if (st == ECA_NORMAL)
		return 0;
	int missing = 0, first = -1;
	for (int i = 0; i < n; i++)
		if (ca_state(ch[i]) != cs_conn && missing++ == 0)
			first = i;
	if (!missing) {
		snprintf(err, len, "connecting %d channels: %s", n, ca_message(st));
		return -1;
	}
	char al[256];
	if (missing == 1)
		snprintf(err, len, "PV '%s' did not connect within %g s (%s)", names[first], timeout_s,
			 cau_addr_list(al, sizeof(al)));
	else
		snprintf(err, len, "PV '%s' and %d more of %d did not connect within %g s (%s)", names[first],
			 missing - 1, n, timeout_s, cau_addr_list(al, sizeof(al)));
	return -1;
}
