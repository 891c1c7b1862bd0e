"""The person background on real photographs of people (scripts/bench-people).

Each picture of scripts/people-regions.json is the publisher's live source
(--source image:, sent at the picture's own size), once with no effect and once with
its background replaced by black; a headless expert writes what it decodes
(`snapshot`). In the hand-marked regions: a person pixel is kept when the two decoded
pictures differ by at most 24 luma levels; a background pixel is replaced when its luma
is at most 32 (black is 16). Empty pictures: the share of the picture left un-black
(pixels the original shows brighter than 40). The halo: the mean luma over black of the
10 px ring outside what was kept.
"""
import argparse, json, os, sys, tempfile
import numpy as np
from PIL import Image
sys.path.insert(0, os.path.dirname(__file__))
from effects_gallery import shot
from plots import pyplot

PHOTOS = os.path.join(".build", "effects", "photos")


def luma(path, size):
    """The snapshot's luma at `size` (congestion control may have sent a large picture
    smaller at first: then it is scaled back, the regions staying in picture pixels)."""
    image = Image.open(path).convert("L")
    if image.size != size:
        image = image.resize(size, Image.BILINEAR)
    return np.asarray(image, dtype=np.float32)


def share(mask, boxes):
    values = [mask[y0:y1, x0:x1].ravel() for x0, y0, x1, y1 in boxes]
    values = np.concatenate(values) if values else np.array([])
    return float(values.mean()) if values.size else None


def dilate(mask, radius):
    out = mask.copy()
    for _ in range(radius):
        grown = out.copy()
        grown[1:, :] |= out[:-1, :]; grown[:-1, :] |= out[1:, :]
        grown[:, 1:] |= out[:, :-1]; grown[:, :-1] |= out[:, 1:]
        out = grown
    return out


def measure(a, entry, tmp):
    picture = Image.open(os.path.join(PHOTOS, entry["file"])).convert("RGB")
    if "crop" in entry:
        picture = picture.crop(tuple(entry["crop"]))
    w, h = picture.size
    w, h = w - w % 8, h - h % 8      # the publisher sends multiples of 8
    source = os.path.join(tmp, f"{entry['name']}.png")
    picture.crop((0, 0, w, h)).save(source)
    black = os.path.join(tmp, "black.png")
    Image.new("RGB", (w, h)).save(black)
    base = ["--source", f"image:{source}", "--width", str(w), "--height", str(h)]
    before, after = (os.path.join(a.out, f"{entry['name']}-{k}.png") for k in ("before", "after"))
    shot(a, entry["name"], base, before)
    shot(a, entry["name"], base + ["--background", f"image={black}"], after)
    sent = Image.open(after).size
    b, r = luma(before, (w, h)), luma(after, (w, h))
    kept = np.abs(r - b) <= 24
    replaced = r <= 32
    row = {"picture": entry["name"], "what": entry["what"], "size": f"{w}x{h}", "decoded": f"{sent[0]}x{sent[1]}"}
    if entry["person"]:
        row["person_kept_pct"] = round(100 * share(kept, entry["person"]), 1)
        row["background_replaced_pct"] = round(100 * share(replaced, entry["background"]), 1)
        silhouette = kept & (b > 40)
        ring = dilate(silhouette, 10) & ~silhouette
        row["halo_levels"] = round(float(r[ring].mean() - 16), 1) if ring.any() else None
        row["meets"] = row["person_kept_pct"] >= 95 and row["background_replaced_pct"] >= 98 and (row["halo_levels"] or 0) <= 4
    else:
        visible = b > 40
        row["foreground_pct"] = round(100 * float((~replaced & visible).mean()), 2)
        row["meets"] = row["foreground_pct"] <= 2
    return row, before, after


def sheet(rows, path):
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(len(rows), 2, figsize=(7, 2.6 * len(rows)))
    for k, (row, before, after) in enumerate(rows):
        for ax, p, title in [(axes[k][0], before, row["picture"]), (axes[k][1], after, "background black")]:
            ax.imshow(plt.imread(p))
            ax.set_title(title, fontsize=7)
            ax.axis("off")
        figures = {k2: v for k2, v in row.items() if k2.endswith(("_pct", "_levels"))}
        axes[k][1].text(1.02, 0.5, "\n".join(f"{k2}: {v}" for k2, v in figures.items()), transform=axes[k][1].transAxes, fontsize=7, va="center")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", default=os.path.join("out", "bench-people"))
    ap.add_argument("--regions", default=os.path.join("scripts", "people-regions.json"))
    ap.add_argument("--settle", type=float, default=4, help="seconds before each snapshot (the mask is smoothed over time)")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with open(a.regions) as f:
        entries = json.load(f)["pictures"]
    if a.only:
        entries = [e for e in entries if e["name"] in a.only.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for entry in entries:
            row, before, after = measure(a, entry, tmp)
            print(json.dumps(row), flush=True)
            rows.append((row, before, after))
    sheet(rows, os.path.join(a.out, "people.png"))
    print(f"contact sheet: {os.path.join(a.out, 'people.png')}", file=sys.stderr)


if __name__ == "__main__":
    main()
