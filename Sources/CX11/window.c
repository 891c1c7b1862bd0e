#include "CX11.h"
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/Xatom.h>
#include <X11/extensions/XShm.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One top-level window for the whole run, its HUD child and the thread that serves
 * them (CX11.h says why). Everything drawn here is drawn by this file's thread, from
 * the texts the setters leave under `lock`; the setters only ask for a redraw
 * (XClearArea with exposures), so no drawing happens on a caller's thread. */
struct pcx_window {
    Display *display;
    Window top, video, hud;
    GC gc;
    XFontStruct *font;
    Atom wm_delete, wm_protocols, stop_atom;
    pcx_window_event callback;
    void *context;
    pthread_t thread;
    pthread_mutex_t lock;
    char *hud_text;      /* lines separated by '\n'; "" hides the HUD */
    char *backdrop_text; /* what the window says where no picture covers it */
    int width, height;   /* the top window's size: written by the thread under `lock` */
    atomic_bool gone;    /* the top-level window was destroyed (by another client) */

    /* The picture (pcx_window_draw_frame, on a streaming thread; the thread redraws it on
     * Expose): the last frame as an XImage in shared memory where the server has MIT-SHM
     * (no copy through the socket), else in our memory. Everything here is under
     * `frame_lock`, and `frame_gc` is drawn with only under it. */
    pthread_mutex_t frame_lock;
    GC frame_gc;
    XImage *image;
    XShmSegmentInfo shm;
    bool use_shm, has_frame;
    int frame_x, frame_y;   /* where the last frame was drawn: the press's picture */
    unsigned long long frame_tag;   /* the caller's tag of the frame drawn last */
};

static const int pad = 6;

int pcx_init_threads(void) { return XInitThreads() != 0; }

/* The first of these fonts the server has: readable sizes first; "fixed" is built
 * into every X server, so one is always found. */
static XFontStruct *load_font(Display *display) {
    const char *names[] = {"-misc-fixed-bold-r-normal--15-*-*-*-*-*-iso10646-1", "9x15bold", "9x15", "8x13bold", "fixed"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        XFontStruct *font = XLoadQueryFont(display, names[i]);
        if (font) return font;
    }
    return NULL;
}

static char *copy_text(pthread_mutex_t *lock, char *const *text) {
    pthread_mutex_lock(lock);
    char *copy = strdup(*text ? *text : "");
    pthread_mutex_unlock(lock);
    return copy;
}

/* The text as the font's characters: UTF-8 decoded into XChar2b (what XDrawString16
 * takes, for the ISO 10646 fonts and, with byte1 0, for the Latin-1 ones); a character
 * the font cannot have (beyond Latin-1 in a one-row font) becomes '?'. XDrawString took
 * the bytes as Latin-1 and drew "Â·" for every "·". */
static int decode_utf8(XFontStruct *font, const char *text, int length, XChar2b *out) {
    int count = 0, wide = font->max_byte1 > 0;
    for (int i = 0; i < length;) {
        unsigned char c = (unsigned char)text[i];
        int extra = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
        if (extra < 0 || (extra > 0 && i + extra >= length)) {   /* not UTF-8, or cut short */
            i++;
            out[count].byte1 = 0;
            out[count++].byte2 = '?';
            continue;
        }
        unsigned code = extra == 0 ? c : extra == 1 ? c & 0x1F : extra == 2 ? c & 0x0F : c & 0x07;
        for (int k = 1; k <= extra; k++) code = code << 6 | ((unsigned char)text[i + k] & 0x3F);
        i += extra + 1;
        if (code > 0xFFFF || (!wide && code > 0xFF)) code = '?';
        out[count].byte1 = (unsigned char)(code >> 8);
        out[count++].byte2 = (unsigned char)(code & 0xFF);
    }
    return count;
}

/* Greedy word wrap of one line at `limit` pixels; calls `emit` per wrapped piece. */
static void wrap_line(XFontStruct *font, const XChar2b *line, int length, int limit,
                      void (*emit)(void *, const XChar2b *, int), void *state) {
    while (length > 0) {
        int fit = length;
        while (fit > 0 && XTextWidth16(font, line, fit) > limit) {
            int space = fit - 1;
            while (space > 0 && !(line[space].byte1 == 0 && line[space].byte2 == ' ')) space--;
            fit = space > 0 ? space : fit - 1;
        }
        if (fit <= 0) fit = 1;
        emit(state, line, fit);
        line += fit;
        length -= fit;
        while (length > 0 && line->byte1 == 0 && line->byte2 == ' ') { line++; length--; }
    }
}

struct layout { pcx_window *w; int count, widest, drawing, y, limit; };

static void measure_piece(void *state, const XChar2b *piece, int length) {
    struct layout *l = state;
    if (l->count >= l->limit) return;   /* beyond the HUD's share of the window */
    int width = XTextWidth16(l->w->font, piece, length);
    if (width > l->widest) l->widest = width;
    if (l->drawing) {
        XDrawString16(l->w->display, l->w->hud, l->w->gc, pad, l->y, piece, length);
        l->y += l->w->font->ascent + l->w->font->descent + 2;
    }
    l->count++;
}

static void each_piece(pcx_window *w, const char *text, struct layout *l) {
    int limit = w->width - 2 * pad > 40 ? w->width - 2 * pad : 40;
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        int length = end ? (int)(end - line) : (int)strlen(line);
        XChar2b *chars = malloc(sizeof(XChar2b) * (size_t)(length + 1));
        int count = decode_utf8(w->font, line, length, chars);
        wrap_line(w->font, chars, count, limit, measure_piece, l);
        free(chars);
        if (!end) break;
        line = end + 1;
    }
}

/* The HUD: a child window over the top left of the picture, sized to its wrapped
 * text at the window's own resolution, raised over the video sink's child. */
static void draw_hud(pcx_window *w) {
    char *text = copy_text(&w->lock, &w->hud_text);
    if (!w->font || !*text) { XUnmapWindow(w->display, w->hud); free(text); return; }
    /* At most about a third of the window's height: the lines that come last (the key
     * hints) are the ones left out on a small window, which keeps most of its picture. */
    int line = w->font->ascent + w->font->descent + 2;
    int lines = (w->height * 35 / 100 - 2 * pad) / line;
    struct layout l = {w, 0, 0, 0, 0, lines > 1 ? lines : 1};
    each_piece(w, text, &l);
    unsigned width = (unsigned)(l.widest + 2 * pad), height = (unsigned)(l.count * line + 2 * pad - 2);
    XMoveResizeWindow(w->display, w->hud, 0, 0, width, height);
    XMapRaised(w->display, w->hud);
    XSetForeground(w->display, w->gc, 0x202020);
    XFillRectangle(w->display, w->hud, w->gc, 0, 0, width, height);
    XSetForeground(w->display, w->gc, 0xF0F0F0);
    struct layout d = {w, 0, 0, 1, pad + w->font->ascent, l.limit};
    each_piece(w, text, &d);
    free(text);
}

static void window_size(pcx_window *w, int *width, int *height) {
    pthread_mutex_lock(&w->lock);
    *width = w->width;
    *height = w->height;
    pthread_mutex_unlock(&w->lock);
}

/* The last frame, centred, and black around it. Called with `frame_lock` held. */
static void put_frame(pcx_window *w) {
    int width, height;
    window_size(w, &width, &height);
    int fw = w->image->width, fh = w->image->height;
    int x = (width - fw) / 2, y = (height - fh) / 2;
    w->frame_x = x;
    w->frame_y = y;
    XSetForeground(w->display, w->frame_gc, 0x000000);
    if (y > 0) XFillRectangle(w->display, w->video, w->frame_gc, 0, 0, (unsigned)width, (unsigned)y);
    if (y + fh < height) XFillRectangle(w->display, w->video, w->frame_gc, 0, y + fh, (unsigned)width, (unsigned)(height - y - fh));
    if (x > 0) XFillRectangle(w->display, w->video, w->frame_gc, 0, y, (unsigned)x, (unsigned)fh);
    if (x + fw < width) XFillRectangle(w->display, w->video, w->frame_gc, x + fw, y, (unsigned)(width - x - fw), (unsigned)fh);
    if (w->use_shm) {
        XShmPutImage(w->display, w->video, w->frame_gc, w->image, 0, 0, x, y, (unsigned)fw, (unsigned)fh, False);
        /* The server reads the segment after the request: done before it is written again. */
        XSync(w->display, False);
    } else {
        XPutImage(w->display, w->video, w->frame_gc, w->image, 0, 0, x, y, (unsigned)fw, (unsigned)fh);
        XFlush(w->display);
    }
}

static void free_image(pcx_window *w) {
    if (!w->image) return;
    if (w->use_shm) {
        XShmDetach(w->display, &w->shm);
        XSync(w->display, False);
        XDestroyImage(w->image);   /* frees the XImage, not the segment (data is the segment) */
        shmdt(w->shm.shmaddr);
    } else {
        XDestroyImage(w->image);   /* and its data, ours from malloc */
    }
    w->image = NULL;
    w->has_frame = false;
}

/* An image of `width`×`height` 32-bit pixels for the server's visual, in shared memory
 * when the server has it. Called with `frame_lock` held; false when none could be made. */
static bool make_image(pcx_window *w, int width, int height) {
    free_image(w);
    int screen = DefaultScreen(w->display);
    Visual *visual = DefaultVisual(w->display, screen);
    unsigned depth = (unsigned)DefaultDepth(w->display, screen);
    if (w->use_shm) {
        w->image = XShmCreateImage(w->display, visual, depth, ZPixmap, NULL, &w->shm, (unsigned)width, (unsigned)height);
        if (w->image) {
            w->shm.shmid = shmget(IPC_PRIVATE, (size_t)w->image->bytes_per_line * (size_t)height, IPC_CREAT | 0600);
            w->shm.shmaddr = w->shm.shmid < 0 ? (char *)-1 : shmat(w->shm.shmid, NULL, 0);
            if (w->shm.shmid >= 0) shmctl(w->shm.shmid, IPC_RMID, NULL);   /* freed once both sides detach */
            if (w->shm.shmaddr != (char *)-1) {
                w->image->data = w->shm.shmaddr;
                w->shm.readOnly = True;
                if (XShmAttach(w->display, &w->shm)) { XSync(w->display, False); return true; }
                shmdt(w->shm.shmaddr);
            }
            w->image->data = NULL;
            XDestroyImage(w->image);
            w->image = NULL;
        }
        w->use_shm = false;   /* no segment: the socket from now on */
    }
    char *data = malloc((size_t)width * 4 * (size_t)height);
    if (!data) return false;
    w->image = XCreateImage(w->display, visual, depth, ZPixmap, 0, data, (unsigned)width, (unsigned)height, 32, width * 4);
    if (!w->image) { free(data); return false; }
    return true;
}

/* Where no picture covers the window (before the first session, between sessions):
 * black, with the backdrop's text in the middle. With no text, the last frame. */
static void draw_backdrop(pcx_window *w) {
    char *text = copy_text(&w->lock, &w->backdrop_text);
    if (!*text) {
        free(text);
        pthread_mutex_lock(&w->frame_lock);
        if (w->has_frame) put_frame(w);
        pthread_mutex_unlock(&w->frame_lock);
        return;
    }
    XSetForeground(w->display, w->gc, 0x000000);
    XFillRectangle(w->display, w->video, w->gc, 0, 0, (unsigned)w->width, (unsigned)w->height);
    if (w->font) {
        int length = (int)strlen(text);
        XChar2b *chars = malloc(sizeof(XChar2b) * (size_t)(length + 1));
        int count = decode_utf8(w->font, text, length, chars);
        int x = (w->width - XTextWidth16(w->font, chars, count)) / 2;
        XSetForeground(w->display, w->gc, 0xC8C8C8);
        XDrawString16(w->display, w->video, w->gc, x > pad ? x : pad, w->height / 2, chars, count);
        free(chars);
    }
    free(text);
}

static void report_key(pcx_window *w, XKeyEvent *event, int kind) {
    KeySym keysym = NoSymbol;
    char buffer[8];
    XLookupString(event, buffer, sizeof buffer, &keysym, NULL);
    const char *name = keysym == NoSymbol ? NULL : XKeysymToString(keysym);
    if (name) w->callback(w->context, kind, name, -1, -1, 0);
}

static void *serve(void *argument) {
    pcx_window *w = argument;
    for (;;) {
        XEvent event;
        XNextEvent(w->display, &event);
        switch (event.type) {
        case Expose:
            if (event.xexpose.count != 0) break;
            if (event.xexpose.window == w->hud) draw_hud(w);
            else if (event.xexpose.window == w->video) draw_backdrop(w);
            break;
        case ConfigureNotify:
            if (event.xconfigure.window == w->top
                && (w->width != event.xconfigure.width || w->height != event.xconfigure.height)) {
                pthread_mutex_lock(&w->lock);
                w->width = event.xconfigure.width;
                w->height = event.xconfigure.height;
                pthread_mutex_unlock(&w->lock);
                XResizeWindow(w->display, w->video, (unsigned)w->width, (unsigned)w->height);
                draw_hud(w);
            }
            break;
        case MapNotify:
            /* A window mapped under ours (a video sink's own child): the HUD goes back on top. */
            if (event.xmap.window != w->hud) XRaiseWindow(w->display, w->hud);
            break;
        case KeyPress: report_key(w, &event.xkey, PCX_WINDOW_KEY_PRESS); break;
        case KeyRelease: report_key(w, &event.xkey, PCX_WINDOW_KEY_RELEASE); break;
        case ButtonPress: {
            char button[4] = {(char)('0' + (event.xbutton.button % 10)), 0};
            double x = -1, y = -1;
            unsigned long long tag = 0;
            if (event.xbutton.window == w->video) {
                /* On the picture: its pixel's centre, normalised to the frame drawn last. */
                pthread_mutex_lock(&w->frame_lock);
                if (w->has_frame) {
                    int px = event.xbutton.x - w->frame_x, py = event.xbutton.y - w->frame_y;
                    if (px >= 0 && py >= 0 && px < w->image->width && py < w->image->height) {
                        x = (px + 0.5) / w->image->width;
                        y = (py + 0.5) / w->image->height;
                        tag = w->frame_tag;
                    }
                }
                pthread_mutex_unlock(&w->frame_lock);
            }
            w->callback(w->context, PCX_WINDOW_PRESS, button, x, y, tag);
            break;
        }
        case ClientMessage:
            if (event.xclient.message_type == w->stop_atom) return NULL;
            if (event.xclient.message_type == w->wm_protocols && (Atom)event.xclient.data.l[0] == w->wm_delete)
                w->callback(w->context, PCX_WINDOW_CLOSED, "the window's close button", -1, -1, 0);
            break;
        case DestroyNotify:
            if (event.xdestroywindow.window == w->top) {
                atomic_store(&w->gone, true);
                w->callback(w->context, PCX_WINDOW_CLOSED, "the window was destroyed", -1, -1, 0);
                return NULL;    /* nothing left to serve, nor to send a stop message to */
            }
            break;
        default:
            break;
        }
        XFlush(w->display);
    }
}

pcx_window *pcx_window_open(int width, int height, const char *title, const char *res_name, const char *res_class,
                            pcx_window_event callback, void *context) {
    Display *display = XOpenDisplay(NULL);
    if (!display) return NULL;
    pcx_window *w = calloc(1, sizeof *w);
    w->display = display;
    w->callback = callback;
    w->context = context;
    w->width = width;
    w->height = height;
    pthread_mutex_init(&w->lock, NULL);
    pthread_mutex_init(&w->frame_lock, NULL);
    w->hud_text = strdup("");
    w->backdrop_text = strdup("");
    int screen = DefaultScreen(display);
    w->top = XCreateSimpleWindow(display, RootWindow(display, screen), 0, 0, (unsigned)width, (unsigned)height, 0,
                                 BlackPixel(display, screen), BlackPixel(display, screen));
    /* The picture is drawn into `video` (filling the top window, under the HUD), which
     * takes the presses; the keys go up to the top window. */
    w->video = XCreateSimpleWindow(display, w->top, 0, 0, (unsigned)width, (unsigned)height, 0,
                                   BlackPixel(display, screen), BlackPixel(display, screen));
    w->hud = XCreateSimpleWindow(display, w->top, 0, 0, 1, 1, 0, 0, 0x202020);
    XStoreName(display, w->top, title);
    Atom utf8 = XInternAtom(display, "UTF8_STRING", False);
    XChangeProperty(display, w->top, XInternAtom(display, "_NET_WM_NAME", False), utf8, 8, PropModeReplace,
                    (const unsigned char *)title, (int)strlen(title));
    XClassHint *hint = XAllocClassHint();
    hint->res_name = (char *)res_name;
    hint->res_class = (char *)res_class;
    XSetClassHint(display, w->top, hint);
    XFree(hint);
    w->wm_protocols = XInternAtom(display, "WM_PROTOCOLS", False);
    w->wm_delete = XInternAtom(display, "WM_DELETE_WINDOW", False);
    w->stop_atom = XInternAtom(display, "_POSECAST_STOP", False);
    XSetWMProtocols(display, w->top, &w->wm_delete, 1);
    XSelectInput(display, w->top, ExposureMask | KeyPressMask | KeyReleaseMask | ButtonPressMask | StructureNotifyMask
                 | SubstructureNotifyMask);
    XSelectInput(display, w->video, ExposureMask | ButtonPressMask | SubstructureNotifyMask);
    XSelectInput(display, w->hud, ExposureMask | ButtonPressMask);
    XMapWindow(display, w->video);
    w->gc = XCreateGC(display, w->top, 0, NULL);
    w->frame_gc = XCreateGC(display, w->top, 0, NULL);
    w->use_shm = XShmQueryExtension(display) && getenv("POSECAST_NO_XSHM") == NULL;
    w->font = load_font(display);
    if (w->font) XSetFont(display, w->gc, w->font->fid);
    XMapWindow(display, w->top);
    XFlush(display);
    pthread_create(&w->thread, NULL, serve, w);
    return w;
}

unsigned long pcx_window_xid(pcx_window *w) { return w->top; }

int pcx_window_can_draw(pcx_window *w) {
    int screen = DefaultScreen(w->display);
    Visual *visual = DefaultVisual(w->display, screen);
    return DefaultDepth(w->display, screen) == 24 && visual->class == TrueColor && visual->red_mask == 0xFF0000
        && visual->green_mask == 0xFF00 && visual->blue_mask == 0xFF;
}

void pcx_window_size(pcx_window *w, int *width, int *height) { window_size(w, width, height); }

int pcx_window_draw_frame(pcx_window *w, const unsigned char *pixels, int width, int height, int stride,
                          unsigned long long tag) {
    if (atomic_load(&w->gone) || width <= 0 || height <= 0) return 0;
    pthread_mutex_lock(&w->frame_lock);
    if ((!w->image || w->image->width != width || w->image->height != height) && !make_image(w, width, height)) {
        pthread_mutex_unlock(&w->frame_lock);
        return 0;
    }
    for (int row = 0; row < height; row++)
        memcpy(w->image->data + (size_t)row * (size_t)w->image->bytes_per_line, pixels + (size_t)row * (size_t)stride,
               (size_t)width * 4);
    w->has_frame = true;
    w->frame_tag = tag;
    put_frame(w);
    pthread_mutex_unlock(&w->frame_lock);
    return 1;
}

static void set_text(pcx_window *w, char **slot, const char *text, Window redraw) {
    pthread_mutex_lock(&w->lock);
    free(*slot);
    *slot = strdup(text ? text : "");
    pthread_mutex_unlock(&w->lock);
    if (atomic_load(&w->gone)) return;
    XClearArea(w->display, redraw, 0, 0, 0, 0, True);
    XFlush(w->display);
}

void pcx_window_set_hud(pcx_window *w, const char *text) {
    pthread_mutex_lock(&w->lock);
    free(w->hud_text);
    w->hud_text = strdup(text ? text : "");
    pthread_mutex_unlock(&w->lock);
    if (atomic_load(&w->gone)) return;
    /* An unmapped HUD gets no Expose from XClearArea: the thread is asked directly, and
     * maps, sizes, raises or hides it. */
    XEvent event = {0};
    event.type = Expose;
    event.xexpose.window = w->hud;
    XSendEvent(w->display, w->hud, False, ExposureMask, &event);
    XFlush(w->display);
}

void pcx_window_set_backdrop(pcx_window *w, const char *text) { set_text(w, &w->backdrop_text, text, w->video); }

void pcx_window_close(pcx_window *w) {
    if (!w) return;
    bool gone = atomic_load(&w->gone);
    XEvent event = {0};
    event.type = ClientMessage;
    event.xclient.window = w->hud;
    event.xclient.message_type = w->stop_atom;
    event.xclient.format = 32;
    if (!gone) {
        XSendEvent(w->display, w->hud, False, NoEventMask, &event);
        XFlush(w->display);
    }
    pthread_join(w->thread, NULL);
    pthread_mutex_lock(&w->frame_lock);
    free_image(w);
    pthread_mutex_unlock(&w->frame_lock);
    if (w->font) XFreeFont(w->display, w->font);
    XFreeGC(w->display, w->gc);
    XFreeGC(w->display, w->frame_gc);
    if (!atomic_load(&w->gone)) XDestroyWindow(w->display, w->top);
    XCloseDisplay(w->display);
    pthread_mutex_destroy(&w->lock);
    pthread_mutex_destroy(&w->frame_lock);
    free(w->hud_text);
    free(w->backdrop_text);
    free(w);
}
