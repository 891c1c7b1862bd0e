// Annotations: a click or tap on the frame on screen (or the frozen one) becomes an
// `annotate` request placed with that frame's own pose; the publisher's list is shown
// with a × on each; Delete removes the newest, Clear all.
//
// A frame presented before its pose arrived (pose-book.js) makes the click wait for it,
// up to the book's wait, before the click is refused with "no pose yet".

import * as PoseCast from "./pose.js";

export function createAnnotations(app) {
  const {state, $} = app;

  // What the tools say at the moment of the click (read before any wait for the pose).
  function choices() {
    return {mode: $("placement").value, kind: $("kind").value, color: $("color").value,
            label: $("label").value.trim(), plane: $("plane").value};
  }

  async function annotateAt(x, y) {
    const frame = app.frames.clickedFrame();
    const point = app.frames.normalisedPoint(x, y, frame);
    const click = {at: Date.now(), point, rtpTimestamp: frame ? frame.rtpTimestamp : null,
                   frameId: frame && frame.pose ? frame.pose.frameId : null, frozen: !!state.frozen, outcome: null};
    state.clicks.push(click);
    if (!(point.x >= 0 && point.x <= 1 && point.y >= 0 && point.y <= 1)) {
      click.outcome = {code: "outside", message: "the click is beside the picture"};
      return;
    }
    app.frames.flashMark(x, y);
    const chosen = choices();
    let pose = frame ? frame.pose : null;
    if (!pose && frame) {
      const started = performance.now();
      pose = await app.frames.poseOf(frame);
      click.waitedForPoseMs = Math.round(performance.now() - started);
    }
    if (!pose) {
      click.outcome = {code: "noPose", message: "this frame has no pose"};
      state.noPoseRefusals += 1;
      return app.say("This frame has no pose, so the click cannot be placed; try again on another frame.", "error");
    }
    click.frameId = pose.frameId;
    const message = {type: "annotate", frameId: pose.frameId, tap: point, kind: chosen.kind, color: chosen.color};
    if (chosen.label) message.label = chosen.label;
    const ray = PoseCast.ray(pose, point.x, point.y);
    let plane = [0, 1, 0, 0];
    if (chosen.mode === "plane") {
      plane = chosen.plane.split(",").map(Number);
      if (plane.length !== 4 || !plane.every(Number.isFinite) || Math.hypot(plane[0], plane[1], plane[2]) === 0) {
        click.outcome = {code: "badPlane", message: "the plane is not nx,ny,nz,d"};
        return app.say("The plane must be four numbers nx,ny,nz,d with a non-zero normal.", "error");
      }
    }
    const world = PoseCast.meetPlane(ray, plane.slice(0, 3), plane[3]);
    click.world = world;
    if (chosen.mode === "depth") {
      message.placement = "publisherDepth";
    } else if (chosen.mode === "auto") {
      message.placement = "auto";
      if (world) message.position = {x: world[0], y: world[1], z: world[2]};
    } else {
      if (!world) {
        click.outcome = {code: "noSurface", message: "the click's ray meets no plane in front of the camera"};
        return app.say("That point is above the horizon: its ray never meets the plane.", "error");
      }
      message.placement = "world";
      message.position = {x: world[0], y: world[1], z: world[2]};
    }
    click.request = app.control.request(message, {click});
  }

  // The list is drawn again on every "annotations" and "annotationVisibility" message,
  // several times a second. Its items are kept by annotation id and only their text is
  // changed: an item made anew would drop a click whose press and release fell on
  // either side of the redraw.
  function render() {
    const list = $("annotations");
    const kept = new Map();
    for (const item of list.children) kept.set(item.dataset.id, item);
    const wanted = state.annotations.map((a) => {
      const item = kept.get(a.id) || listItem(a);
      const p = a.position;
      const text = `${a.kind}${a.label ? ` “${a.label}”` : ""} at ${p.x.toFixed(2)}, ${p.y.toFixed(2)}, ${p.z.toFixed(2)} m`
        + (a.placement ? ` (${a.placement})` : "") + (state.hiddenAnnotations.has(a.id) ? ", hidden behind something nearer" : "");
      const label = item.querySelector(".text");
      if (label.textContent !== text) label.textContent = text;
      const swatch = item.querySelector(".swatch");
      const color = a.color || "#ff00ff";
      if (swatch.dataset.color !== color) { swatch.dataset.color = color; swatch.style.background = color; }
      return item;
    });
    // Items move only where the order changed; the gone ones go.
    wanted.forEach((item, index) => {
      if (list.children[index] !== item) list.insertBefore(item, list.children[index] || null);
    });
    while (list.children.length > wanted.length) list.lastElementChild.remove();
  }

  function listItem(a) {
    const item = document.createElement("li");
    item.dataset.id = a.id;
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    const text = document.createElement("span");
    text.className = "text";
    const remove = document.createElement("button");
    remove.textContent = "×"; remove.title = "Remove"; remove.type = "button";
    remove.onclick = () => app.control.request({type: "removeAnnotation", annotationId: a.id});
    item.append(swatch, text, remove);
    return item;
  }

  function removeNewest() {
    const newest = state.annotations[state.annotations.length - 1];
    if (newest) app.control.request({type: "removeAnnotation", annotationId: newest.id});
  }

  function clearAll() { app.control.request({type: "clearAnnotations"}); }

  // The last session's pins are gone with it (the publisher sends its list again).
  function forget() {
    state.annotations = [];
    state.hiddenAnnotations = new Set();
    render();
  }

  return {annotateAt, render, removeNewest, clearAll, forget};
}
