"""Before/after pictures of the video effects from real frames (scripts/effects-gallery)."""
import argparse, os, sys, tempfile, time
sys.path.insert(0, os.path.dirname(__file__))
from plots import pyplot
from procs import Proc, wait_until

PHOTOS = os.path.join(".build", "effects", "photos")
PERSON = ["--source", f"image:{os.path.join(PHOTOS, 'astronaut.png')}"]
SYNTHETIC = ["--source", "synthetic", "--pose", "orbit"]
# name: (caption, publisher arguments before, after)
SHOTS = {
    "blur": ("person segmentation, background blurred (radius 10)", PERSON, PERSON + ["--background", "blur"]),
    "replace": ("person segmentation, background replaced by a picture", PERSON,
                PERSON + ["--background", f"image={os.path.join(PHOTOS, 'grass.png')}"]),
    "depth": ("depth: everything farther than 3 m blurred (no model)", SYNTHETIC, SYNTHETIC + ["--background", "blur=14,depth=3"]),
    "framing": ("framing on the face: a 640×480 crop of the 1280×720 capture", PERSON + ["--width", "1280", "--height", "720"],
                PERSON + ["--capture-size", "1280x720", "--framing", "face"]),
}


def shot(a, name, publisher_args, path):
    with tempfile.TemporaryDirectory() as tmp:
        pub = Proc("publisher", [os.path.join(a.bin, "posecast-publisher"), "--listen", "127.0.0.1:0", "--json"] + publisher_args, tmp)
        try:
            wait_until(lambda: any(o.get("event") == "listening" for _, o in pub.events()), 20, f"{name}: the publisher")
            url = next(o["url"] for _, o in pub.events() if o.get("event") == "listening")
            script = os.path.join(tmp, "script")
            with open(script, "w") as f:
                f.write(f"sleep {a.settle}\nsnapshot {os.path.abspath(path)}\nsleep 0.5\n")
            sub = Proc("subscriber", [os.path.join(a.bin, "posecast-subscriber"), "--signaling", url, "--headless", "--snapshots",
                                      "--script", script, "--exit-after-script", "--json"], tmp)
            try:
                wait_until(lambda: sub.p.poll() is not None, a.settle + 30, f"{name}: the expert's snapshot")
            finally:
                sub.stop()
            errors = [o.get("message") for _, o in pub.events("effectError")]
            if errors:
                raise SystemExit(f"{name}: {errors[0]}")
        finally:
            pub.stop()
    if not os.path.exists(path):
        raise SystemExit(f"{name}: no snapshot written to {path}")


def combine(before, after, caption, path):
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.1))
    for ax, p, title in [(axes[0], before, "before"), (axes[1], after, "after")]:
        ax.imshow(plt.imread(p))
        ax.set_title(title, fontsize=10)
        ax.axis("off")
    fig.suptitle(caption, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", default=os.path.join("docs", "images"))
    ap.add_argument("--settle", type=float, default=4, help="seconds before the snapshot (framing settles, the mask is smoothed)")
    ap.add_argument("--only", default=",".join(SHOTS))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    shots = os.path.join("out", "effects-gallery")
    os.makedirs(shots, exist_ok=True)
    for name in a.only.split(","):
        caption, before, after = SHOTS[name]
        paths = [os.path.join(shots, f"effects-{name}-{which}.png") for which in ("before", "after")]
        shot(a, name, before, paths[0])
        shot(a, name, after, paths[1])
        combine(paths[0], paths[1], caption, os.path.join(a.out, f"effects-{name}.png"))
        print(f"{name}: {os.path.join(a.out, f'effects-{name}.png')}", flush=True)


if __name__ == "__main__":
    main()
