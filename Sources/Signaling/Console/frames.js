// The frames on screen and their poses: the pose worker's messages, each presented frame
// (requestVideoFrameCallback) looked up in the pose book by its own RTP timestamp, its
// pixels copied as it is presented, the frozen frame, where the picture sits on the stage,
// and the annotations drawn over a frozen frame.

import * as PoseCast from "./pose.js";
import {PoseBook} from "./pose-book.js";

const PRESENTED_KEPT = 3000;

export function freshPresented() {
  // withPose counts frames whose pose was known when presented or came within the wait;
  // late: those of them whose pose came after the frame was presented.
  return {count: 0, withPose: 0, late: 0, newerThanCallback: 0};
}

export function createFrames(app) {
  const {state, $} = app;
  const book = new PoseBook();
  state.poses = book.entries;
  const copy = document.createElement("canvas");   // the frame on screen, copied as it is presented
  const copyContext = copy.getContext("2d", {willReadFrequently: true});
  let frameCallback = null;

  function onWorkerMessage(event) {
    const m = event.data;
    if (m.type === "pose") {
      book.add(m.rtpTimestamp, {pose: m.pose, receivedAt: m.receivedAt});
      state.poseCarrier = m.carrier;
    } else if (m.type === "counts") {
      state.worker = m.counts;
    } else if (m.type === "problem") {
      app.say(`A frame's pose could not be read: ${m.text}`, "error");
    }
  }

  // The frame the video element holds now, as a VideoFrame: its own RTP timestamp says
  // which frame it is. drawImage(video) in a frame callback may draw a newer frame than
  // the callback's metadata describes (the decoder delivers frames between the
  // compositor's callback and the draw), so pixels and pose are taken from this one
  // object. Null where the browser has no VideoFrame(video) or no rtpTimestamp in its
  // metadata: the callback's metadata then.
  function heldFrame(video) {
    if (typeof VideoFrame !== "function") return null;
    try {
      const frame = new VideoFrame(video);
      const rtp = frame.metadata ? frame.metadata().rtpTimestamp : undefined;
      if (rtp === undefined) { frame.close(); return null; }
      return {frame, rtpTimestamp: rtp, width: frame.displayWidth, height: frame.displayHeight};
    } catch (error) {
      return null;
    }
  }

  // A frame presented before its pose: the pose, when it comes within the wait, is the
  // frame's (counted, logged, its latency measured, a frozen copy redrawn).
  function awaitPose(record, counter, logEntry, shownAt) {
    record.posePending = book.whenPose(record.rtpTimestamp).then((entry) => {
      record.posePending = null;
      if (!entry) return null;
      record.pose = entry.pose;
      counter.withPose += 1;
      counter.late = (counter.late || 0) + 1;
      logEntry.frameId = entry.pose.frameId;
      logEntry.captureTimeNs = entry.pose.captureTimeNs.toString();
      logEntry.lateMs = Math.round(performance.now() - record.presentedAt);
      state.latencies.push({at: shownAt, ms: shownAt - entry.pose.captureTimeMs});
      if (state.frozen === record) drawMarks();
      return entry.pose;
    });
  }

  function onPresented(now, callbackMetadata) {
    const video = $("video");
    frameCallback = video.requestVideoFrameCallback(onPresented);
    const held = heldFrame(video);
    const metadata = held ? {rtpTimestamp: held.rtpTimestamp, width: held.width, height: held.height,
                             expectedDisplayTime: callbackMetadata.expectedDisplayTime} : callbackMetadata;
    const counter = state.presented;
    if (held && held.rtpTimestamp !== callbackMetadata.rtpTimestamp) counter.newerThanCallback += 1;
    const entry = book.get(metadata.rtpTimestamp);
    const pose = entry ? entry.pose : null;
    counter.count += 1;
    if (pose) counter.withPose += 1;
    const logEntry = {rtpTimestamp: metadata.rtpTimestamp, frameId: pose ? pose.frameId : null,
                      captureTimeNs: pose ? pose.captureTimeNs.toString() : null};
    state.presentedLog.push(logEntry);
    if (state.presentedLog.length > PRESENTED_KEPT) state.presentedLog.splice(0, state.presentedLog.length - PRESENTED_KEPT);
    const shownAt = performance.timeOrigin + (metadata.expectedDisplayTime || now);
    state.fpsTimes.push(shownAt);
    if (pose) state.latencies.push({at: shownAt, ms: shownAt - pose.captureTimeMs});
    if (pose) app.transport.proveReception(pose);
    if (copy.width !== metadata.width || copy.height !== metadata.height) {
      copy.width = metadata.width; copy.height = metadata.height;
      document.documentElement.style.setProperty("--video-aspect", `${metadata.width} / ${metadata.height}`);
    }
    // The pixels of this very frame, for a click that comes before the next one.
    if (held) {
      copyContext.drawImage(held.frame, 0, 0, copy.width, copy.height);
      held.frame.close();
    } else {
      copyContext.drawImage(video, 0, 0, copy.width, copy.height);
    }
    const record = {rtpTimestamp: metadata.rtpTimestamp, pose, width: metadata.width, height: metadata.height,
                    presentedAt: performance.now(), posePending: null};
    if (!pose) awaitPose(record, counter, logEntry, shownAt);
    state.current = record;
    $("stage-note").hidden = true;
  }

  // A new video track: one callback chain per page.
  function present(video) {
    if (frameCallback !== null) video.cancelVideoFrameCallback(frameCallback);
    frameCallback = video.requestVideoFrameCallback(onPresented);
  }

  // The frame a click lands on: the frozen one, else the one on screen (whose pixels
  // were copied when it was presented).
  function clickedFrame() { return state.frozen || state.current; }

  // A frame's pose: at once, or when it comes within the wait, or null.
  function poseOf(frame) {
    if (!frame) return Promise.resolve(null);
    if (frame.pose) return Promise.resolve(frame.pose);
    return frame.posePending || Promise.resolve(null);
  }

  function setFrozen(on) {
    const canvas = $("frozen");
    if (on && state.current) {
      canvas.width = copy.width; canvas.height = copy.height;
      canvas.getContext("2d").drawImage(copy, 0, 0);
      state.frozen = state.current;   // the same record: a pose that comes late is the frozen frame's too
      canvas.hidden = false;
    } else {
      state.frozen = null;
      canvas.hidden = true;
    }
    $("freeze").textContent = state.frozen ? "Back to live" : "Freeze frame";
    $("stage-freeze").textContent = state.frozen ? "Live" : "Freeze";
    $("stage").classList.toggle("frozen", !!state.frozen);
    drawMarks();
  }

  // Where the picture sits in the stage (object-fit: contain), in page pixels.
  function pictureRect(frame) {
    const stage = $("stage").getBoundingClientRect();
    const w = frame ? frame.width : 640, h = frame ? frame.height : 480;
    const scale = Math.min(stage.width / w, stage.height / h);
    return {left: stage.left + (stage.width - w * scale) / 2, top: stage.top + (stage.height - h * scale) / 2,
            width: w * scale, height: h * scale};
  }

  // A page point's place in the picture, 0…1 each way (outside: beside the picture).
  function normalisedPoint(x, y, frame) {
    const rect = pictureRect(frame);
    return {x: (x - rect.left) / rect.width, y: (y - rect.top) / rect.height};
  }

  // While frozen: the annotations as the frozen frame's pose sees them (the publisher
  // draws them into live frames itself).
  function drawMarks() {
    const canvas = $("marks");
    const stage = $("stage").getBoundingClientRect();
    canvas.width = Math.round(stage.width); canvas.height = Math.round(stage.height);
    const context = canvas.getContext("2d");
    context.clearRect(0, 0, canvas.width, canvas.height);
    const frame = state.frozen;
    if (!frame || !frame.pose) return;
    const rect = pictureRect(frame);
    for (const a of state.annotations) {
      const p = PoseCast.project(frame.pose, [a.position.x, a.position.y, a.position.z]);
      if (!p) continue;
      const x = rect.left - stage.left + p.u * rect.width, y = rect.top - stage.top + p.v * rect.height;
      // Behind something nearer (the publisher knows its depth): dashed and faded, as the video draws it.
      const hidden = state.hiddenAnnotations.has(a.id);
      context.globalAlpha = hidden ? 0.6 : 1;
      context.setLineDash(hidden ? [4, 3] : []);
      context.strokeStyle = a.color || "#ff00ff"; context.lineWidth = 2;
      context.beginPath(); context.arc(x, y, 7, 0, 2 * Math.PI); context.stroke();
      if (!hidden) {
        context.beginPath(); context.moveTo(x - 11, y); context.lineTo(x + 11, y); context.moveTo(x, y - 11); context.lineTo(x, y + 11); context.stroke();
      }
      context.globalAlpha = 1; context.setLineDash([]);
    }
  }

  // A ring where the stage was touched or clicked, for a moment.
  function flashMark(x, y) {
    const stage = $("stage").getBoundingClientRect();
    const canvas = $("marks");
    if (!state.frozen) { canvas.width = Math.round(stage.width); canvas.height = Math.round(stage.height); }
    const context = canvas.getContext("2d");
    context.strokeStyle = "#ffffff"; context.lineWidth = 1.5;
    context.beginPath(); context.arc(x - stage.left, y - stage.top, 12, 0, 2 * Math.PI); context.stroke();
    if (!state.frozen) setTimeout(() => { if (!state.frozen) context.clearRect(0, 0, canvas.width, canvas.height); }, 400);
  }

  // The last session's frames and poses are no one's now.
  function forget() {
    book.clear();
    state.current = null;
    if (state.frozen) setFrozen(false);
    state.fpsTimes = [];
    state.latencies = [];
    state.presented = freshPresented();
    state.poseCarrier = null;
  }

  return {copy, book, onWorkerMessage, present, clickedFrame, poseOf, setFrozen, pictureRect, normalisedPoint,
          drawMarks, flashMark, forget};
}
