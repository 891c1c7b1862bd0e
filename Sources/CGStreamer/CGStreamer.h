#ifndef CGSTREAMER_H
#define CGSTREAMER_H
/* Umbrella header for the GStreamer 1.22 APIs PoseCast uses.
 * webrtcbin's library is marked unstable API: the define must come first. */
#define GST_USE_UNSTABLE_API 1
#include <gst/gst.h>
#include <gst/webrtc/webrtc.h>
#include <gst/sdp/sdp.h>
#include <gst/rtp/rtp.h>
#include <gst/video/video.h>
#include <gst/app/app.h>
#endif
