// PoseCast pose wire format (docs/POSE_WIRE_FORMAT.md), the pose trailer, the pose SEI
// of an H.264 frame (what comes through an SFU), and the camera geometry the console
// needs: a click's ray, its meeting with a plane, a world point's projection. An ES
// module with no dependencies: imported by the page (console.js), by the pose worker (a
// module worker) and by node's unit tests (Tests/ConsoleJS/pose.test.mjs).
export const FIXED_SIZE = 58;
const MAX_ELEMENT = 255;
export const MAGIC = [0x50, 0x43, 0x50, 0x54];   // "PCPT"
export const FOOTER = 6;                          // length (2 bytes of 7 bits, top bit set) + magic
const MAX_ESCAPED = Math.floor(MAX_ELEMENT * 3 / 2);

// Strips H.264-style emulation prevention: a 0x03 after two zero bytes.
// `precedingZeros`: zero bytes just before (the media's last ones, at most 2).
export function unescape(bytes, precedingZeros = 0) {
  const out = new Uint8Array(bytes.length);
  let n = 0, zeros = precedingZeros;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (zeros >= 2 && b === 3) { zeros = 0; continue; }
    out[n++] = b;
    zeros = b === 0 ? zeros + 1 : 0;
  }
  return out.subarray(0, n);
}

// The trailer at the end of an encoded frame: {element, mediaLength} (the element
// unescaped, not yet decoded), {problem} when the end says trailer but its length
// cannot be right, or null when the frame has none.
export function findTrailer(frame) {
  const count = frame.length;
  if (count < FOOTER) return null;
  for (let i = 0; i < 4; i++) if (frame[count - 4 + i] !== MAGIC[i]) return null;
  const low = frame[count - 6], high = frame[count - 5];
  if (!(low & 0x80) || !(high & 0x80)) return {problem: `trailer length bytes ${low}, ${high} lack their top bit`};
  const length = (low & 0x7f) | ((high & 0x7f) << 7);
  if (length < FIXED_SIZE || length > MAX_ESCAPED) return {problem: `trailer length ${length} is not in ${FIXED_SIZE}…${MAX_ESCAPED}`};
  if (length + FOOTER > count) return {problem: `trailer length ${length} is longer than the frame (${count} bytes)`};
  const mediaLength = count - FOOTER - length;
  let zeros = 0;
  for (let i = Math.max(0, mediaLength - 2); i < mediaLength; i++) zeros = frame[i] === 0 ? zeros + 1 : 0;
  return {element: unescape(frame.subarray(mediaLength, mediaLength + length), zeros), mediaLength};
}

// PoseCast's UUID for its user-data-unregistered SEI (docs/POSE_WIRE_FORMAT.md, "SEI").
export const SEI_UUID = [0x8b, 0x3e, 0x52, 0x0c, 0x6f, 0x1d, 0x4a, 0x55, 0x9e, 0x27, 0xc4, 0x31, 0x70, 0x5a, 0xd2, 0x16];
const NAL_SEI = 6;
const SEI_USER_DATA_UNREGISTERED = 5;

// The index just after the next start code (00 00 01) at or after `from`, or -1.
function nextStartCode(frame, from) {
  for (let i = from; i + 2 < frame.length; i++) {
    // A third byte above 1 rules out a start code beginning at i, i+1 or i+2.
    if (frame[i + 2] > 1) { i += 2; continue; }
    if (frame[i] === 0 && frame[i + 1] === 0 && frame[i + 2] === 1) return i + 3;
  }
  return -1;
}

// Our pose in an H.264 access unit in Annex B (start codes; what Chromium's encoded
// transform gives): {element} (unescaped, not yet decoded), {problem}, or null. Only
// the NAL units before the first slice are read: the publisher puts the SEI there,
// and the slices, the frame's bulk, need no scanning. Other SEIs (x264 writes its
// own user data, its version string) are skipped by their UUID.
export function findSEI(frame) {
  let start = nextStartCode(frame, 0);
  while (start >= 0 && start < frame.length) {
    const type = frame[start] & 0x1f;
    if (type >= 1 && type <= 5) return null;   // a slice: no pose SEI in this frame
    const next = nextStartCode(frame, start + 1);
    if (type === NAL_SEI) {
      let end = next < 0 ? frame.length : next - 3;
      while (end > start + 1 && frame[end - 1] === 0) end--;   // the next start code's leading zero
      const found = poseInSEI(unescape(frame.subarray(start + 1, end)));
      if (found) return found;
    }
    start = next;
  }
  return null;
}

// One SEI NAL unit's messages (its RBSP: header byte gone, escapes removed), walked for
// a user-data-unregistered one with our UUID; its bytes after the UUID are the element.
function poseInSEI(rbsp) {
  let i = 0;
  const number = () => {          // payload type and size: 0xff per 255, then the rest
    let n = 0;
    while (i < rbsp.length && rbsp[i] === 0xff) { n += 255; i++; }
    return i < rbsp.length ? n + rbsp[i++] : -1;
  };
  while (i < rbsp.length - 1) {   // the last byte is the RBSP's trailing bits (0x80)
    const type = number(), size = number();
    if (type < 0 || size < 0) return {problem: "an SEI message's header runs past its NAL unit"};
    if (i + size > rbsp.length) return {problem: `an SEI message of ${size} bytes runs past its NAL unit`};
    if (type === SEI_USER_DATA_UNREGISTERED && size >= SEI_UUID.length && SEI_UUID.every((b, k) => rbsp[i + k] === b)) {
      return {element: rbsp.subarray(i + SEI_UUID.length, i + size)};
    }
    i += size;
  }
  return null;
}

// Decodes a pose element with the wire format's strict rules; throws an Error that
// says which rule failed.
export function decodePose(bytes) {
  if (bytes.length < FIXED_SIZE || bytes.length > MAX_ELEMENT) throw new Error(`pose element of ${bytes.length} bytes`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint8(0);
  if (version !== 1) throw new Error(`pose version ${version}`);
  const flags = view.getUint8(1);
  if (flags & ~3) throw new Error(`reserved pose flag bits ${flags}`);
  const f = (offset) => view.getFloat32(offset, true);
  const pose = {
    late: (flags & 1) !== 0,
    missing: (flags & 2) !== 0,
    frameId: view.getUint32(2, true),
    captureTimeNs: view.getBigUint64(6, true),
    position: [f(14), f(18), f(22)],
    orientation: [f(26), f(30), f(34), f(38)],
    intrinsics: {fx: f(42), fy: f(46), cx: f(50), cy: f(54)},
    applicationBytes: bytes.length - FIXED_SIZE,
  };
  const floats = [...pose.position, ...pose.orientation, pose.intrinsics.fx, pose.intrinsics.fy, pose.intrinsics.cx, pose.intrinsics.cy];
  if (!floats.every(Number.isFinite)) throw new Error("non-finite value in the pose");
  const norm = Math.hypot(...pose.orientation);
  if (Math.abs(norm - 1) > 1e-3) throw new Error(`orientation norm ${norm.toFixed(4)} is not 1`);
  if (pose.intrinsics.fx <= 0 || pose.intrinsics.fy <= 0) throw new Error("focal length ≤ 0");
  pose.captureTimeMs = Number(pose.captureTimeNs / 1000000n) + Number(pose.captureTimeNs % 1000000n) / 1e6;
  return pose;
}

// Rotates v by the unit quaternion q = [x, y, z, w].
export function rotate(q, v) {
  const [x, y, z, w] = q;
  const tx = 2 * (y * v[2] - z * v[1]), ty = 2 * (z * v[0] - x * v[2]), tz = 2 * (x * v[1] - y * v[0]);
  return [v[0] + w * tx + (y * tz - z * ty), v[1] + w * ty + (z * tx - x * tz), v[2] + w * tz + (x * ty - y * tx)];
}

// The world ray through image point (u, v) ∈ [0, 1]² (top-left origin) of a frame
// taken with `pose`: camera looks down −Z, +Y up, intrinsics normalised.
export function ray(pose, u, v) {
  const k = pose.intrinsics;
  const d = [(u - k.cx) / k.fx, -(v - k.cy) / k.fy, -1];
  const length = Math.hypot(...d);
  return {origin: pose.position.slice(), direction: rotate(pose.orientation, d.map((c) => c / length))};
}

// Where a ray meets the plane n·p = offset (n need not be unit), in front of the
// camera; null when it runs parallel or the plane is behind.
export function meetPlane(r, normal, offset) {
  const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  const denominator = dot(normal, r.direction);
  if (Math.abs(denominator) < 1e-9) return null;
  const t = (offset - dot(normal, r.origin)) / denominator;
  if (!(t > 0) || !Number.isFinite(t)) return null;
  return r.origin.map((c, i) => c + r.direction[i] * t);
}

// The image point (u, v) where `pose` sees world point p, and its depth; null behind.
export function project(pose, p) {
  const [x, y, z, w] = pose.orientation;
  const rel = [p[0] - pose.position[0], p[1] - pose.position[1], p[2] - pose.position[2]];
  const c = rotate([-x, -y, -z, w], rel);
  const depth = -c[2];
  if (!(depth > 1e-3)) return null;
  const k = pose.intrinsics;
  return {u: k.cx + k.fx * c[0] / depth, v: k.cy - k.fy * c[1] / depth, depth};
}

// The types of an H.264 access unit's NAL units (Annex B), in order: 7 SPS, 8 PPS, 6 SEI,
// 9 access unit delimiter, 5 an IDR slice, 1 a non-IDR slice.
export function nalTypes(frame) {
  const types = [];
  for (let start = nextStartCode(frame, 0); start >= 0 && start < frame.length; start = nextStartCode(frame, start + 1)) {
    types.push(frame[start] & 0x1f);
  }
  return types;
}

// An encoded H.264 frame with parameter sets and no slice: what Chromium hands the
// transform as a frame of its own before a keyframe (SPS + PPS, 39 bytes from x264 at
// 640×480), with the IDR's RTP timestamp and no pose of its own (the IDR that follows
// carries it; docs/POSE_WIRE_FORMAT.md, "Looking a pose up").
export function isParameterSetsOnly(frame) {
  const types = nalTypes(frame);
  return types.length > 0 && types.every((t) => t === 7 || t === 8 || t === 9 || t === 13 || t === 15);
}
