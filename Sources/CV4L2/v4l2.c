#include "CV4L2.h"

#if defined(__linux__)
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

/* One ioctl, retried on EINTR, as 0 / -errno. */
static int pcv_ioctl(int fd, unsigned long request, void *arg) {
    int r;
    do {
        r = ioctl(fd, request, arg);
    } while (r == -1 && errno == EINTR);
    return r == -1 ? -errno : 0;
}

int pcv_query_capability(int fd, struct v4l2_capability *out) {
    memset(out, 0, sizeof *out);
    return pcv_ioctl(fd, VIDIOC_QUERYCAP, out);
}

int pcv_query_control(int fd, uint32_t id, struct v4l2_queryctrl *out) {
    memset(out, 0, sizeof *out);
    out->id = id;
    return pcv_ioctl(fd, VIDIOC_QUERYCTRL, out);
}

int pcv_query_menu(int fd, uint32_t id, uint32_t index, struct v4l2_querymenu *out) {
    memset(out, 0, sizeof *out);
    out->id = id;
    out->index = index;
    return pcv_ioctl(fd, VIDIOC_QUERYMENU, out);
}

uint32_t pcv_control_class(uint32_t id) {
    return (uint32_t)V4L2_CTRL_ID2CLASS(id);
}

int pcv_get_control(int fd, uint32_t id, int32_t *value) {
    struct v4l2_control control = { .id = id, .value = 0 };
    int r = pcv_ioctl(fd, VIDIOC_G_CTRL, &control);
    if (r == 0) *value = control.value;
    return r;
}

int pcv_set_control(int fd, uint32_t id, int32_t value) {
    struct v4l2_control control = { .id = id, .value = value };
    return pcv_ioctl(fd, VIDIOC_S_CTRL, &control);
}

/* One extended control, class from its id, in a request of count 1. */
static int pcv_ext_control(int fd, unsigned long request, uint32_t id, int32_t *value) {
    struct v4l2_ext_control control;
    struct v4l2_ext_controls request_block;
    memset(&control, 0, sizeof control);
    memset(&request_block, 0, sizeof request_block);
    control.id = id;
    control.value = *value;
    request_block.which = (uint32_t)V4L2_CTRL_ID2CLASS(id);
    request_block.count = 1;
    request_block.controls = &control;
    int r = pcv_ioctl(fd, request, &request_block);
    if (r == 0) *value = control.value;
    return r;
}

int pcv_get_ext_control(int fd, uint32_t id, int32_t *value) {
    int32_t v = 0;
    int r = pcv_ext_control(fd, VIDIOC_G_EXT_CTRLS, id, &v);
    if (r == 0) *value = v;
    return r;
}

int pcv_set_ext_control(int fd, uint32_t id, int32_t value) {
    return pcv_ext_control(fd, VIDIOC_S_EXT_CTRLS, id, &value);
}

#endif /* __linux__ */
