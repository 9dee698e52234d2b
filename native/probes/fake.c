/* fake probe: replays a script through the same sink (histogram, events,
 * progress, raw, hist/summary/end) as the real probes, so the Python
 * pipeline can be tested without root. Script format: protocol.md. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rtqual/cpulist.h"
#include "rtqual/lifecycle.h"
#include "rtqual/log.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

struct fake_cfg {
	const char *script;
	struct sink_out out; /* no --progress-ms: the script says when */
};

enum fake_op { OP_SAMPLE, OP_PROGRESS, OP_SLEEP, OP_WARN, OP_CRASH, OP_EXIT, OP_REPEAT, OP_END };

struct fake_cmd {
	enum fake_op op;
	int cpu;       /* OP_SAMPLE */
	int64_t value; /* latency ns, sleep ms, exit code, repeat count; OP_END: its repeat's index */
	uint64_t skipped;
	char *text; /* OP_WARN */
};

/* All state of one fake run. */
struct fake {
	struct run run; /* first: the driver's part */
	struct fake_cfg cfg;
	struct fake_cmd *cmds;
	int ncmds;
	struct cpulist cpus;  /* CPUs seen in the script */
	int slot[CPULIST_MAX]; /* CPU -> index in sink.cs */
	int exit_code;         /* an "exit N" line ran (exit_at > 0) */
	bool exited;
};

#define F(x) offsetof(struct fake, cfg.x)
static const struct opt_def fake_opts[] = {
	{"script", OPT_PATH, F(script), 0, 0, NULL, NULL, "script to replay (required)"},
	RUN_OPT_THRESHOLD(F, "100us", "samples above it emit event records"),
	{"json-fd", OPT_INT, F(out.json_fd), 1, 65535, "1", NULL, "fd for JSON Lines"},
	{"raw", OPT_PATH, F(out.raw), 0, 0, NULL, NULL, "keep every sample in FILE (protocol.md raw format)"},
	/* beyond protocol.md's fake list, same meaning as for timer */
	{"raw-max-bytes", OPT_INT, F(out.raw_max_bytes), 4096, 1LL << 40, "268435456", NULL,
	 "cap of the raw file; capture stops (flagged) at the cap"},
	{"max-events", OPT_INT, F(out.max_events), 0, 1000000, "100", NULL,
	 "threshold events per second; the rest counted as suppressed"},
	{"hist-delta", OPT_FLAG, F(out.hist_delta), 0, 0, NULL, NULL,
	 "after each progress record, one hist_delta record per CPU: the buckets filled since the last"},
};
#undef F
#define FAKE_NOPTS ((int)(sizeof(fake_opts) / sizeof(fake_opts[0])))

/* Strict integer within [lo, hi]. */
static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* Parse one script line into cmd; 0 ok, 1 blank/comment, -1 error. */
static int parse_line(char *line, struct fake_cmd *cmd, char *err, size_t errlen)
{
	char *p = line + strspn(line, " \t");
	p[strcspn(p, "\r\n")] = '\0';
	if (*p == '\0' || *p == '#')
		return 1;
	char *word = p;
	size_t wl = strcspn(p, " \t");
	char *rest = p + wl;
	if (*rest)
		*rest++ = '\0';
	rest += strspn(rest, " \t");
	char *argv[4] = {0};
	int argc = 0;
	memset(cmd, 0, sizeof(*cmd));

	if (strcmp(word, "warn") == 0) {
		cmd->op = OP_WARN;
		cmd->text = strdup(rest);
		return cmd->text ? 0 : -1;
	}
	for (char *tok = strtok(rest, " \t"); tok && argc < 4; tok = strtok(NULL, " \t"))
		argv[argc++] = tok;
	int64_t v;
	if (strcmp(word, "sample") == 0) {
		cmd->op = OP_SAMPLE;
		if (argc < 2 || argc > 3) {
			snprintf(err, errlen, "usage: sample CPU LATENCY_NS [SKIPPED]");
			return -1;
		}
		if (parse_i64(argv[0], 0, CPULIST_MAX - 1, &v)) {
			snprintf(err, errlen, "CPU '%s' is not in 0..%d", argv[0], CPULIST_MAX - 1);
			return -1;
		}
		cmd->cpu = (int)v;
		if (parse_i64(argv[1], INT64_MIN, INT64_MAX, &cmd->value)) {
			snprintf(err, errlen, "latency '%s' is not an integer (ns)", argv[1]);
			return -1;
		}
		if (argc == 3) {
			if (parse_i64(argv[2], 0, INT64_MAX, &v)) {
				snprintf(err, errlen, "skipped '%s' is not a non-negative integer", argv[2]);
				return -1;
			}
			cmd->skipped = (uint64_t)v;
		}
		return 0;
	}
	if (strcmp(word, "progress") == 0 || strcmp(word, "crash") == 0) {
		cmd->op = word[0] == 'p' ? OP_PROGRESS : OP_CRASH;
		if (argc) {
			snprintf(err, errlen, "%s takes no argument", word);
			return -1;
		}
		return 0;
	}
	if (strcmp(word, "repeat") == 0) {
		cmd->op = OP_REPEAT;
		if (argc != 1 || parse_i64(argv[0], 1, 1000000000, &cmd->value)) {
			snprintf(err, errlen, "usage: repeat N (1..1000000000), lines, end");
			return -1;
		}
		return 0;
	}
	if (strcmp(word, "end") == 0) {
		cmd->op = OP_END;
		if (argc) {
			snprintf(err, errlen, "end takes no argument");
			return -1;
		}
		return 0;
	}
	if (strcmp(word, "sleep") == 0 || strcmp(word, "exit") == 0) {
		bool sl = word[0] == 's';
		cmd->op = sl ? OP_SLEEP : OP_EXIT;
		if (argc != 1 || parse_i64(argv[0], 0, sl ? 86400000 : 255, &cmd->value)) {
			snprintf(err, errlen, sl ? "usage: sleep MS (0..86400000)" : "usage: exit CODE (0..255)");
			return -1;
		}
		return 0;
	}
	snprintf(err, errlen, "unknown command '%s' (sample, progress, sleep, warn, crash, exit, repeat, end)",
		 word);
	return -1;
}

/* Read the whole script first: errors are reported before any output, and
 * the header can list the CPUs. */
static int fake_load(struct fake *f, char *err, size_t errlen)
{
	FILE *fp = fopen(f->cfg.script, "r");
	char *line = NULL, why[256];
	size_t cap = 0;
	int lineno = 0, cap_cmds = 0, rc = 0, open_repeat = -1; /* index of the unclosed "repeat" */
	static bool seen[CPULIST_MAX];

	if (!fp) {
		snprintf(err, errlen, "--script: cannot open %s: %s", f->cfg.script, strerror(errno));
		return -1;
	}
	memset(seen, 0, sizeof(seen));
	while (getline(&line, &cap, fp) > 0) {
		struct fake_cmd cmd;
		lineno++;
		int r = parse_line(line, &cmd, why, sizeof(why));
		if (r < 0) {
			snprintf(err, errlen, "--script: %s:%d: %s", f->cfg.script, lineno, why);
			rc = -1;
			break;
		}
		if (r > 0)
			continue;
		if (cmd.op == OP_REPEAT || cmd.op == OP_END) {
			const char *bad = cmd.op == OP_REPEAT ? (open_repeat >= 0 ? "repeat blocks do not nest" : NULL)
							       : (open_repeat < 0 ? "end without repeat" : NULL);
			if (bad) {
				snprintf(err, errlen, "--script: %s:%d: %s", f->cfg.script, lineno, bad);
				rc = -1;
				break;
			}
			if (cmd.op == OP_END)
				cmd.value = open_repeat;
			open_repeat = cmd.op == OP_REPEAT ? f->ncmds : -1;
		}
		if (f->ncmds == cap_cmds) {
			cap_cmds = cap_cmds ? 2 * cap_cmds : 64;
			struct fake_cmd *n = realloc(f->cmds, (size_t)cap_cmds * sizeof(*n));
			if (!n) {
				snprintf(err, errlen, "out of memory reading %s", f->cfg.script);
				rc = -1;
				break;
			}
			f->cmds = n;
		}
		f->cmds[f->ncmds++] = cmd;
		if (cmd.op == OP_SAMPLE)
			seen[cmd.cpu] = true;
	}
	free(line);
	fclose(fp);
	if (rc == 0 && open_repeat >= 0) {
		snprintf(err, errlen, "--script: %s: repeat without end", f->cfg.script);
		rc = -1;
	}
	f->cpus.n = 0;
	for (int c = 0; c < CPULIST_MAX; c++) {
		f->slot[c] = -1;
		if (seen[c]) {
			f->slot[c] = f->cpus.n;
			f->cpus.cpu[f->cpus.n++] = c;
		}
	}
	return rc;
}

/* Header "params" of the fake probe. */
static void fake_params(struct jw *w, const void *ctx)
{
	const struct fake *f = ctx;
	jw_str(w, "script", f->cfg.script);
	jw_i64(w, "threshold_ns", f->cfg.out.threshold_ns);
	jw_cpus(w, "cpus", f->cpus.cpu, f->cpus.n);
	jw_str(w, "raw", f->cfg.out.raw);
	jw_bool(w, "hist_delta", f->cfg.out.hist_delta);
}

/* "sleep MS" that a SIGINT/SIGTERM cuts short; false if interrupted. */
static bool fake_sleep(struct sink *s, int64_t ms)
{
	int64_t until = mono_now_ns() + ms * NS_PER_MS;
	while (mono_now_ns() < until) {
		if (rt_signals_caught())
			return false;
		int64_t step = mono_now_ns() + 50 * NS_PER_MS;
		sleep_until_ns(step < until ? step : until);
		sink_poll(s);
	}
	return !rt_signals_caught();
}

/* Abort like a crashing probe: truncated stream, no core file left behind. */
static void fake_crash(struct sink *s)
{
	struct rlimit no_core = {0, 0};
	sink_poll(s);
	setrlimit(RLIMIT_CORE, &no_core);
	signal(SIGABRT, SIG_DFL);
	abort();
}

/* Replay the script (the main thread's measurement): until its end, an "exit N" line, or a
 * stop. */
static void fake_replay(struct run *run)
{
	struct fake *f = (struct fake *)run;
	struct sink *s = &run->sink;
	int64_t left = 0; /* passes still to run of the current repeat block */
	for (int i = 0; i < f->ncmds; i++) {
		struct fake_cmd *c = &f->cmds[i];
		if (rt_signals_caught() || atomic_load(&s->stop))
			break;
		switch (c->op) {
		case OP_SAMPLE: {
			struct cpu_state *cs = &s->cs[f->slot[c->cpu]];
			cs->wakeups++;
			sink_sample(cs, c->value, mono_now_ns(), c->skipped);
			sink_poll(s);
			break;
		}
		case OP_PROGRESS:
			sink_poll(s);
			sink_progress(s);
			break;
		case OP_SLEEP:
			fake_sleep(s, c->value);
			break;
		case OP_WARN:
			sink_warning(s, "%s", c->text);
			break;
		case OP_CRASH:
			fake_crash(s);
			break;
		case OP_EXIT:
			f->exited = true;
			f->exit_code = (int)c->value;
			return;
		case OP_REPEAT:
			left = c->value;
			break;
		case OP_END:
			if (--left > 0)
				i = (int)c->value; /* the loop's i++ steps past the repeat line */
			break;
		}
	}
}

/* The script's "exit N", a stop, or the status from the data. */
static int fake_end(struct run *run)
{
	struct fake *f = (struct fake *)run;
	if (f->exited) {
		char msg[64];
		int code = f->exit_code;
		const char *reason = code == 0 ? "completed" : code == 4 ? "interrupted" : "error";
		snprintf(msg, sizeof(msg), "script exit %d", code);
		return sink_finish(&run->sink, code, reason, msg);
	}
	if (rt_signals_caught())
		return sink_finish(&run->sink, 4, "interrupted", "stopped by signal");
	return sink_finish(&run->sink, -1, NULL, NULL);
}

/* Release the script. */
static void fake_cleanup(struct run *run)
{
	struct fake *f = (struct fake *)run;
	for (int i = 0; i < f->ncmds; i++)
		free(f->cmds[i].text);
	free(f->cmds);
}

/* --script is required and read whole now: its errors come before any output. */
static int fake_validate(struct run *run)
{
	struct fake *f = (struct fake *)run;
	if (!f->cfg.script)
		return log_error("--script is required");
	if (fake_load(f, run->err, sizeof(run->err)))
		return log_error("%s", run->err);
	return sink_out_validate(&f->cfg.out, run->a->check);
}

/* One slot per CPU of the script. */
static int fake_prepare(struct run *run)
{
	struct fake *f = (struct fake *)run;
	if (sink_init(&run->sink, &f->cfg.out, f->cpus.cpu, f->cpus.n, run->err, sizeof(run->err)))
		return log_error("%s", run->err);
	return 0;
}

const struct probe probe_fake = {
	.name = "fake",
	.summary = "replays a script of samples through the real sink (pipeline tests, no root)",
	.opts = fake_opts, .nopts = FAKE_NOPTS,
	.state_bytes = sizeof(struct fake), .no_rt = true, .params = fake_params,
	.validate = fake_validate, .prepare = fake_prepare,
	.measure = fake_replay,
	.end = fake_end, .cleanup = fake_cleanup,
};
