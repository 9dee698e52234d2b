// pvxs client side of pva-rtt (pvac.h). The monitor callback runs in pvxs's
// worker thread: it timestamps first, then matches the awaited value and
// writes the eventfd, like libca's receive thread does for ca-rtt.
#include "pvac.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <unistd.h>

#include <pvxs/client.h>
#include <pvxs/version.h>

namespace {

const int64_t NO_SEQ = -1;

int64_t mono_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void signal_fd(int fd)
{
	uint64_t one = 1;
	if (write(fd, &one, sizeof(one)) != sizeof(one))
		perror("rtqual-pva: eventfd");
}

} // namespace

struct pvac {
	pvxs::client::Context ctx;
	std::string put_pv, mon_pv;
	int efd = -1;
	std::shared_ptr<pvxs::client::Subscription> sub;
	std::shared_ptr<pvxs::client::Operation> put_op; // kept until the next put: dropping it cancels
	std::atomic<int64_t> want{NO_SEQ}, t_echo{0};
	std::atomic<bool> echoed{false}, put_failed{false};
	std::atomic<uint64_t> stray{0};
	std::mutex err_lock;
	std::string put_err;

	// pvxs worker thread: every queued update of the monitor
	void on_event(pvxs::client::Subscription &s)
	{
		int64_t now = mono_ns();
		try {
			while (auto v = s.pop()) {
				int64_t w = want.load();
				if (w != NO_SEQ && v["value"].as<double>() == double(w)) {
					t_echo.store(now);
					want.store(NO_SEQ);
					echoed.store(true);
					signal_fd(efd);
				} else {
					stray++;
				}
			}
		} catch (std::exception &) { // a disconnect: the put thread times out and says so
			stray++;
		}
	}
};

extern "C" struct pvac *pvac_open(const char *put, const char *monitor, int efd, int64_t timeout_ns, int64_t *base,
				  char *err, size_t len)
{
	double tmo = double(timeout_ns) / 1e9;
	std::unique_ptr<pvac> c;
	const char *pv = monitor;
	try {
		c.reset(new pvac);
		c->ctx = pvxs::client::Context::fromEnv();
		c->put_pv = put;
		c->mon_pv = monitor;
		c->efd = efd;
		// the current value (also proves the monitor PV answers), then the put PV
		pvxs::Value v0 = c->ctx.get(monitor).exec()->wait(tmo);
		double d = v0["value"].as<double>();
		*base = std::isfinite(d) && std::fabs(d) < 1e12 ? int64_t(std::floor(d)) + 1 : 1;
		if (*base < 1)
			*base = 1;
		pv = put;
		if (c->put_pv != c->mon_pv)
			c->ctx.get(put).exec()->wait(tmo);
		pv = monitor;
		pvac *raw = c.get();
		c->sub = c->ctx.monitor(monitor)
				 .maskConnected(true)
				 .maskDisconnected(true)
				 .event([raw](pvxs::client::Subscription &s) { raw->on_event(s); })
				 .exec();
		// the first update (the current value) says the subscription is live
		for (int64_t give_up = mono_ns() + timeout_ns; c->stray.load() == 0;) {
			if (mono_ns() > give_up)
				throw pvxs::client::Timeout();
			usleep(1000);
		}
		return c.release();
	} catch (pvxs::client::Timeout &) {
		std::snprintf(err, len, "PVA PV %s not found within --timeout %gs (EPICS_PVA_ADDR_LIST=%s)", pv, tmo,
			      getenv("EPICS_PVA_ADDR_LIST") ? getenv("EPICS_PVA_ADDR_LIST") : "");
	} catch (std::exception &e) {
		std::snprintf(err, len, "PVA %s: %s", pv, e.what());
	}
	return nullptr;
}

extern "C" int pvac_put(struct pvac *c, int64_t value, int64_t *t_put, char *err, size_t len)
{
	c->put_op.reset();
	c->echoed.store(false);
	c->want.store(value);
	*t_put = mono_ns();
	try {
		c->put_op = c->ctx.put(c->put_pv)
				    .fetchPresent(false)
				    .set("value", double(value))
				    .result([c](pvxs::client::Result &&r) {
					    try {
						    r();
					    } catch (std::exception &e) {
						    std::lock_guard<std::mutex> g(c->err_lock);
						    c->put_err = e.what();
						    c->put_failed.store(true);
						    signal_fd(c->efd);
					    }
				    })
				    .exec();
	} catch (std::exception &e) {
		std::snprintf(err, len, "PVA put %s: %s", c->put_pv.c_str(), e.what());
		return -1;
	}
	return 0;
}

extern "C" int pvac_take(struct pvac *c, int64_t *t_echo, char *err, size_t len)
{
	uint64_t n;
	if (read(c->efd, &n, sizeof(n)) != sizeof(n))
		return 0;
	if (c->put_failed.load()) {
		std::lock_guard<std::mutex> g(c->err_lock);
		std::snprintf(err, len, "PVA put %s: %s", c->put_pv.c_str(), c->put_err.c_str());
		return -1;
	}
	if (!c->echoed.load())
		return 0;
	*t_echo = c->t_echo.load();
	return 1;
}

extern "C" uint64_t pvac_stray(const struct pvac *c)
{
	return c->stray.load();
}

extern "C" void pvac_close(struct pvac *c)
{
	if (!c)
		return;
	c->put_op.reset();
	if (c->sub)
		c->sub->cancel();
	c->ctx.close();
	delete c;
}

extern "C" const char *pvac_version(void)
{
	return pvxs::version_str();
}
