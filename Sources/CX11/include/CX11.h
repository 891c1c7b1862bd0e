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
 *    arrived. This is one top-level window for the whole run, named and classed, that
 *    each session's sink draws into (GstVideoOverlay's window handle: a video child
 *    filling it, in which glimagesink makes its own child window), with a HUD child
 *    drawn here at the window's resolution whenever its text changes, and a backdrop
 *    text where no picture covers the window. Its own Display connection and one
 *    thread (`serve`) do all of its drawing and read its keys, its close button and
 *    its destruction.
 */

/* Xlib's threads: before any other Xlib call of the process (libX11 1.8 does it by
 * itself in XOpenDisplay; older ones need it). Returns 0 on failure. */
int pcx_init_threads(void);

typedef struct pcx_window pcx_window;

#define PCX_WINDOW_KEY_PRESS 1              /* `name`: the key's X keysym name ("q", "Escape") */
#define PCX_WINDOW_KEY_RELEASE 2
#define PCX_WINDOW_CLOSED 3                 /* `name`: why, in words */
#define PCX_WINDOW_PRESS_OUTSIDE_PICTURE 4  /* a button on the HUD or the backdrop; `name`: its number */

/* Called on the window's thread; `name` lives only for the call. Keep it quick and
 * never call pcx_window_close from it (the others may be called). */
typedef void (*pcx_window_event)(void *context, int kind, const char *name);

/* Opens the window on $DISPLAY and starts its thread; NULL when there is no display.
 * `context` is passed to `callback` until pcx_window_close returns (the caller owns it
 * and frees it after that). */
pcx_window *pcx_window_open(int width, int height, const char *title, const char *res_name, const char *res_class,
                            pcx_window_event callback, void *context);

/* The top-level window's id (the one a window manager frames). */
unsigned long pcx_window_xid(pcx_window *window);

/* The video window's id, for GstVideoOverlay's window handle: a child filling the top
 * window, under the HUD. */
unsigned long pcx_window_video_xid(pcx_window *window);

/* The HUD's text, lines separated by '\n', wrapped to the window's width; "" hides it. */
void pcx_window_set_hud(pcx_window *window, const char *text);

/* What the window says where no picture covers it ("" for nothing). */
void pcx_window_set_backdrop(pcx_window *window, const char *text);

/* Stops the thread (no callback after this returns), destroys the window, closes the
 * connection and frees everything. */
void pcx_window_close(pcx_window *window);

#endif
