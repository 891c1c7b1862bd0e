// The camera menu (right click, or a long press on a touch screen), for experts only:
// focus here (tapToAutoFocus, or locked), continuous auto focus; meter here with a mode
// and a hold time (5 s by default: metering locks only as long as asked); a metering
// mode alone; lock and unlock. It opens at the pointer, but always wholly on screen
// (placeMenu), scrolling inside itself when the screen is shorter than it.

export const MENU_MARGIN = 8;

// Where a menu of `size` opened at `anchor` goes inside `viewport` (all in CSS pixels):
// right of and below the anchor, flipped to its left or above it when it would leave
// the screen, and pushed inside when neither fits. `maxHeight` when taller than the screen.
export function placeMenu(anchor, size, viewport, margin = MENU_MARGIN) {
  const axis = (at, extent, room) => {
    if (extent > room - 2 * margin) return margin;
    const wanted = at + extent <= room - margin ? at : at - extent;
    return Math.min(Math.max(margin, wanted), room - margin - extent);
  };
  const maxHeight = viewport.height - 2 * margin;
  return {left: axis(anchor.x, Math.min(size.width, viewport.width - 2 * margin), viewport.width),
          top: axis(anchor.y, Math.min(size.height, maxHeight), viewport.height),
          maxHeight: size.height > maxHeight ? maxHeight : null};
}

export function createCameraMenu(app) {
  const {state, $} = app;
  const menu = $("menu");

  function open(x, y) {
    if (app.settings.role === "viewer") {
      app.say("Viewers watch: the camera's focus and metering are the experts'.", "info");
      return false;
    }
    const frame = app.frames.clickedFrame();
    const point = app.frames.normalisedPoint(x, y, frame);
    if (!(point.x >= 0 && point.x <= 1 && point.y >= 0 && point.y <= 1)) return false;
    menu.replaceChildren();
    const group = (text) => { const g = document.createElement("div"); g.className = "group"; g.textContent = text; menu.append(g); };
    const item = (text, action) => {
      const b = document.createElement("button");
      b.type = "button"; b.textContent = text; b.setAttribute("role", "menuitem");
      b.onclick = () => { close(); action(text); };
      menu.append(b);
    };
    const send = (message) => (label) => app.control.request(message(), {label});
    group("Focus");
    item("Focus here", send(() => ({type: "focus", point, mode: "tapToAutoFocus"})));
    item("Focus here and lock", send(() => ({type: "focus", point, mode: "tapToLockFocus"})));
    item("Continuous auto focus", send(() => ({type: "focus", point, mode: "auto"})));
    group("Metering");
    const mode = document.createElement("label");
    mode.innerHTML = 'Mode <select id="menu-mode"><option>spot</option><option>weighted</option><option>uniform</option></select>';
    const duration = document.createElement("label");
    // A lock only when asked for: by default metering here holds 5 s, then goes back to continuous.
    duration.innerHTML = 'Hold for <select id="menu-lock"><option value="5">5 s</option><option value="15">15 s</option><option value="60">60 s</option><option value="0">until unlocked</option></select>';
    menu.append(mode, duration);
    item("Meter here", send(() => {
      const message = {type: "meter", point, meteringMode: $("menu-mode").value};
      const seconds = Number($("menu-lock").value);
      if (seconds > 0) message.lockDuration = seconds;
      return message;
    }));
    item("Use this mode (no lock)", send(() => ({type: "meteringMode", mode: $("menu-mode").value})));
    item("Lock exposure, focus and white balance", send(() => ({type: "lock"})));
    item("Unlock (continuous metering)", send(() => ({type: "unlock"})));
    menu.hidden = false;
    menu.style.maxHeight = "";
    const size = menu.getBoundingClientRect();
    const place = placeMenu({x, y}, {width: size.width, height: size.height},
                            {width: document.documentElement.clientWidth, height: window.innerHeight});
    menu.style.left = `${place.left}px`; menu.style.top = `${place.top}px`;
    if (place.maxHeight !== null) menu.style.maxHeight = `${place.maxHeight}px`;
    state.menuOpenedAt = performance.now();
    return true;
  }

  function close() { menu.hidden = true; }
  function isOpen() { return !menu.hidden; }

  return {open, close, isOpen};
}
