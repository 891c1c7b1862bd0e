#ifndef CX11_H
#define CX11_H
/*
 * CX11: the one thing the expert's window needs from Xlib that GStreamer does not
 * do. Every name is prefixed `pcx_`.
 *
 *  - The X error handler. Xlib's default handler prints the error and calls
 *    exit(1): a window destroyed under the video sink (`xdotool windowclose`, a
 *    window manager killing it) made the subscriber die with "X Error of failed
 *    request: BadDrawable … X_ShmPutImage". The handler installed here
 *    reports each error to the callback and lets the process go on; Xlib has no
 *    per-display handler, so it is process-wide, installed once.
 */

/* Called on whichever thread made the failing request (a sink's), with the X error
 * code (3 BadWindow, 9 BadDrawable …) and the request's major opcode. Keep it quick
 * and never call Xlib from it. */
typedef void (*pcx_error_report)(unsigned char error_code, unsigned char request_code);

/* Installs the handler (idempotent: the last report given wins). Returns 0 when this
 * build has no Xlib. */
int pcx_install_error_handler(pcx_error_report report);

/*
 *  - The expert's window itself (window.c). glimagesink makes a window of its own per
 *    sink, so a session's end took the window away (after 5 s without frames) and the
 *    next session opened a new one elsewhere, at the default size, titled "OpenGL
 *    renderer"; its HUD could only be drawn into the decoded picture, at the stream's
 *    resolution (unreadable in a small window, blurred at 320×240) and only when a frame
 *    arrived; and its software GL (llvmpipe, where there is no GPU) cost 46 % of a core
 *    at 640×480. This is one top-level window for the whole run, named and classed,
 *    with a video child that shows each frame as given (already scaled to fit and in
 *    the server's 32-bit pixels, by the pipeline: one pass, no GL) through MIT-SHM, a
 *    HUD child drawn here at the window's resolution whenever its text changes, and a
 *    backdrop text where no picture covers the window. Its own Display connection and
 *    one thread (`serve`) read its keys, presses, close button and destruction, and
 *    redraw on Expose; frames are drawn on the caller's thread under a lock of their
 *    own.
 */

/* Xlib's threads: before any other Xlib call of the process (libX11 1.8 does it by
 * itself in XOpenDisplay; older ones need it). Returns 0 on failure. */
int pcx_init_threads(void);

typedef struct pcx_window pcx_window;

#define PCX_WINDOW_KEY_PRESS 1              /* `name`: the key's X keysym name ("q", "Escape") */
#define PCX_WINDOW_KEY_RELEASE 2
#define PCX_WINDOW_CLOSED 3                 /* `name`: why, in words */
#define PCX_WINDOW_PRESS 4                  /* a button (X numbers: 4 and 5 the wheel); `name`: its number;
                                             * x, y: the pixel's centre in the frame drawn last,
                                             * normalised, or -1 off the picture (HUD, border, backdrop);
                                             * tag: that frame's tag (pcx_window_draw_frame), 0 off it */

/* Called on the window's thread; `name` lives only for the call; x and y are -1 and tag
 * 0 but for a press on the picture. Keep it quick and never call pcx_window_close from it (the others may be
 * called). */
typedef void (*pcx_window_event)(void *context, int kind, const char *name, double x, double y,
                                 unsigned long long tag);

/* Opens the window on $DISPLAY and starts its thread; NULL when there is no display.
 * `context` is passed to `callback` until pcx_window_close returns (the caller owns it
 * and frees it after that). */
pcx_window *pcx_window_open(int width, int height, const char *title, const char *res_name, const char *res_class,
                            pcx_window_event callback, void *context);

/* The top-level window's id (the one a window manager frames). */
unsigned long pcx_window_xid(pcx_window *window);

/* 1 when the screen's default visual takes BGRx frames as they are (24-bit TrueColor,
 * red 0xFF0000, green 0xFF00, blue 0xFF: every X server of today); 0 and the caller
 * draws no frames here. */
int pcx_window_can_draw(pcx_window *window);

/* The window's size now (the frames' scaling follows it). */
void pcx_window_size(pcx_window *window, int *width, int *height);

/* Shows one frame of BGRx pixels (`stride` bytes a row), centred with black around it,
 * and keeps it for redraws; any thread (a lock serialises them). The pixels are copied
 * before it returns. `tag` comes back with a press on this frame, so the press is matched
 * to the frame it fell on (its pose), not to one drawn since. Returns 0 when it could not
 * (the window is gone, no image could be made). */
int pcx_window_draw_frame(pcx_window *window, const unsigned char *pixels, int width, int height, int stride,
                          unsigned long long tag);

/* The HUD's text, lines separated by '\n', wrapped to the window's width; "" hides it. */
void pcx_window_set_hud(pcx_window *window, const char *text);

/* What the window says where no picture covers it ("" for nothing). */
void pcx_window_set_backdrop(pcx_window *window, const char *text);

/* Stops the thread (no callback after this returns), destroys the window, closes the
 * connection and frees everything. */
void pcx_window_close(pcx_window *window);

#endif
