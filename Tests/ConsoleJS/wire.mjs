// Test helpers: pose elements, trailers and SEIs written the way the publisher writes
// them (docs/POSE_WIRE_FORMAT.md), so the console's readers are checked against the
// format, not against themselves.

export const SEI_UUID = [0x8b, 0x3e, 0x52, 0x0c, 0x6f, 0x1d, 0x4a, 0x55, 0x9e, 0x27, 0xc4, 0x31, 0x70, 0x5a, 0xd2, 0x16];

// The 58 fixed bytes (and `extra` application bytes) of a pose.
export function poseElement({frameId = 7, captureNs = 1_700_000_000_123_456_789n, flags = 0, version = 1,
                             position = [1, 2, 3], orientation = [0, 0, 0, 1],
                             intrinsics = [0.9, 1.2, 0.5, 0.5], extra = []} = {}) {
  const bytes = new Uint8Array(58 + extra.length);
  const view = new DataView(bytes.buffer);
  view.setUint8(0, version);
  view.setUint8(1, flags);
  view.setUint32(2, frameId, true);
  view.setBigUint64(6, captureNs, true);
  [...position, ...orientation, ...intrinsics].forEach((v, i) => view.setFloat32(14 + 4 * i, v, true));
  bytes.set(extra, 58);
  return bytes;
}

// H.264 emulation prevention: after two zero bytes, a byte ≤ 3 gets a 0x03 before it.
export function escape(bytes, precedingZeros = 0) {
  const out = [];
  let zeros = precedingZeros;
  for (const b of bytes) {
    if (zeros >= 2 && b <= 3) { out.push(3); zeros = 0; }
    out.push(b);
    zeros = b === 0 ? zeros + 1 : 0;
  }
  return out;
}

// An encoded frame with the pose trailer after its media bytes.
export function withTrailer(media, element) {
  let zeros = 0;
  for (let i = Math.max(0, media.length - 2); i < media.length; i++) zeros = media[i] === 0 ? zeros + 1 : 0;
  const escaped = escape(element, zeros);
  const length = escaped.length;
  return Uint8Array.from([...media, ...escaped, 0x80 | (length & 0x7f), 0x80 | (length >> 7), 0x50, 0x43, 0x50, 0x54]);
}

// One user-data-unregistered SEI message (payload type 5) with this UUID and body.
function seiMessage(uuid, body) {
  const payload = [...uuid, ...body];
  const size = [];
  let n = payload.length;
  while (n >= 255) { size.push(0xff); n -= 255; }
  size.push(n);
  return [5, ...size, ...payload];
}

// An SEI NAL unit (start code, header 0x06, escaped RBSP with trailing bits) of messages.
export function seiNal(...messages) {
  return [0, 0, 0, 1, 0x06, ...escape([...messages.flat(), 0x80])];
}

export const poseSEI = (element) => seiNal(seiMessage(SEI_UUID, [...element]));
export const otherSEI = (text) => seiNal(seiMessage([...Array(16).keys()], [...new TextEncoder().encode(text)]));

// A sequence and a picture parameter set shaped as x264's (Constrained Baseline, 640×480; the
// publisher's own pair is 39 bytes), the SPS with two emulation-prevention bytes.
export const SPS = [0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x1e, 0xda, 0x02, 0x80, 0xf6, 0x84, 0x00, 0x00, 0x03, 0x00, 0x04,
                    0x00, 0x00, 0x03, 0x00, 0xf0, 0x3c, 0x58, 0xba, 0x80, 0x00, 0x00, 0x00, 0x01];
export const PPS = [0x68, 0xce, 0x0f, 0xc8];
export const parameterSets = () => Uint8Array.from([...SPS.slice(0, -4), 0, 0, 0, 1, ...PPS]);
export const idrSlice = (bytes = 40) => [0, 0, 0, 1, 0x65, ...Array.from({length: bytes}, (_, i) => (i * 37 + 11) & 0xff || 1)];
