// The publisher's digital zoom as the expert steers it (a pinch, the wheel), with the
// pointed point kept in place. The publisher's `zoom {point, factor, frameId}` centres
// its crop on `point` of frame `frameId` (mapped through that frame's crop) at `factor`
// against its widest view (docs/CONTROL_CHANNEL.md, docs/EFFECTS.md). To keep point p
// where it is instead, the crop must centre on q = ½ + (p − ½)(1 − z/Z), z the zoom of
// the frame the expert saw, Z the new one. Pure: Tests/ConsoleJS/zoom.test.mjs.

export const MAX_ZOOM = 4;         // ControlCodec.maxZoom
export const WHEEL_STEP = 1.25;    // one wheel notch, as the expert's window

const clamp = (v, low, high) => Math.min(high, Math.max(low, v));

// The request that shows `point` (0…1 on a frame whose zoom is `frameZoom`) at `factor`
// with the point still under the fingers. Null when the factor does not change.
export function zoomKeeping(point, frameZoom, factor, maxZoom = MAX_ZOOM) {
  const z = clamp(frameZoom || 1, 1, maxZoom);
  const target = clamp(factor, 1, maxZoom);
  if (Math.abs(target - z) < 0.01) return null;
  const k = 1 - z / target;
  return {point: {x: clamp(0.5 + (point.x - 0.5) * k, 0, 1), y: clamp(0.5 + (point.y - 0.5) * k, 0, 1)},
          factor: Math.round(target * 1000) / 1000};
}

// The zoom of a frame against the widest view, from its focal length and the widest
// view's (a crop's intrinsics are the capture's scaled: docs/EFFECTS.md, "Intrinsics").
export function frameZoom(intrinsics, widestFx) {
  if (!intrinsics || !(widestFx > 0)) return 1;
  return clamp(intrinsics.fx / widestFx, 1, MAX_ZOOM);
}

// Where a point (0…1) of a frame with intrinsics k0 shows in a frame with k1 of the same
// camera: the same direction from the sensor, whatever the crop (the camera's own motion
// aside). How far a pinched point drifted.
export function samePlace(point, k0, k1) {
  const dx = (point.x - k0.cx) / k0.fx, dy = (point.y - k0.cy) / k0.fy;
  return {x: k1.cx + k1.fx * dx, y: k1.cy + k1.fy * dy};
}
