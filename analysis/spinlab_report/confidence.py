"""Intervals and tests across repetitions, with scipy.stats (pure).

Repetitions are few (3 in `make run`), so everything here is built for small samples:
- mean_ci: the mean with a Student t interval, mean +- t((1+c)/2, n-1) * s / sqrt(n).
- log_ratio: how many times larger one phase's values are than the baseline's, as the ratio of
  geometric means, with Welch's t interval on the difference of log means and Welch's two-sided
  t-test for "the ratio is 1". Welch's t is exact for small normal samples and does not assume
  equal spreads (a loaded host varies more between repetitions than an idle one); the log makes
  a multiplicative effect (N times as many long waits) additive. A bootstrap over repetitions
  is not used: with 3 repetitions a phase has only 10 distinct resamples, and an exact
  permutation test of 3 against 3 cannot give p below 0.1, so neither could ever call a
  difference significant at 95%.
"""
import math

import numpy as np
from scipy import stats


def t_quantile(q: float, df: float) -> float:
    """The q-quantile of Student's t with df degrees of freedom (scipy.stats.t.ppf)."""
    if not df > 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {q}")
    return float(stats.t.ppf(q, df))


def _check_confidence(confidence: float):
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def mean_ci(values, confidence: float = 0.95) -> dict:
    """Mean and two-sided Student t interval: mean +- t_{(1+c)/2, n-1} * s / sqrt(n).

    With fewer than two values there is no spread to estimate: low and high are None.
    """
    _check_confidence(confidence)
    xs = np.asarray([float(v) for v in values], dtype=np.float64)
    n = int(xs.size)
    if n == 0:
        return {"n": 0, "mean": None, "low": None, "high": None, "confidence": confidence}
    mean = float(xs.mean())
    if n < 2:
        return {"n": n, "mean": mean, "low": None, "high": None, "confidence": confidence}
    half = t_quantile((1.0 + confidence) / 2.0, n - 1) * float(xs.std(ddof=1)) / math.sqrt(n)
    return {"n": n, "mean": mean, "low": mean - half, "high": mean + half, "confidence": confidence}


def log_ratio(values, base_values, confidence: float = 0.95) -> dict:
    """Ratio of geometric means values / base_values, its Welch t interval and p-value.

    All values must be > 0 (callers add a continuity correction to counts first). Keys: ratio,
    low, high (None when either side has fewer than 2 values, or both have no spread), p (two
    sided, same conditions), df (Welch-Satterthwaite), n, n_base, confidence.
    """
    _check_confidence(confidence)
    x = np.log(np.asarray(values, dtype=np.float64))
    y = np.log(np.asarray(base_values, dtype=np.float64))
    out = {"ratio": None, "low": None, "high": None, "p": None, "df": None, "n": int(x.size),
           "n_base": int(y.size), "confidence": confidence}
    if not x.size or not y.size:
        return out
    diff = float(x.mean() - y.mean())
    out["ratio"] = math.exp(diff)
    if x.size < 2 or y.size < 2:
        return out
    if np.ptp(x) < 1e-12 and np.ptp(y) < 1e-12:  # identical repetitions on both sides: no spread
        return out
    vx, vy = float(x.var(ddof=1)) / x.size, float(y.var(ddof=1)) / y.size
    df = (vx + vy) ** 2 / (vx ** 2 / (x.size - 1) + vy ** 2 / (y.size - 1))
    half = t_quantile((1.0 + confidence) / 2.0, df) * math.sqrt(vx + vy)
    # scipy.stats.ttest_ind(x, y, equal_var=False) gives the same p, but warns when one side's
    # repetitions are identical, which is a legitimate case here (e.g. no long wait in any).
    p = float(2.0 * stats.t.sf(abs(diff) / math.sqrt(vx + vy), df))
    out.update(low=math.exp(diff - half), high=math.exp(diff + half), p=p, df=df)
    return out


def pct_change(value: float | None, base: float | None) -> float | None:
    """Percentage change from base; None when either is missing or base is 0."""
    if value is None or base is None or base == 0:
        return None
    return (value - base) / base * 100.0
