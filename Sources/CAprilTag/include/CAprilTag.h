#ifndef CAPRILTAG_H
#define CAPRILTAG_H
/*
 * CAprilTag: AprilTag 3 (Debian's libapriltag-dev) behind a handful of plain C calls,
 * prefix `pcat_`. Swift sees only this header: opaque detector, fixed-size detections,
 * caller-owned buffers.
 *
 *  - Why C: the library hands back its results in a zarray of pointers and takes its
 *    picture as an image_u8_t whose size fields are const (it cannot be built in
 *    Swift without a copy); its poses are matd_t matrices that must be freed in pairs.
 *    Here they become values the Swift side copies out at once.
 */

#include <stdint.h>

/* One tag found in a picture: its id in the family, the bits the decoder corrected, the
 * decoder's margin (higher is surer), its four corners in pixels (x right, y down, in
 * the library's order) and, for a tag of side 1 metre, the tag-to-camera rotation
 * (row-major) and translation in the camera's own frame (x right, y down, z forward),
 * with the library's reprojection error of that pose. A tag of side s sits at s × t. */
typedef struct {
    int32_t id;
    int32_t hamming;
    float decision_margin;
    double corners[4][2];
    double rotation[9];
    double translation[3];
    double pose_error;
} pcat_detection;

typedef struct pcat_detector pcat_detector;

/* A tag36h11 detector using `threads` threads that finds quads on a picture decimated
 * by `decimate` (1: full size). Owned by the caller: free with pcat_detector_free.
 * NULL when the library could not make one. */
pcat_detector *pcat_detector_new(int threads, float decimate);
void pcat_detector_free(pcat_detector *detector);

/* The tags in a grey picture (`width` × `height`, rows `stride` bytes apart; read only,
 * never kept), quads looked for on it decimated by `decimate` (the detector's own for
 * 0 or less; a tracker that expects only large tags in a part of the picture searches it
 * coarser, for about half the cost; the corners are refined at full size). With
 * `solve_pose` nonzero each tag's pose is solved by the library for a pinhole camera
 * of focal lengths `fx`, `fy` and principal point `cx`, `cy` in pixels; with 0 it is
 * not (rotation and translation left zero, pose_error 0): the library's iterative solve
 * costs about half as much again as finding the tags, and a caller that starts its own
 * solve from the corners does not need it. At most `capacity` are written
 * to `out`, those with the widest margin first; returns how many tags were found in all
 * (which may be more than were written), or -1 for a picture the library cannot take.
 * Not thread safe for one detector: one call at a time. */
int pcat_detect(pcat_detector *detector, const uint8_t *grey, int width, int height, int stride,
                float decimate, int solve_pose, double fx, double fy, double cx, double cy, pcat_detection *out, int capacity);

/* The pattern of tag36h11 number `id`, one byte per cell (0 black, 255 white), row by
 * row from the top, including its white outer ring: writes `side` × `side` cells to
 * `cells` when `capacity` allows. Returns `side` (10 for tag36h11), or -1 for an id not
 * in the family. `border` receives the width in cells of the black square's outer edge
 * (8 for tag36h11), the width a tag's size is measured at. */
int pcat_tag_pattern(int id, uint8_t *cells, int capacity, int *border);

/* How many tags the family has (587 for tag36h11). */
int pcat_family_size(void);

#endif
