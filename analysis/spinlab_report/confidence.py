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
- Rate, Change and estimate: a figure across repetitions said first as what it divides (Rate) or
  compares (Change), then estimated with the rest in one pass (the verdict's figures).
"""
import math
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Rate:
    """A rate across repetitions, to estimate (rate): parts is (numerator, denominator) per
    repetition, numerator None when unknown; base_parts the baseline's (None: not compared);
    correction is added to the numerators of the log ratio."""
    parts: list
    base_parts: list | None
    correction: float


@dataclass(frozen=True)
class Change:
    """A change of geometric means from base_values, in percent, to estimate (change)."""
    values: list
    base_values: list


def rate(parts, base_parts, correction: float, confidence: float) -> dict:
    """parts: (numerator, denominator) per repetition, numerator None when unknown. The mean of
    numerator / denominator with its interval; against base_parts (None for the baseline) the
    log ratio of (numerator + correction) / denominator, or None when a side has a value <= 0."""
    usable = [(n, d) for n, d in parts if n is not None and d]
    values = [n / d for n, d in usable]
    out = mean_ci(values, confidence)
    out["values"] = values
    out["vs_baseline"] = None
    if base_parts is None:
        return out
    base = [(n, d) for n, d in base_parts if n is not None and d]
    x, y = [(n + correction) / d for n, d in usable], [(n + correction) / d for n, d in base]
    if x and y and min(x) > 0 and min(y) > 0:
        out["vs_baseline"] = log_ratio(x, y, confidence)
    return out


def change(values, base_values, confidence: float) -> dict:
    """log_ratio of values (all > 0) to base_values as a change in percent, with its interval."""
    r = log_ratio(values, base_values, confidence)
    pct = lambda x: None if x is None else (x - 1.0) * 100.0
    return {"change_pct": pct(r["ratio"]), "low_pct": pct(r["low"]), "high_pct": pct(r["high"]), "p": r["p"],
            "df": r["df"]}


def estimate(figures, confidence: float):
    """figures (dicts, at any depth) with each Rate and Change in them replaced by its estimate
    (rate, change); everything else as it is."""
    if isinstance(figures, Rate):
        return rate(figures.parts, figures.base_parts, figures.correction, confidence)
    if isinstance(figures, Change):
        return change(figures.values, figures.base_values, confidence)
    if isinstance(figures, dict):
        return {k: estimate(v, confidence) for k, v in figures.items()}
    return figures
