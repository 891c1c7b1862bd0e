"""matplotlib for the scripts' PNG plots, when it is installed."""
import sys

MISSING = "matplotlib missing (python3 -m pip install matplotlib): no plot written"


def pyplot(missing=MISSING):
    """matplotlib.pyplot on the Agg backend (files only, no display), or None after
    printing `missing` to stderr when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(missing, file=sys.stderr)
        return None
    return plt


def save(fig, path, dpi=100):
    """Lays fig out, writes it to path and names the file on stderr (bench-all collects
    the plots from those lines)."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    print(f"plot: {path}", file=sys.stderr)
