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

#endif
