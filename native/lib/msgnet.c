/* The msg probe's transports and processes (rtqual/msgnet.h). */
#include "rtqual/msgnet.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef RTQUAL_HAVE_ZMQ
#include <zmq.h>
#endif

#include "rtqual/log.h"

#define READY_TIMEOUT_MS 10000

const char *const transport_names[] = {"zmq-tcp", "zmq-ipc", "udp", "tcp", "unix-stream", "unix-dgram", NULL};
const char *const role_names[] = {"client", "broker", "server"};

/* ---- scheduling read-back ---------------------------------------------- */

const char *msgnet_sched_name(int p)
{
	switch (p & ~SCHED_RESET_ON_FORK) {
	case SCHED_FIFO: return "fifo";
	case SCHED_RR: return "rr";
	case SCHED_OTHER: return "other";
	case SCHED_BATCH: return "batch";
	case SCHED_IDLE: return "idle";
	default: return "unknown";
	}
}

/* Policy, priority and affinity of thread `tid` (0: the calling thread). */
void msgnet_sched_readback(pid_t tid, struct sched_rb *r)
{
	struct sched_param sp = {0};
	memset(r, 0, sizeof(*r));
	r->tid = tid ? tid : gettid();
	r->policy = sched_getscheduler(tid);
	if (sched_getparam(tid, &sp) == 0)
		r->priority = sp.sched_priority;
	if (sched_getaffinity(tid, sizeof(r->aff), &r->aff) != 0)
		CPU_ZERO(&r->aff);
}

/* Read back the other threads of this process except `skip1`, `skip2`:
 * the threads a zmq context started (they must have inherited our setup). */
void msgnet_readback_other_threads(struct proc_info *pi, pid_t skip1, pid_t skip2)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pi->nthr = 0;
	if (!d)
		return;
	while ((e = readdir(d)) && pi->nthr < MAX_EXTRA_THREADS) {
		pid_t t = (pid_t)atoi(e->d_name);
		if (t <= 0 || t == skip1 || t == skip2)
			continue;
		msgnet_sched_readback(t, &pi->thr[pi->nthr++]);
	}
	closedir(d);
}

/* ---- bare sockets -------------------------------------------------------- */

/* "127.0.0.1:PORT" or "@abstract-name" -> sockaddr. */
static int addr_parse(int tr, const char *ep, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (is_unix(tr)) {
		struct sockaddr_un *u = (struct sockaddr_un *)ss;
		size_t n = strlen(ep);
		if (ep[0] != '@' || n >= sizeof(u->sun_path))
			return -1;
		u->sun_family = AF_UNIX;
		memcpy(u->sun_path + 1, ep + 1, n - 1); /* sun_path[0] = 0: abstract */
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
		return 0;
	}
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	const char *colon = strrchr(ep, ':');
	if (!colon)
		return -1;
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)atoi(colon + 1));
	in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*len = sizeof(*in);
	return 0;
}

/* Abstract Unix name of one endpoint of this run: "@rtqual-msg-PID-TAG". */
static void unix_name(const struct msg *m, const char *tag, char *out, size_t len)
{
	snprintf(out, len, "@rtqual-msg-%d-%s", (int)m->parent_pid, tag);
}

static int sock_type(int tr)
{
	return (is_stream(tr) ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC;
}

/* Bound (and for streams listening) socket; its endpoint into ep. */
static int bare_listen(const struct msg *m, const char *tag, char *ep, size_t eplen, char *err, size_t errlen)
{
	int tr = m->cfg.transport;
	struct sockaddr_storage ss;
	socklen_t len = 0;
	char name[108];
	if (is_unix(tr))
		unix_name(m, tag, name, sizeof(name));
	else
		snprintf(name, sizeof(name), "127.0.0.1:0");
	addr_parse(tr, name, &ss, &len);
	int fd = socket(is_unix(tr) ? AF_UNIX : AF_INET, sock_type(tr), 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) != 0 || (is_stream(tr) && listen(fd, 4) != 0)) {
		snprintf(err, errlen, "%s: cannot bind %s: %s", transport_names[tr], name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (is_unix(tr)) {
		snprintf(ep, eplen, "%s", name);
	} else {
		struct sockaddr_in in;
		socklen_t l = sizeof(in);
		getsockname(fd, (struct sockaddr *)&in, &l);
		snprintf(ep, eplen, "127.0.0.1:%u", (unsigned)ntohs(in.sin_port));
	}
	return fd;
}

/* Socket connected to ep; unix-dgram binds to its own name `tag` first
 * (replies need an address). TCP: Nagle off. */
static int bare_connect(const struct msg *m, const char *ep, const char *tag, char *err, size_t errlen)
{
	int tr = m->cfg.transport, one = 1;
	struct sockaddr_storage ss;
	socklen_t len = 0;
	if (addr_parse(tr, ep, &ss, &len) != 0) {
		snprintf(err, errlen, "bad endpoint '%s'", ep);
		return -1;
	}
	int fd = socket(is_unix(tr) ? AF_UNIX : AF_INET, sock_type(tr), 0);
	if (fd < 0)
		goto fail;
	if (tr == TR_UNIX_DGRAM) {
		struct sockaddr_storage me;
		socklen_t mlen = 0;
		char name[108];
		unix_name(m, tag, name, sizeof(name));
		addr_parse(tr, name, &me, &mlen);
		if (bind(fd, (struct sockaddr *)&me, mlen) != 0)
			goto fail;
	}
	if (connect(fd, (struct sockaddr *)&ss, len) != 0)
		goto fail;
	if (tr == TR_TCP)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
fail:
	snprintf(err, errlen, "%s: cannot connect to %s: %s", transport_names[tr], ep, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Exactly n bytes from a stream; 0 on EOF, -1 on error (errno). */
static ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, (char *)buf + got, n - got, 0);
		if (r == 0)
			return 0;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return (ssize_t)n;
}

static int send_full(int fd, const void *buf, size_t n)
{
	size_t put = 0;
	while (put < n) {
		ssize_t r = send(fd, (const char *)buf + put, n - put, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		put += (size_t)r;
	}
	return 0;
}

static int accept_one(int lfd, int tr)
{
	int one = 1, fd;
	while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (fd >= 0 && tr == TR_TCP)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ---- children: server (echo) and broker (relay) --------------------------- */

/* Send the start-up report to the parent. */
static void child_report(int fd, struct ready_msg *rm)
{
	if (write(fd, rm, sizeof(*rm)) != (ssize_t)sizeof(*rm)) {
		/* the parent sees EOF or a short read and reports it */
	}
	close(fd);
}

/* Fill the read-back part of a report for this (single-threaded or zmq) process. */
static void child_readback(struct ready_msg *rm)
{
	msgnet_sched_readback(0, &rm->info.self);
	msgnet_readback_other_threads(&rm->info, getpid(), 0);
}

/* Bare echo server / relay: set up, report, then serve until killed or the
 * peer goes away. Never returns. */
static _Noreturn void child_bare(struct msg *m, int role, int ready_fd, struct ready_msg *rm, char *buf)
{
	int tr = m->cfg.transport;
	size_t size = (size_t)m->cfg.size;
	int lfd = bare_listen(m, role_names[role], rm->endpoint, sizeof(rm->endpoint), rm->err, sizeof(rm->err));
	int back = -1;
	if (lfd >= 0 && role == ROLE_BROKER)
		back = bare_connect(m, m->endpoint[ROLE_SERVER], "broker-back", rm->err, sizeof(rm->err));
	rm->ok = lfd >= 0 && (role != ROLE_BROKER || back >= 0);
	child_readback(rm);
	child_report(ready_fd, rm);
	if (!rm->ok)
		_exit(1);
	if (is_stream(tr)) {
		int fd = accept_one(lfd, tr);
		if (fd < 0)
			_exit(1);
		for (;;) {
			if (read_full(fd, buf, size) <= 0)
				_exit(0);
			if (back >= 0 && (send_full(back, buf, size) || read_full(back, buf, size) <= 0))
				_exit(1);
			if (send_full(fd, buf, size))
				_exit(0);
		}
	}
	for (;;) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(lfd, buf, size + 1, 0, (struct sockaddr *)&from, &flen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (back >= 0) {
			if (send(back, buf, (size_t)n, MSG_NOSIGNAL) < 0)
				_exit(1);
			while ((n = recv(back, buf, size + 1, 0)) < 0 && errno == EINTR)
				;
			if (n < 0)
				_exit(1);
		}
		sendto(lfd, buf, (size_t)n, MSG_NOSIGNAL, (struct sockaddr *)&from, flen);
	}
}

#ifdef RTQUAL_HAVE_ZMQ
static void zmq_linger0(void *s)
{
	int zero = 0;
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
}

/* zmq bind address of a role: loopback tcp with a free port, or an abstract ipc name. */
static void zmq_bind_addr(const struct msg *m, int role, char *out, size_t len)
{
	if (m->cfg.transport == TR_ZMQ_TCP)
		snprintf(out, len, "tcp://127.0.0.1:*");
	else
		snprintf(out, len, "ipc://@rtqual-msg-%d-%s", (int)m->parent_pid, role_names[role]);
}

/* zmq REP echo server or ROUTER/DEALER proxy broker. The context is created
 * here, after the scheduling setup, so its threads inherit it. Never returns. */
static _Noreturn void child_zmq(struct msg *m, int role, int ready_fd, struct ready_msg *rm, char *buf)
{
	size_t size = (size_t)m->cfg.size, eplen = sizeof(rm->endpoint);
	char addr[128];
	void *ctx = zmq_ctx_new();
	void *front = ctx ? zmq_socket(ctx, role == ROLE_SERVER ? ZMQ_REP : ZMQ_ROUTER) : NULL;
	void *back = NULL;
	zmq_bind_addr(m, role, addr, sizeof(addr));
	rm->ok = 0;
	if (!front) {
		snprintf(rm->err, sizeof(rm->err), "zmq: cannot create a socket: %s", zmq_strerror(zmq_errno()));
	} else {
		zmq_linger0(front);
		if (zmq_bind(front, addr) != 0 || zmq_getsockopt(front, ZMQ_LAST_ENDPOINT, rm->endpoint, &eplen) != 0)
			snprintf(rm->err, sizeof(rm->err), "zmq: cannot bind %s: %s", addr, zmq_strerror(zmq_errno()));
		else if (role == ROLE_BROKER && (!(back = zmq_socket(ctx, ZMQ_DEALER)) ||
						 (zmq_linger0(back), zmq_connect(back, m->endpoint[ROLE_SERVER])) != 0))
			snprintf(rm->err, sizeof(rm->err), "zmq: broker cannot connect to %s: %s",
				 m->endpoint[ROLE_SERVER], zmq_strerror(zmq_errno()));
		else
			rm->ok = 1;
	}
	child_readback(rm);
	child_report(ready_fd, rm);
	if (!rm->ok)
		_exit(1);
	if (role == ROLE_BROKER) {
		zmq_proxy(front, back, NULL); /* returns only when the context ends */
		_exit(0);
	}
	for (;;) {
		int n = zmq_recv(front, buf, size + 1, 0);
		if (n < 0) {
			if (zmq_errno() == EINTR)
				continue;
			_exit(1);
		}
		if (zmq_send(front, buf, (size_t)n < size + 1 ? (size_t)n : size + 1, 0) < 0 && zmq_errno() != EINTR)
			_exit(1);
	}
}
#endif

/* Child process body: die with the parent, keep off the JSON stream, set
 * affinity/policy/mlock, then serve. Never returns. */
static _Noreturn void child_main(struct msg *m, int role, int ready_fd)
{
	struct ready_msg rm;
	memset(&rm, 0, sizeof(rm));
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != m->parent_pid)
		_exit(1); /* the parent died before prctl */
	signal(SIGINT, SIG_IGN); /* a terminal's ^C: the parent decides, then kills us */
	signal(SIGTERM, SIG_DFL);
	signal(SIGALRM, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0 && m->cfg.out.json_fd != 2)
		dup2(null, (int)m->cfg.out.json_fd);
	if (m->run.sink.raw_fd >= 0)
		close(m->run.sink.raw_fd);

	struct proc_info *pi = &rm.info;
	*pi = m->proc[role];
	pi->pid = getpid();
	pi->started = true;
	if (rt_self_sched(pi->cpu_req, pi->policy_req, pi->priority_req, rm.err, sizeof(rm.err)) != 0) {
		child_readback(&rm);
		child_report(ready_fd, &rm);
		_exit(1);
	}
	pi->mlockall = m->run.rt.mlockall && mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
	char *buf = malloc((size_t)m->cfg.size + 1);
	if (!buf) {
		snprintf(rm.err, sizeof(rm.err), "out of memory");
		child_report(ready_fd, &rm);
		_exit(1);
	}
	memset(buf, 0, (size_t)m->cfg.size + 1);
#ifdef RTQUAL_HAVE_ZMQ
	if (is_zmq(m->cfg.transport))
		child_zmq(m, role, ready_fd, &rm, buf);
#endif
	child_bare(m, role, ready_fd, &rm, buf);
}

/* Fork one child and wait for its report (endpoint, read-back). */
int msgnet_start_child(struct msg *m, int role, char *err, size_t errlen)
{
	int p[2];
	struct ready_msg rm;
	if (pipe2(p, O_CLOEXEC) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot fork the %s: %s", role_names[role], strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		child_main(m, role, p[1]);
	}
	close(p[1]);
	m->proc[role].pid = pid;
	m->proc[role].started = true;
	struct pollfd pfd = {.fd = p[0], .events = POLLIN};
	int r;
	while ((r = poll(&pfd, 1, READY_TIMEOUT_MS)) < 0 && errno == EINTR)
		;
	ssize_t n = r > 0 ? read(p[0], &rm, sizeof(rm)) : -1;
	close(p[0]);
	if (r == 0) {
		snprintf(err, errlen, "the %s (pid %d) did not start within %d ms", role_names[role], (int)pid,
			 READY_TIMEOUT_MS);
		return -1;
	}
	if (n != (ssize_t)sizeof(rm)) {
		snprintf(err, errlen, "the %s (pid %d) exited during start-up", role_names[role], (int)pid);
		return -1;
	}
	if (!rm.ok) {
		snprintf(err, errlen, "%s: %s", role_names[role], rm.err);
		return -1;
	}
	rm.info.pid = pid;
	m->proc[role] = rm.info;
	snprintf(m->endpoint[role], sizeof(m->endpoint[role]), "%s", rm.endpoint);
	return 0;
}

/* Kill and reap the children (server, broker); describe an earlier death
 * into `why` (if not NULL) so a client error can say what happened. */
void msgnet_stop_children(struct msg *m, char *why, size_t whylen)
{
	for (int r = ROLE_BROKER; r < NROLES; r++) {
		struct proc_info *pi = &m->proc[r];
		int st;
		if (!pi->started || pi->pid <= 0)
			continue;
		pid_t w = waitpid(pi->pid, &st, WNOHANG);
		if (w == pi->pid) {
			if (why && !why[0])
				snprintf(why, whylen, "; the %s (pid %d) had %s %d", role_names[r], (int)pi->pid,
					 WIFSIGNALED(st) ? "died of signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		} else {
			kill(pi->pid, SIGKILL);
			while (waitpid(pi->pid, &st, 0) < 0 && errno == EINTR)
				;
		}
		pi->started = false;
	}
}

/* ---- client ----------------------------------------------------------------- */

/* Open the client's connection to `ep` with send/receive timeouts. */
int msgnet_client_open(struct msg *m, const char *ep, struct conn *c, char *err, size_t errlen)
{
	c->fd = -1;
	c->zctx = c->zsock = NULL;
#ifdef RTQUAL_HAVE_ZMQ
	if (is_zmq(m->cfg.transport)) {
		int ms = (int)((m->cfg.timeout_ns + NS_PER_MS - 1) / NS_PER_MS);
		if (!(c->zctx = zmq_ctx_new()) || !(c->zsock = zmq_socket(c->zctx, ZMQ_REQ))) {
			snprintf(err, errlen, "zmq: cannot create the client socket: %s", zmq_strerror(zmq_errno()));
			return -1;
		}
		zmq_linger0(c->zsock);
		zmq_setsockopt(c->zsock, ZMQ_RCVTIMEO, &ms, sizeof(ms));
		zmq_setsockopt(c->zsock, ZMQ_SNDTIMEO, &ms, sizeof(ms));
		if (zmq_connect(c->zsock, ep) != 0) {
			snprintf(err, errlen, "zmq: cannot connect to %s: %s", ep, zmq_strerror(zmq_errno()));
			return -1;
		}
		return 0;
	}
#endif
	c->fd = bare_connect(m, ep, "client", err, errlen);
	if (c->fd < 0)
		return -1;
	struct timeval tv = {.tv_sec = m->cfg.timeout_ns / NS_PER_S, .tv_usec = (m->cfg.timeout_ns % NS_PER_S) / 1000};
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return 0;
}

void msgnet_client_close(struct conn *c)
{
#ifdef RTQUAL_HAVE_ZMQ
	if (c->zsock)
		zmq_close(c->zsock);
	if (c->zctx)
		zmq_ctx_term(c->zctx);
#endif
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->zctx = c->zsock = NULL;
}

/* Unblock a client stuck in send/recv (another thread): shutdown the socket
 * or the zmq context; the blocked call returns an error. */
void msgnet_client_wake(struct conn *c)
{
#ifdef RTQUAL_HAVE_ZMQ
	if (c->zctx)
		zmq_ctx_shutdown(c->zctx);
#endif
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
}

/* One round trip: send `size` bytes, receive the reply into rbuf. Returns
 * the reply length, -1 with errno on failure (EAGAIN: timeout), 0 on EOF. */
ssize_t msgnet_client_roundtrip(const struct conn *c, int tr, const char *sbuf, char *rbuf, size_t size)
{
#ifdef RTQUAL_HAVE_ZMQ
	if (is_zmq(tr)) {
		if (zmq_send(c->zsock, sbuf, size, 0) < 0) {
			errno = zmq_errno();
			return -1;
		}
		int n = zmq_recv(c->zsock, rbuf, size + 1, 0);
		if (n < 0)
			errno = zmq_errno();
		return n;
	}
#endif
	if (is_stream(tr)) {
		if (send_full(c->fd, sbuf, size))
			return -1;
		return read_full(c->fd, rbuf, size);
	}
	if (send(c->fd, sbuf, size, MSG_NOSIGNAL) < 0)
		return -1;
	ssize_t n;
	while ((n = recv(c->fd, rbuf, size + 1, 0)) < 0 && errno == EINTR)
		;
	return n;
}

