#ifndef CV4L2_H
#define CV4L2_H
/*
 * CV4L2: the V4L2 calls PoseCast cannot make from Swift. Every name is
 * prefixed `pcv_`. Why the shim exists at all: the VIDIOC_* request numbers
 * are function-like macros (_IOR/_IOWR, which encode the argument size), and
 * so is V4L2_CTRL_ID2CLASS; Swift imports neither. Everything else in
 * <linux/videodev2.h> — the structs, the enums, the V4L2_CID_* and
 * V4L2_CTRL_FLAG_* integer macros — Swift imports directly, so it is not
 * repeated here.
 *
 * Convention: every function returns 0 on success or -errno on failure (never
 * -1 with errno set), retries EINTR, and borrows `fd` (opened and closed by the
 * caller). No function allocates.
 */
#include <stdint.h>

#if defined(__linux__)
#include <linux/videodev2.h>

/* Why: VIDIOC_QUERYCAP is a macro. Tells a V4L2 node from any other file
 * (a regular file or another character device answers -ENOTTY) and names the
 * driver and card for messages. */
int pcv_query_capability(int fd, struct v4l2_capability *out);

/* Why: VIDIOC_QUERYCTRL is a macro. Fills `out` with the type, range, default
 * and flags of control `id`; -EINVAL means the device has no such control. */
int pcv_query_control(int fd, uint32_t id, struct v4l2_queryctrl *out);

/* Why: VIDIOC_QUERYMENU is a macro. Menus may have holes (a UVC camera's
 * exposure-auto menu often offers only "manual" and "aperture priority"):
 * -EINVAL means item `index` of menu control `id` does not exist. */
int pcv_query_menu(int fd, uint32_t id, uint32_t index, struct v4l2_querymenu *out);

/* Why: V4L2_CTRL_ID2CLASS is a macro. The class decides which ioctl pair a
 * control must use: the spec limits VIDIOC_G_CTRL/S_CTRL to user-class
 * controls; the others (camera class: focus, exposure) need the extended ones. */
uint32_t pcv_control_class(uint32_t id);

/* Why: VIDIOC_G_CTRL is a macro. Reads the current value of a user-class
 * control into `value`. */
int pcv_get_control(int fd, uint32_t id, int32_t *value);

/* Why: VIDIOC_S_CTRL is a macro. Sets a user-class control. */
int pcv_set_control(int fd, uint32_t id, int32_t value);

/* Why: VIDIOC_G_EXT_CTRLS is a macro, and the request is a struct pointing at
 * an array. Reads one 32-bit control of any class (the class is taken from the
 * id with V4L2_CTRL_ID2CLASS). */
int pcv_get_ext_control(int fd, uint32_t id, int32_t *value);

/* Why: VIDIOC_S_EXT_CTRLS is a macro, and the request is a struct pointing at
 * an array. Sets one 32-bit control of any class (class from the id). */
int pcv_set_ext_control(int fd, uint32_t id, int32_t value);

#endif /* __linux__ */
#endif /* CV4L2_H */
