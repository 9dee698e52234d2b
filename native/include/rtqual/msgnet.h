/* The msg probe's transports and processes (lib/msgnet.c): bare sockets (UDP, TCP, Unix) and
 * ZeroMQ, the forked server (echo) and broker (relay) with their start-up reports, the client's
 * connection, and the scheduling read-back. probes/msg.c measures with them. */
#ifndef RTQUAL_MSGNET_H
#define RTQUAL_MSGNET_H

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "rtqual/lifecycle.h"

#define MAX_EXTRA_THREADS 4
#define MAX_DGRAM 65507
#define GRANT_ZMQ "apt-get install libzmq3-dev and rebuild"

enum transport { TR_ZMQ_TCP, TR_ZMQ_IPC, TR_UDP, TR_TCP, TR_UNIX_STREAM, TR_UNIX_DGRAM };
extern const char *const transport_names[]; /* --transport, NULL-terminated */

enum role { ROLE_CLIENT, ROLE_BROKER, ROLE_SERVER, NROLES };
extern const char *const role_names[];

struct msg_cfg {
	int transport;
	bool chain;
	int64_t size, rate_hz;
	int policy;
	int64_t priority;
	int64_t cpu[NROLES];
	int role_policy[NROLES];
	int64_t role_priority[NROLES];
	int64_t duration_ns, loops, warmup, timeout_ns;
	bool no_dma_latency, allow_degraded;
	struct sink_out out;
};

/* What one thread really got, read back with sched_getscheduler/getparam/getaffinity. */
struct sched_rb {
	int32_t tid, policy, priority, pad;
	cpu_set_t aff;
};

/* One process (or the client thread): what was asked, what it got. */
struct proc_info {
	int32_t pid, cpu_req, policy_req, priority_req;
	bool mlockall, started;
	struct sched_rb self;
	int32_t nthr; /* other threads of that process (zmq I/O, reaper), read back too */
	struct sched_rb thr[MAX_EXTRA_THREADS];
};

/* A child's start-up report (one atomic pipe write). */
struct ready_msg {
	int32_t ok;
	char endpoint[128];
	struct proc_info info;
	char err[256];
};
_Static_assert(sizeof(struct ready_msg) <= PIPE_BUF, "ready message must be one atomic pipe write");

/* The client's connection: a socket or a zmq context + socket. */
struct conn {
	int fd;
	void *zctx, *zsock;
};

/* All state of one msg run. */
struct msg {
	struct run run; /* first: the driver's part */
	struct msg_cfg cfg;
	pid_t parent_pid;
	struct proc_info proc[NROLES];
	char endpoint[NROLES][128]; /* where each role can be reached */
	int64_t period_ns;
	/* client thread */
	pthread_t tid;
	bool thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool client_ready, client_go, stop_requested;
	struct conn conn; /* published under mu for the wake-up */
	bool conn_open;
	char client_err[256];
	int slot_cpu;
	bool slot_from_start;
	_Atomic uint64_t round_trips; /* every completed round trip, warm-up included */
	uint64_t seen_round_trips; /* the main thread's watch */
	char why[160];             /* a child's earlier death, for the client's error */
};

static inline bool is_zmq(int tr) { return tr == TR_ZMQ_TCP || tr == TR_ZMQ_IPC; }
static inline bool is_stream(int tr) { return tr == TR_TCP || tr == TR_UNIX_STREAM; }
static inline bool is_unix(int tr) { return tr == TR_UNIX_STREAM || tr == TR_UNIX_DGRAM; }

/* "fifo", "rr", "other", "batch", "idle" or "unknown" for a sched_getscheduler() value. */
const char *msgnet_sched_name(int p);
/* Policy, priority and affinity of thread `tid` (0: the calling thread). */
void msgnet_sched_readback(pid_t tid, struct sched_rb *r);
/* Read back the other threads of this process except `skip1`, `skip2`. */
void msgnet_readback_other_threads(struct proc_info *pi, pid_t skip1, pid_t skip2);
/* Fork the server or broker and wait for its report (endpoint, read-back); -1 with err. */
int msgnet_start_child(struct msg *m, int role, char *err, size_t errlen);
/* Kill and reap the children; an earlier death described into `why` (if not NULL). */
void msgnet_stop_children(struct msg *m, char *why, size_t whylen);
/* The client's connection to `ep` with send/receive timeouts; -1 with err. */
int msgnet_client_open(struct msg *m, const char *ep, struct conn *c, char *err, size_t errlen);
void msgnet_client_close(struct conn *c);
/* Unblock a client stuck in send/recv (from another thread). */
void msgnet_client_wake(struct conn *c);
/* One round trip: the reply length, -1 with errno (EAGAIN: timeout), 0 on EOF. */
ssize_t msgnet_client_roundtrip(const struct conn *c, int tr, const char *sbuf, char *rbuf, size_t size);

#endif
