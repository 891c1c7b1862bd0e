#include "CAprilTag.h"

#include <apriltag/apriltag.h>
#include <apriltag/apriltag_pose.h>
#include <apriltag/tag36h11.h>
#include <apriltag/common/image_u8.h>
#include <apriltag/common/matd.h>
#include <stdlib.h>
#include <string.h>

struct pcat_detector {
    apriltag_detector_t *detector;
    apriltag_family_t *family;
    float decimate;
};

pcat_detector *pcat_detector_new(int threads, float decimate) {
    pcat_detector *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->family = tag36h11_create();
    d->detector = apriltag_detector_create();
    if (!d->family || !d->detector) { pcat_detector_free(d); return NULL; }
    apriltag_detector_add_family(d->detector, d->family);
    d->detector->nthreads = threads > 0 ? threads : 1;
    d->decimate = decimate >= 1 ? decimate : 1;
    d->detector->quad_decimate = d->decimate;
    d->detector->refine_edges = true;
    return d;
}

void pcat_detector_free(pcat_detector *d) {
    if (!d) return;
    if (d->detector) apriltag_detector_destroy(d->detector);
    if (d->family) tag36h11_destroy(d->family);
    free(d);
}

static int by_margin(const void *a, const void *b) {
    float ma = ((const pcat_detection *)a)->decision_margin, mb = ((const pcat_detection *)b)->decision_margin;
    return ma < mb ? 1 : ma > mb ? -1 : 0;
}

int pcat_detect(pcat_detector *d, const uint8_t *grey, int width, int height, int stride,
                float decimate, int solve_pose, double fx, double fy, double cx, double cy, pcat_detection *out, int capacity) {
    if (!d || !grey || width <= 0 || height <= 0 || stride < width) return -1;
    /* The library reads the picture in place; its const size fields need an initializer. */
    image_u8_t picture = {.width = width, .height = height, .stride = stride, .buf = (uint8_t *)grey};
    /* The library reads the factor on every call; set per call, it costs nothing. */
    d->detector->quad_decimate = decimate > 0 ? (decimate >= 1 ? decimate : 1) : d->decimate;
    zarray_t *found = apriltag_detector_detect(d->detector, &picture);
    if (!found) return -1;
    int count = zarray_size(found);
    int kept = 0;
    pcat_detection *all = count > 0 ? calloc((size_t)count, sizeof *all) : NULL;
    for (int i = 0; i < count && all; i++) {
        apriltag_detection_t *det;
        zarray_get(found, i, &det);
        pcat_detection *o = &all[kept++];
        o->id = det->id;
        o->hamming = det->hamming;
        o->decision_margin = det->decision_margin;
        for (int c = 0; c < 4; c++) { o->corners[c][0] = det->p[c][0]; o->corners[c][1] = det->p[c][1]; }
        if (!solve_pose) continue;
        apriltag_detection_info_t info = {.det = det, .tagsize = 1.0, .fx = fx, .fy = fy, .cx = cx, .cy = cy};
        apriltag_pose_t pose = {0};
        o->pose_error = estimate_tag_pose(&info, &pose);
        if (pose.R && pose.t) {
            for (int k = 0; k < 9; k++) o->rotation[k] = pose.R->data[k];
            for (int k = 0; k < 3; k++) o->translation[k] = pose.t->data[k];
        } else {
            o->pose_error = -1;
        }
        /* Debian's libapriltag does not export matd_destroy; a matd_t is one calloc'd
         * block (header and data[] together), which is all matd_destroy frees. */
        free(pose.R);
        free(pose.t);
    }
    apriltag_detections_destroy(found);
    if (all) {
        qsort(all, (size_t)kept, sizeof *all, by_margin);
        int n = kept < capacity ? kept : capacity;
        if (n > 0 && out) memcpy(out, all, (size_t)n * sizeof *all);
        free(all);
    }
    return count;
}

int pcat_tag_pattern(int id, uint8_t *cells, int capacity, int *border) {
    apriltag_family_t *family = tag36h11_create();
    if (!family) return -1;
    int side = -1;
    if (id >= 0 && (uint32_t)id < family->ncodes) {
        /* The library's own drawing of the code, so the bit layout is never restated here. */
        image_u8_t *im = apriltag_to_image(family, id);
        if (im) {
            side = im->width;
            if (border) *border = family->width_at_border;
            if (cells && capacity >= side * side)
                for (int y = 0; y < side; y++) memcpy(cells + y * side, im->buf + y * im->stride, (size_t)side);
            image_u8_destroy(im);
        }
    }
    tag36h11_destroy(family);
    return side;
}

int pcat_family_size(void) {
    apriltag_family_t *family = tag36h11_create();
    if (!family) return 0;
    int n = (int)family->ncodes;
    tag36h11_destroy(family);
    return n;
}
