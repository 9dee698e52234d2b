"""Synthetic per-second maxima with a known tail: an exponential or lognormal body, a GPD tail above U0 (test_tail)."""

import math

import numpy as np

M = 1000  # samples per second
P = 0.05  # per-second probability that the second holds a tail sample (its maximum)
U0, SIGMA, BODY = 50_000.0, 10_000.0, 5_000.0


def gpd(rng, xi, n):
    v = rng.uniform(size=n)
    return SIGMA * (np.log1p(-v) * -1 if xi == 0 else ((1 - v) ** -xi - 1) / xi)


def stream(seed, xi, seconds=3600, clustered=False, body="exp", step=False):
    rng = np.random.default_rng(seed)
    v = rng.uniform(size=seconds) ** (1 / M)  # body max: F^{-1}(U^{1/m})
    if body == "exp":
        x = -BODY * np.log1p(-v * (1 - math.exp(-U0 / BODY)))
    else:
        from scipy.stats import lognorm

        d = lognorm(0.3, scale=8_000.0)
        x = d.ppf(v * d.cdf(U0))
    k = (rng.uniform(size=seconds) < P).astype(int)
    for i in np.nonzero(k)[0]:
        x[i] = U0 + gpd(rng, xi, k[i]).max()
    if clustered:
        out = x.copy()
        for i in np.nonzero(k)[0]:
            j = i + 1
            while j < seconds and rng.uniform() < 0.6:
                out[j] = max(out[j], U0 + (x[i] - U0) * rng.uniform(0.2, 0.9))
                j += 1
        x = out
    if step:
        x[seconds // 2 :] *= 1.6
    return [int(a) for a in x]


def truth(xi, period_s):
    g = 1 / (period_s * P)
    return U0 + (SIGMA * -math.log(g) if xi == 0 else SIGMA / xi * (g**-xi - 1))
