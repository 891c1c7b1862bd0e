// The console's receive transform (RTCRtpScriptTransform): each encoded video frame
// loses its pose trailer before the decoder sees it, and its pose goes to the page
// keyed by the frame's RTP timestamp (what requestVideoFrameCallback reports for the
// frame on screen). Frames without a trailer pass untouched and are counted.
"use strict";
importScripts("pose.js");

let counts = {frames: 0, withTrailer: 0, malformed: 0, stripNanos: 0};
let lastReport = 0;

function report(force) {
  const now = performance.now();
  if (!force && now - lastReport < 1000) return;
  lastReport = now;
  self.postMessage({type: "counts", counts});
}

function strip(frame, controller) {
  const started = performance.now();
  counts.frames += 1;
  const data = new Uint8Array(frame.data);
  const found = PoseCast.findTrailer(data);
  const rtpTimestamp = frame.getMetadata().rtpTimestamp ?? frame.timestamp;
  if (found && found.element) {
    // The decoder gets the frame without the trailer.
    frame.data = data.slice(0, found.mediaLength).buffer;
    try {
      const pose = PoseCast.decodePose(found.element);
      counts.withTrailer += 1;
      self.postMessage({type: "pose", rtpTimestamp, pose, receivedAt: performance.timeOrigin + performance.now()});
    } catch (error) {
      counts.malformed += 1;
      self.postMessage({type: "problem", rtpTimestamp, text: `pose in the trailer: ${error.message}`});
    }
  } else if (found && found.problem) {
    counts.malformed += 1;
    self.postMessage({type: "problem", rtpTimestamp, text: found.problem});
  }
  counts.stripNanos += Math.round((performance.now() - started) * 1e6);
  controller.enqueue(frame);
  report(false);
}

self.onrtctransform = (event) => {
  const transformer = event.transformer;
  counts = {frames: 0, withTrailer: 0, malformed: 0, stripNanos: 0};
  transformer.readable
    .pipeThrough(new TransformStream({transform: strip}))
    .pipeTo(transformer.writable)
    .catch((error) => self.postMessage({type: "problem", text: `transform stopped: ${error}`}));
};
