// The console's pose readers (Sources/Signaling/Console/pose.js) against the wire format:
// the trailer, the SEI, the element's strict rules, the parameter-sets-only frame.
import {test} from "node:test";
import assert from "node:assert/strict";
import * as PoseCast from "../../Sources/Signaling/Console/pose.js";
import {poseElement, escape, withTrailer, poseSEI, otherSEI, parameterSets, idrSlice, seiNal} from "./wire.mjs";

test("a trailer after VP8-like media: found, the media's length right, the pose decoded", () => {
  const media = Uint8Array.from({length: 300}, (_, i) => (i * 7) & 0xff);
  const frame = withTrailer(media, poseElement({frameId: 4242}));
  const found = PoseCast.findTrailer(frame);
  assert.equal(found.mediaLength, 300);
  const pose = PoseCast.decodePose(found.element);
  assert.equal(pose.frameId, 4242);
  assert.equal(pose.captureTimeNs, 1_700_000_000_123_456_789n);
  assert.deepEqual(pose.position, [1, 2, 3]);
  assert.equal(pose.late, false);
  assert.ok(Math.abs(pose.intrinsics.fx - 0.9) < 1e-6);
});

test("a trailer whose element needs escaping, after media ending in zeros", () => {
  // Frame id 0 and zero position bytes make runs of zeros; the media's last two zeros count.
  const element = poseElement({frameId: 0x00010000, position: [0, 0, 0], captureNs: 0n});
  const media = Uint8Array.from([9, 9, 0, 0]);
  const frame = withTrailer(media, element);
  assert.ok(frame.length > media.length + element.length + 6, "the element was escaped");
  const found = PoseCast.findTrailer(frame);
  assert.equal(found.mediaLength, 4);
  assert.deepEqual([...found.element], [...element]);
  assert.equal(PoseCast.decodePose(found.element).frameId, 0x00010000);
});

test("no magic: no trailer; a malformed length: a problem, not a pose", () => {
  assert.equal(PoseCast.findTrailer(Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8])), null);
  assert.equal(PoseCast.findTrailer(Uint8Array.from([0x50, 0x43])), null);
  const noTopBit = Uint8Array.from([...new Array(70).fill(1), 60, 0x80, 0x50, 0x43, 0x50, 0x54]);
  assert.match(PoseCast.findTrailer(noTopBit).problem, /top bit/);
  const tooShort = Uint8Array.from([...new Array(70).fill(1), 0x80 | 20, 0x80, 0x50, 0x43, 0x50, 0x54]);
  assert.match(PoseCast.findTrailer(tooShort).problem, /not in 58/);
  const pastTheFrame = Uint8Array.from([...new Array(10).fill(1), 0x80 | 60, 0x80, 0x50, 0x43, 0x50, 0x54]);
  assert.match(PoseCast.findTrailer(pastTheFrame).problem, /longer than the frame/);
});

test("the element's strict rules", () => {
  assert.throws(() => PoseCast.decodePose(poseElement({version: 2})), /version 2/);
  assert.throws(() => PoseCast.decodePose(poseElement({flags: 4})), /reserved pose flag/);
  assert.throws(() => PoseCast.decodePose(poseElement({orientation: [0, 0, 0, 2]})), /norm/);
  assert.throws(() => PoseCast.decodePose(poseElement({intrinsics: [0, 1, 0.5, 0.5]})), /focal/);
  assert.throws(() => PoseCast.decodePose(poseElement({position: [NaN, 0, 0]})), /non-finite/);
  assert.throws(() => PoseCast.decodePose(poseElement().subarray(0, 57)), /57 bytes/);
  const flagged = PoseCast.decodePose(poseElement({flags: 3, extra: [1, 2, 3]}));
  assert.equal(flagged.late, true);
  assert.equal(flagged.missing, true);
  assert.equal(flagged.applicationBytes, 3);
});

test("an SEI before the first slice, after x264's own user data: found by its UUID", () => {
  const element = poseElement({frameId: 99, position: [0, 0, 0]});
  const frame = Uint8Array.from([...parameterSets(), ...otherSEI("x264 - core 164"), ...poseSEI(element), ...idrSlice()]);
  const found = PoseCast.findSEI(frame);
  assert.deepEqual([...found.element], [...element]);
  assert.equal(PoseCast.decodePose(found.element).frameId, 99);
});

test("an SEI with a payload over 255 bytes (0xff size bytes)", () => {
  const element = poseElement({extra: new Array(190).fill(0x41)});
  const frame = Uint8Array.from([...poseSEI(element), ...idrSlice()]);
  assert.equal(PoseCast.decodePose(PoseCast.findSEI(frame).element).applicationBytes, 190);
});

test("no pose SEI: null; one after the first slice is not looked for; a cut message is a problem", () => {
  assert.equal(PoseCast.findSEI(Uint8Array.from([...otherSEI("x264"), ...idrSlice()])), null);
  assert.equal(PoseCast.findSEI(Uint8Array.from([...idrSlice(), ...poseSEI(poseElement())])), null);
  const cut = Uint8Array.from([...seiNal([5, 200, 1, 2, 3]), ...idrSlice()]);
  assert.match(PoseCast.findSEI(cut).problem, /runs past/);
});

test("the frame of parameter sets alone (SPS + PPS, no slice, no trailer) is told apart", () => {
  const sets = parameterSets();
  assert.deepEqual(PoseCast.nalTypes(sets), [7, 8]);
  assert.equal(PoseCast.isParameterSetsOnly(sets), true);
  assert.equal(PoseCast.findTrailer(sets), null);
  assert.equal(PoseCast.findSEI(sets), null);
  const keyframe = Uint8Array.from([...sets, ...idrSlice()]);
  assert.deepEqual(PoseCast.nalTypes(keyframe), [7, 8, 5]);
  assert.equal(PoseCast.isParameterSetsOnly(keyframe), false);
  assert.equal(PoseCast.isParameterSetsOnly(Uint8Array.from([1, 2, 3])), false);
});

test("unescape undoes escape, with zeros carried in from before", () => {
  const bytes = Uint8Array.from([0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 7, 0, 0]);
  assert.deepEqual([...PoseCast.unescape(Uint8Array.from(escape(bytes)))], [...bytes]);
  assert.deepEqual([...PoseCast.unescape(Uint8Array.from(escape([1, 2], 2)), 2)], [1, 2]);
});

test("a click's ray meets the ground where the pose projects that point", () => {
  // A camera 2 m up looking straight down (−Z of the camera onto −Y of the world).
  const s = Math.SQRT1_2;
  const pose = {position: [0, 2, 0], orientation: [-s, 0, 0, s], intrinsics: {fx: 1, fy: 1, cx: 0.5, cy: 0.5}};
  const hit = PoseCast.meetPlane(PoseCast.ray(pose, 0.7, 0.4), [0, 1, 0], 0);
  const back = PoseCast.project(pose, hit);
  assert.ok(Math.abs(back.u - 0.7) < 1e-9 && Math.abs(back.v - 0.4) < 1e-9);
  assert.ok(Math.abs(back.depth - 2) < 1e-9);
  assert.equal(PoseCast.meetPlane(PoseCast.ray(pose, 0.5, 0.5), [0, 1, 0], 5), null, "a plane behind the camera");
});
