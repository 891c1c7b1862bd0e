// The console's receive transform (RTCRtpScriptTransform): reads each encoded video
// frame's own pose before the decoder sees the frame, and posts it to the page keyed by
// the frame's RTP timestamp as this browser received it (what requestVideoFrameCallback
// reports for the frame on screen; an SFU that rewrites timestamps rewrites both alike).
//
// Where the pose is (its carrier): a trailer at the frame's end, which is stripped (the
// direct path, and VP8 through an SFU), or, through an SFU (the page's option
// `throughSFU`), an SEI inside an H.264 frame, which stays (decoders skip user data).
// Frames without a pose pass untouched and are counted; with H.264, the encoded frame of
// parameter sets alone (SPS + PPS) that Chromium hands over before a keyframe, with the
// keyframe's RTP timestamp, is counted apart (`parameterSets`): it never has a pose.
// A module worker (`new Worker(…, {type: "module"})`).
import * as PoseCast from "./pose.js";

let counts = freshCounts();
let throughSFU = false;
let lastReport = 0;

function freshCounts() {
  return {frames: 0, withTrailer: 0, withSEI: 0, parameterSets: 0, malformed: 0, stripNanos: 0};
}

function report(force) {
  const now = performance.now();
  if (!force && now - lastReport < 1000) return;
  lastReport = now;
  self.postMessage({type: "counts", counts});
}

// An H.264 frame, by the metadata's codec where the browser gives it, else by its
// Annex B start (a VP8 frame's first bytes are its frame tag, never 00 00 01).
function isH264(data, metadata) {
  if (metadata.mimeType) return metadata.mimeType.toLowerCase() === "video/h264";
  return data.length > 3 && data[0] === 0 && data[1] === 0 && (data[2] === 1 || (data[2] === 0 && data[3] === 1));
}

// The frame's pose, still encoded: {carrier, element, mediaLength?}, {carrier, problem}
// or null. Only a trailer has a mediaLength: it is cut off the frame.
function findPose(data, metadata) {
  const trailer = PoseCast.findTrailer(data);
  if (trailer) return Object.assign({carrier: "trailer"}, trailer);
  if (!throughSFU || !isH264(data, metadata)) return null;
  const sei = PoseCast.findSEI(data);
  return sei ? Object.assign({carrier: "sei"}, sei) : null;
}

function readPose(frame, controller) {
  const started = performance.now();
  counts.frames += 1;
  const data = new Uint8Array(frame.data);
  const metadata = frame.getMetadata();
  const rtpTimestamp = metadata.rtpTimestamp ?? frame.timestamp;
  const found = findPose(data, metadata);
  if (found && found.element) {
    // The decoder gets the frame without the trailer.
    if (found.mediaLength !== undefined) frame.data = data.slice(0, found.mediaLength).buffer;
    try {
      const pose = PoseCast.decodePose(found.element);
      counts[found.carrier === "sei" ? "withSEI" : "withTrailer"] += 1;
      self.postMessage({type: "pose", rtpTimestamp, pose, carrier: found.carrier,
                        receivedAt: performance.timeOrigin + performance.now()});
    } catch (error) {
      counts.malformed += 1;
      self.postMessage({type: "problem", rtpTimestamp, text: `pose in the ${found.carrier}: ${error.message}`});
    }
  } else if (found && found.problem) {
    counts.malformed += 1;
    self.postMessage({type: "problem", rtpTimestamp, text: `${found.carrier}: ${found.problem}`});
  } else if (isH264(data, metadata) && PoseCast.isParameterSetsOnly(data)) {
    counts.parameterSets += 1;
  }
  counts.stripNanos += Math.round((performance.now() - started) * 1e6);
  controller.enqueue(frame);
  report(false);
}

self.onrtctransform = (event) => {
  const transformer = event.transformer;
  counts = freshCounts();
  throughSFU = !!(transformer.options && transformer.options.throughSFU);
  transformer.readable
    .pipeThrough(new TransformStream({transform: readPose}))
    .pipeTo(transformer.writable)
    .catch((error) => self.postMessage({type: "problem", text: `transform stopped: ${error}`}));
};
