// The stage's input: a mouse clicks (annotate), right-clicks (camera menu) and turns the
// wheel (zoom on the point under the pointer); a finger taps (annotate), presses long
// (camera menu), and two fingers pinch (zoom, the pinched point kept in place). While a
// pinch lasts the picture is scaled on the page; when it ends one `zoom` request goes to
// the publisher and the page lets the publisher's zoomed frames take over.

export const LONG_PRESS_MS = 550;
export const TAP_SLOP_PX = 12;      // a finger that moves farther is not tapping
const CLICK_AFTER_TOUCH_MS = 800;   // the click a browser makes of a tap is ours already

export function wireStage(app, handlers) {
  const stage = app.$("stage"), view = app.$("view");
  const touches = new Map();        // pointerId → {x, y, startX, startY}
  let press = null;                 // one finger down: {id, x, y, timer, long}
  let pinch = null;                 // two fingers: {originX, originY, startDistance, scale, dx, dy}
  let lastTouchAt = -Infinity;

  const distance = (a, b) => Math.hypot(a.x - b.x, a.y - b.y);
  const middle = (a, b) => ({x: (a.x + b.x) / 2, y: (a.y + b.y) / 2});

  function cancelPress() {
    if (press) clearTimeout(press.timer);
    press = null;
  }

  function preview() {
    const box = stage.getBoundingClientRect();
    const ox = pinch.originX - box.left, oy = pinch.originY - box.top;
    // Scaled about the first midpoint, then moved with the fingers.
    view.style.transform = `translate(${pinch.dx + ox * (1 - pinch.scale)}px, ${pinch.dy + oy * (1 - pinch.scale)}px) scale(${pinch.scale})`;
  }

  function endPreview() {
    view.classList.add("settling");
    view.style.transform = "";
    setTimeout(() => view.classList.remove("settling"), 200);
  }

  stage.addEventListener("pointerdown", (event) => {
    if (event.target.closest("#stage-tools")) return;
    stage.focus({preventScroll: true});
    if (event.pointerType === "mouse") return;
    try { stage.setPointerCapture(event.pointerId); } catch { /* the pointer is gone already */ }
    touches.set(event.pointerId, {x: event.clientX, y: event.clientY, startX: event.clientX, startY: event.clientY});
    if (touches.size === 1) {
      if (handlers.menuOpen()) { handlers.closeMenu(); press = null; return; }
      const id = event.pointerId, x = event.clientX, y = event.clientY;
      press = {id, x, y, long: false, timer: setTimeout(() => {
        if (!press || press.id !== id) return;
        press.long = true;
        handlers.longPress(x, y);
      }, LONG_PRESS_MS)};
    } else if (touches.size === 2) {
      cancelPress();
      if (!handlers.mayZoom()) return;
      const [a, b] = [...touches.values()];
      const m = middle(a, b);
      pinch = {originX: m.x, originY: m.y, startDistance: Math.max(distance(a, b), 1), scale: 1, dx: 0, dy: 0};
    }
  });

  stage.addEventListener("pointermove", (event) => {
    const touch = touches.get(event.pointerId);
    if (!touch) return;
    touch.x = event.clientX; touch.y = event.clientY;
    if (press && press.id === event.pointerId && Math.hypot(touch.x - touch.startX, touch.y - touch.startY) > TAP_SLOP_PX) cancelPress();
    if (pinch && touches.size >= 2) {
      const [a, b] = [...touches.values()];
      const m = middle(a, b);
      pinch.scale = distance(a, b) / pinch.startDistance;
      pinch.dx = m.x - pinch.originX; pinch.dy = m.y - pinch.originY;
      preview();
    }
  });

  function lift(event, cancelled) {
    if (!touches.has(event.pointerId)) return;
    touches.delete(event.pointerId);
    lastTouchAt = performance.now();
    if (pinch) {
      if (touches.size < 2) {
        const done = pinch;
        pinch = null;
        endPreview();
        if (!cancelled) handlers.pinch(done.originX, done.originY, done.scale);
      }
      return;
    }
    if (press && press.id === event.pointerId) {
      const tapped = !press.long;
      cancelPress();
      if (tapped && !cancelled) handlers.tap(event.clientX, event.clientY);
    }
  }
  stage.addEventListener("pointerup", (event) => lift(event, false));
  stage.addEventListener("pointercancel", (event) => lift(event, true));

  stage.addEventListener("click", (event) => {
    if (event.target.closest("#stage-tools")) return;
    if (performance.now() - lastTouchAt < CLICK_AFTER_TOUCH_MS) return;   // a tap, handled on pointerup
    if (handlers.menuOpen()) { handlers.closeMenu(); return; }
    if (event.button === 0) handlers.tap(event.clientX, event.clientY);
  });
  stage.addEventListener("contextmenu", (event) => {
    event.preventDefault();
    // A long press on a touch screen makes a contextmenu too: the menu is open already.
    if (performance.now() - lastTouchAt < CLICK_AFTER_TOUCH_MS || touches.size > 0) return;
    handlers.longPress(event.clientX, event.clientY);
  });
  stage.addEventListener("wheel", (event) => {
    if (!handlers.mayZoom()) return;
    event.preventDefault();
    const notches = event.deltaMode === 0 ? -event.deltaY / 100 : -event.deltaY;
    if (notches !== 0) handlers.wheel(event.clientX, event.clientY, notches);
  }, {passive: false});
}
