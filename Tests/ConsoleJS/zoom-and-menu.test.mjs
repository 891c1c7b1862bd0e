// Zoom that keeps the pinched point in place (zoom.js), and the camera menu placed
// wholly on screen (camera-menu.js), at a phone's and a desk's sizes.
import {test} from "node:test";
import assert from "node:assert/strict";
import {zoomKeeping, samePlace, frameZoom} from "../../Sources/Signaling/Console/zoom.js";
import {placeMenu} from "../../Sources/Signaling/Console/camera-menu.js";

// What the publisher does with `zoom {point, factor}` on a frame whose crop is (centre c,
// zoom z) in the widest view's 0…1 coordinates: the new crop centres on the point's
// place in the widest view (docs/EFFECTS.md); then where the pinched point shows.
function afterZoom(pinched, crop, request) {
  const centre = {x: crop.cx + (request.point.x - 0.5) / crop.z, y: crop.cy + (request.point.y - 0.5) / crop.z};
  const wide = {x: crop.cx + (pinched.x - 0.5) / crop.z, y: crop.cy + (pinched.y - 0.5) / crop.z};
  return {x: 0.5 + (wide.x - centre.x) * request.factor, y: 0.5 + (wide.y - centre.y) * request.factor};
}

test("a pinch ×2 on the whole view keeps the pinched point where it is", () => {
  for (const p of [{x: 0.3, y: 0.6}, {x: 0.5, y: 0.5}, {x: 0.1, y: 0.9}]) {
    const request = zoomKeeping(p, 1, 2);
    assert.equal(request.factor, 2);
    const shown = afterZoom(p, {cx: 0.5, cy: 0.5, z: 1}, request);
    assert.ok(Math.hypot(shown.x - p.x, shown.y - p.y) < 1e-9, JSON.stringify({p, shown}));
  }
});

test("from a view already zoomed and off centre, in and out", () => {
  const crop = {cx: 0.4, cy: 0.6, z: 2};
  const p = {x: 0.7, y: 0.35};
  for (const factor of [3, 1.5]) {
    const request = zoomKeeping(p, crop.z, factor);
    const shown = afterZoom(p, crop, request);
    assert.ok(Math.hypot(shown.x - p.x, shown.y - p.y) < 1e-9, `×${factor}: ${JSON.stringify(shown)}`);
  }
});

test("limits: 1…4, no request when nothing changes, the point kept inside the picture", () => {
  assert.equal(zoomKeeping({x: 0.5, y: 0.5}, 1, 9).factor, 4);
  assert.equal(zoomKeeping({x: 0.5, y: 0.5}, 2, 0.2).factor, 1);
  assert.equal(zoomKeeping({x: 0.2, y: 0.2}, 2, 2.001), null);
  const out = zoomKeeping({x: 0, y: 1}, 4, 1.01);
  assert.ok(out.point.x >= 0 && out.point.x <= 1 && out.point.y >= 0 && out.point.y <= 1);
});

test("a frame's zoom from its focal length; a point's place in a later crop", () => {
  assert.equal(frameZoom({fx: 1.8}, 0.9), 2);
  assert.equal(frameZoom({fx: 0.9}, null), 1);
  // The whole view, then ×2 centred on (0.4, 0.55): the same sensor direction.
  const k0 = {fx: 0.9, fy: 1.2, cx: 0.5, cy: 0.5};
  const k1 = {fx: 1.8, fy: 2.4, cx: (0.5 - (0.4 - 0.25)) * 2, cy: (0.5 - (0.55 - 0.25)) * 2};
  const p = samePlace({x: 0.2, y: 0.7}, k0, k1);
  assert.ok(Math.abs(p.x - 0.1) < 1e-9 && Math.abs(p.y - 0.8) < 1e-9, JSON.stringify(p));
});

test("the camera menu stays wholly on screen wherever it opens", () => {
  const menu = {width: 240, height: 330};
  for (const viewport of [{width: 390, height: 844}, {width: 844, height: 390}, {width: 1280, height: 800}, {width: 768, height: 1024}]) {
    for (const x of [0, 10, viewport.width / 2, viewport.width - 5, viewport.width]) {
      for (const y of [0, 20, viewport.height / 2, viewport.height - 3, viewport.height]) {
        const at = placeMenu({x, y}, menu, viewport);
        const height = at.maxHeight ?? menu.height;
        assert.ok(at.left >= 8 && at.left + menu.width <= viewport.width - 8, `${JSON.stringify({viewport, x, y, at})}`);
        assert.ok(at.top >= 8 && at.top + height <= viewport.height - 8, `${JSON.stringify({viewport, x, y, at})}`);
      }
    }
  }
  // Right of and below the pointer when it fits; a menu taller than the screen scrolls.
  assert.deepEqual(placeMenu({x: 100, y: 100}, menu, {width: 1280, height: 800}), {left: 100, top: 100, maxHeight: null});
  assert.equal(placeMenu({x: 100, y: 100}, {width: 240, height: 500}, {width: 844, height: 390}).maxHeight, 374);
});
