"""Figures the benchmark and check scripts compute from their samples."""
import math


def percentile(values, p, digits=None, method="linear"):
    """The p-th percentile (0 to 100) of values, None when there are none.

    method "linear" interpolates between the two closest ranks (numpy's default);
    "higher" takes the value at the rank rounded up (for p 50: the upper median, a value
    that was measured). digits, when given, rounds the result to that many decimals."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * p / 100
    if method == "linear":
        lo = int(k)
        hi = min(lo + 1, len(v) - 1)
        x = v[lo] + (v[hi] - v[lo]) * (k - lo)
    elif method == "higher":
        x = v[math.ceil(k)]
    else:
        raise ValueError(f"percentile: unknown method {method!r}")
    return x if digits is None else round(x, digits)


def rnd(x, n=2):
    """round(x, n), passing None through."""
    return None if x is None else round(x, n)
