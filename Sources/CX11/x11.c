#include "CX11.h"
#include <X11/Xlib.h>
#include <stdatomic.h>

static _Atomic(pcx_error_report) current_report;

/* Xlib calls this instead of its default handler (which exits the process). The
 * return value is ignored by Xlib. */
static int pcx_handler(Display *display, XErrorEvent *event) {
    (void)display;
    pcx_error_report report = atomic_load(&current_report);
    if (report) report(event->error_code, event->request_code);
    return 0;
}

int pcx_install_error_handler(pcx_error_report report) {
    atomic_store(&current_report, report);
    XSetErrorHandler(pcx_handler);
    return 1;
}
