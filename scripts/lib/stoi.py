"""Short-time objective intelligibility (STOI; Taal, Hendriks, Heusdens and Jensen,
"An Algorithm for Intelligibility Prediction of Time-Frequency Weighted Noisy Speech",
IEEE TASLP 19(7), 2011), written from the paper's description with numpy: the clean
and the degraded signal at 10 kHz, silent frames of the clean one dropped from both,
15 one-third octave bands from 150 Hz, 384 ms segments (30 frames), the degraded
envelope normalised to the clean one's energy and clipped at −15 dB SDR, the correlation
of the two envelopes averaged over bands and segments. 1 is the clean signal itself;
unprocessed speech in noise at 0 dB SNR lands near 0.7–0.8."""
import numpy as np

FS = 10_000
FRAME = 256
NFFT = 512
BANDS = 15
LOWEST_HZ = 150.0
SEGMENT = 30
BETA_DB = -15.0
DYNAMIC_RANGE_DB = 40.0


def resample(x, rate, to=FS):
    """x from rate to `to` Hz (scipy's polyphase filter when it is there, else by FFT)."""
    if rate == to:
        return np.asarray(x, dtype=float)
    g = np.gcd(int(rate), int(to))
    try:
        from scipy.signal import resample_poly
        return resample_poly(np.asarray(x, dtype=float), to // g, rate // g)
    except ImportError:
        n = int(round(len(x) * to / rate))
        spectrum = np.fft.rfft(np.asarray(x, dtype=float))
        keep = n // 2 + 1
        out = np.zeros(keep, dtype=complex)
        out[:min(keep, len(spectrum))] = spectrum[:min(keep, len(spectrum))]
        return np.fft.irfft(out, n) * (n / len(x))


def _window():
    # A Hann window without its zero end points.
    return np.hanning(FRAME + 2)[1:-1]


def _frames(x):
    hop = FRAME // 2
    count = max(0, (len(x) - FRAME) // hop + 1)
    return np.stack([x[i * hop:i * hop + FRAME] for i in range(count)]) if count else np.zeros((0, FRAME))


def _drop_silence(x, y):
    """x and y rebuilt (overlap-add) from the frames where x is within 40 dB of its loudest."""
    w = _window()
    fx, fy = _frames(x) * w, _frames(y) * w
    if len(fx) == 0:
        return x[:0], y[:0]
    energy = 20 * np.log10(np.linalg.norm(fx, axis=1) + np.finfo(float).eps)
    keep = energy > energy.max() - DYNAMIC_RANGE_DB
    fx, fy = fx[keep], fy[keep]
    hop = FRAME // 2
    n = (len(fx) - 1) * hop + FRAME
    ox, oy = np.zeros(n), np.zeros(n)
    for i in range(len(fx)):
        ox[i * hop:i * hop + FRAME] += fx[i]
        oy[i * hop:i * hop + FRAME] += fy[i]
    return ox, oy


def _band_matrix():
    """(BANDS × NFFT/2+1) 0/1 matrix: which FFT bins make each one-third octave band."""
    freqs = np.linspace(0, FS / 2, NFFT // 2 + 1)
    k = np.arange(BANDS)
    lower = LOWEST_HZ * 2.0 ** ((2 * k - 1) / 6)
    upper = LOWEST_HZ * 2.0 ** ((2 * k + 1) / 6)
    m = np.zeros((BANDS, len(freqs)))
    for b in range(BANDS):
        lo = int(np.argmin(np.abs(freqs - lower[b])))
        hi = int(np.argmin(np.abs(freqs - upper[b])))
        m[b, lo:hi] = 1
    return m


def _band_envelopes(x):
    spectrum = np.fft.rfft(_frames(x) * _window(), n=NFFT, axis=1)          # frames × bins
    return np.sqrt(_band_matrix() @ (np.abs(spectrum) ** 2).T)             # bands × frames


def stoi(clean, degraded, rate):
    """STOI of degraded against clean (same length, same rate, time-aligned); None when
    the clean signal has less than one segment of speech."""
    n = min(len(clean), len(degraded))
    x, y = resample(clean[:n], rate), resample(degraded[:n], rate)
    x, y = _drop_silence(x, y)
    X, Y = _band_envelopes(x), _band_envelopes(y)
    if X.shape[1] < SEGMENT:
        return None
    clip = 10 ** (-BETA_DB / 20)
    scores = []
    for m in range(SEGMENT, X.shape[1] + 1):
        xs, ys = X[:, m - SEGMENT:m], Y[:, m - SEGMENT:m]
        alpha = np.linalg.norm(xs, axis=1, keepdims=True) / (np.linalg.norm(ys, axis=1, keepdims=True) + np.finfo(float).eps)
        yp = np.minimum(alpha * ys, xs * (1 + clip))
        xc = xs - xs.mean(axis=1, keepdims=True)
        yc = yp - yp.mean(axis=1, keepdims=True)
        denom = np.linalg.norm(xc, axis=1) * np.linalg.norm(yc, axis=1) + np.finfo(float).eps
        scores.append((xc * yc).sum(axis=1) / denom)
    return float(np.mean(scores))
