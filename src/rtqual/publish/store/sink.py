"""WindowSink: how the monitor hands its windows to the history store without ever waiting for it or failing
on it. A bounded buffer (limit_windows, default 10 080: a week of 1-minute windows of one CPU, or 3.5 days of
two) filled by put(); a writer thread that drains it in batches, and while the store is unreachable retries
with backoff (1 s doubling to 60 s). Nothing is lost within the bound: a window leaves the buffer only once its
transaction committed. When the buffer is full, the OLDEST window is dropped and counted in `dropped`. Captured
spikes (put_spike, monitor --capture) go the same way in a buffer of their own (SPIKE_LIMIT, `spikes_dropped`)."""

from __future__ import annotations

import threading
import time
from collections import deque

BATCH_WINDOWS = 500  # windows per transaction
SPIKE_LIMIT = 1000  # captured spikes buffered while the store is unreachable (monitor --capture); the oldest dropped
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0
REQUIRED = ("host", "probe", "cpu", "start_unix_s", "duration_s", "samples", "over_threshold", "overruns")


class WindowSink:
    """A bounded, retrying writer of monitor windows into the store at url (None: $RTQUAL_STORE, else the
    default). put() never blocks on the store and never raises; `warning` says (one line) why the store is
    unreachable while it is, `dropped` how many windows the bound cost, `sent` how many were stored."""

    def __init__(self, url: str | None, limit_windows: int = 10080):
        if limit_windows < 1:
            raise ValueError("limit_windows must be at least 1")
        from rtqual.publish.store import check_url, is_off

        check_url(url)  # an unsupported scheme is the user's mistake: one line before the monitor starts
        self.url, self.limit_windows = url, limit_windows
        self.off = is_off(url)  # --store off / RTQUAL_STORE=off: windows are not stored, nothing is buffered
        self.buffer: deque[dict] = deque()
        self.spike_buffer: deque[dict] = deque(maxlen=SPIKE_LIMIT)  # captured spikes (put_spike), written the same way
        self.spikes_dropped = 0
        self.inflight = 0  # windows taken for the transaction being written (still counted in the bound)
        self.dropped = 0
        self.sent = 0
        self.warning: str | None = None
        self.backoff_s = BACKOFF_FIRST_S
        self.lock = threading.Condition()
        self.stopping = False
        self.hurry = False  # flush(): retry now instead of after the backoff
        self.thread = threading.Thread(target=self._writer, name="rtqual-window-sink", daemon=True)
        self.thread.start()

    def put(self, window: dict) -> None:
        """Buffer one window (the oldest is dropped and counted when the bound is reached) and wake the writer.
        A window without a required key is the caller's mistake (ValueError), never buffered to block the rest."""
        missing = [k for k in REQUIRED if window.get(k) is None]
        if missing:
            raise ValueError(f"monitor window without {', '.join(missing)}: {window!r}")
        if self.off:
            return
        with self.lock:
            self.buffer.append(dict(window))
            self._trim()
            self.lock.notify_all()

    def put_spike(self, spike: dict) -> None:
        """Buffer one captured spike (rtqual.publish.store.SPIKE_KEYS and host; the oldest dropped and counted past
        SPIKE_LIMIT) and wake the writer; never blocks, never raises."""
        if self.off:
            return
        with self.lock:
            if len(self.spike_buffer) == SPIKE_LIMIT:
                self.spikes_dropped += 1
            self.spike_buffer.append(dict(spike))
            self.lock.notify_all()

    def _trim(self) -> None:
        """Keep buffered plus in-flight windows within the bound, dropping the oldest buffered ones."""
        while self.buffer and len(self.buffer) + self.inflight > self.limit_windows:
            self.buffer.popleft()
            self.dropped += 1

    def unsent(self) -> int:
        with self.lock:
            return len(self.buffer) + self.inflight

    def flush(self, timeout_s: float) -> int:
        """Try to write every buffered window within timeout_s (retrying at once, not after the backoff);
        the number of windows still unsent."""
        deadline = time.monotonic() + timeout_s
        with self.lock:
            self.hurry = True
            self.lock.notify_all()
            while self.buffer or self.inflight or self.spike_buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not self.thread.is_alive():
                    break
                self.lock.wait(min(left, 0.1))
                self.hurry = True
                self.lock.notify_all()
            return len(self.buffer) + self.inflight + len(self.spike_buffer)

    def close(self, timeout_s: float = 5.0) -> int:
        """flush(timeout_s), then stop the writer thread; the windows still unsent."""
        left = self.flush(timeout_s)
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        self.thread.join(timeout=max(1.0, timeout_s))
        return left

    def reason(self) -> str:
        """Why windows were left unsent or dropped, in one line for the monitor's last message: the store's last
        error, else whether another writer holds its lock or it is read-only (asked now, without waiting),
        else the bound (windows came faster than the store took them)."""
        from rtqual.publish.store import writer_lock

        return (
            self.warning
            or writer_lock(self.url)
            or f"its bounded buffer of {self.limit_windows} windows was full: windows came faster than it wrote"
        )

    def _writer(self) -> None:
        """The writer thread: open the store, write batches, on trouble close it, say why and back off."""
        from rtqual.publish.store import open_store

        store = None
        while True:
            with self.lock:
                while not self.buffer and not self.spike_buffer and not self.stopping:
                    self.lock.wait()
                if self.stopping:
                    break
                batch = [self.buffer.popleft() for _ in range(min(BATCH_WINDOWS, len(self.buffer)))]
                spikes = list(self.spike_buffer)
                self.spike_buffer.clear()
                self.inflight = len(batch)
            try:
                store = store or open_store(self.url)
                store.add_windows(batch)
                with self.lock:  # stored: never written twice, whatever happens to the spikes
                    self.sent += len(batch)
                    self.inflight, batch = 0, []
                store.add_spikes(spikes)
            except Exception as e:  # noqa: BLE001 - the store's trouble must never stop the monitor
                if store is not None:
                    store.close()
                store = None
                with self.lock:
                    self.buffer.extendleft(reversed(batch))  # back in front, in order
                    for x in reversed(spikes):  # back in front, within the bound
                        if len(self.spike_buffer) < SPIKE_LIMIT:
                            self.spike_buffer.appendleft(x)
                    self.inflight = 0
                    self._trim()
                    self.warning = f"{e} (monitor windows buffered, at most {self.limit_windows}; retrying)"
                    self.lock.notify_all()
                    self._backoff()
                continue
            with self.lock:
                self.warning = None
                self.backoff_s = BACKOFF_FIRST_S
                self.lock.notify_all()
        if store is not None:
            store.close()

    def _backoff(self) -> None:
        """Wait (lock held) for the backoff or a flush/stop, then double the next backoff."""
        deadline = time.monotonic() + self.backoff_s
        self.hurry = False
        while not self.stopping and not self.hurry:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.lock.wait(left)
        self.backoff_s = min(BACKOFF_MAX_S, self.backoff_s * 2)
