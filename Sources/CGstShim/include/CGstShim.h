#ifndef CGSTSHIM_H
#define CGSTSHIM_H
/*
 * CGstShim: the little C PoseCast cannot write in Swift. Every name is
 * prefixed `pcg_`. Why each group exists:
 *
 *  - Pose meta: a GstMeta must be registered from C (gst_meta_register_custom
 *    with an EMPTY tag list, so encoders, parsers, payloaders and decoders
 *    carry it across; a tagged meta is dropped by them).
 *  - Pose RTP header extension: a GObject subclass of GstRTPHeaderExtension
 *    (class_init/instance_init and vfuncs), registered as an element factory
 *    so depayloaders can create it from the `extmap` URI.
 *  - Fixed-arity wrappers: Swift does not import C variadic functions
 *    (g_object_get/g_object_set with a pointer, g_signal_emit_by_name).
 *  - The thread name: pthread_setname_np is not in Glibc's Swift overlay.
 *
 * Not here, on purpose: what GStreamer exports or Swift imports itself. Probe
 * info accessors are gst_pad_probe_info_get_*; the unrefs are GStreamer's own
 * inline functions (gst_caps_unref, gst_buffer_unref, ...); object names and
 * casts are field reads and `gcast` in Swift; the bin walk is Swift.
 *
 * Ownership is stated on every function: "(full)" means the caller receives a
 * reference it must release, "(borrowed)" means it must not.
 */
#define GST_USE_UNSTABLE_API 1
#include <gst/gst.h>
#include <gst/webrtc/webrtc.h>
#include <gst/rtp/rtp.h>

/* --- Pose meta ---------------------------------------------------------- */

/* Name of the custom meta and of the GstStructure it holds. */
#define PCG_POSE_META_NAME "PoseCastPoseMeta"
/* The URI of our RTP header extension (a URN of our own; negotiated via extmap). */
#define PCG_POSE_EXT_URI "urn:x-posecast:rtp-hdrext:pose:1"
/* Two-byte header extension elements carry at most 255 bytes. */
#define PCG_POSE_MAX_BYTES 255
/* The pose bytes as a fixed-size array: Swift imports it as a tuple of exactly
 * PCG_POSE_MAX_BYTES elements, which PoseMedia/PoseLimitCheck.swift requires to be
 * PoseWireFormat.ElementStorage, so the C and Swift limits cannot drift apart. */
typedef struct { guint8 bytes[PCG_POSE_MAX_BYTES]; } PcgPoseBytes;

/* Registers the pose meta once (thread safe) and returns its info (borrowed, static). */
const GstMetaInfo *pcg_pose_meta_get_info(void);

/* Attaches `size` bytes of encoded pose to a WRITABLE buffer, replacing any pose
 * meta it already has (a buffer carries at most one pose). Fails (FALSE) when
 * the buffer is not writable or size > PCG_POSE_MAX_BYTES. The bytes are copied. */
gboolean pcg_buffer_set_pose(GstBuffer *buffer, const guint8 *data, gsize size);

/* Copies the pose bytes of `buffer` into `out` (capacity `cap`, at least
 * PCG_POSE_MAX_BYTES). Returns the byte count, or -1 when the buffer has no
 * pose meta. The buffer is borrowed. */
gssize pcg_buffer_get_pose(GstBuffer *buffer, guint8 *out, gsize cap);

/* --- Pose RTP header extension ------------------------------------------ */

/* GType of the GstRTPHeaderExtension subclass. */
GType pcg_pose_hdrext_get_type(void);

/* Registers the extension as element factory "posecastposehdrext" with rank
 * MARGINAL, so gst_rtp_header_extension_create_from_uri() (used by
 * depayloaders with auto-header-extension) finds it by PCG_POSE_EXT_URI.
 * Idempotent; returns FALSE if registration failed. */
gboolean pcg_pose_hdrext_register(void);

/* Creates an extension instance with the given extmap id. Returns (full) a
 * floating-sunk reference the caller must unref. */
GstRTPHeaderExtension *pcg_pose_hdrext_new(guint ext_id);

/* Counters of the extension (for diagnostics): packets written, frames read,
 * and reads refused (oversized element or unwritable buffer). */
void pcg_pose_hdrext_counters(GstRTPHeaderExtension *ext, guint64 *written,
                              guint64 *read, guint64 *refused);

/* --- Variadic wrappers --------------------------------------------------- */

/* g_object_set(object, property, value, NULL) for object/boxed-pointer values. */
void pcg_object_set_pointer(gpointer object, const gchar *property, gpointer value);

/* g_object_get(object, property, &out, NULL) for int/enum properties. */
gint pcg_object_get_int(gpointer object, const gchar *property);

/* g_object_get(object, property, &out, NULL) for guint64 properties. */
guint64 pcg_object_get_uint64(gpointer object, const gchar *property);

/* rtpbin's "get-session" action signal (GstElement *get_session(rtpbin, guint id)):
 * the session's rtpsession element, (full), or NULL. Its "stats" property holds the
 * reception reports our receivers send about what we send, which webrtcbin 1.22's
 * get-stats leaves out for an SSRC its SDP does not name. */
GstElement *pcg_rtpbin_get_session(GstElement *rtpbin, guint session);

/* g_object_get for object-typed properties; returns (full) a reference or NULL. */
gpointer pcg_object_get_pointer(gpointer object, const gchar *property);

/* g_object_get for string properties; returns (full) a g_free-able string. */
gchar *pcg_object_get_string(gpointer object, const gchar *property);

/* g_object_get for GstStructure-typed (boxed) properties, such as rtpjitterbuffer's
 * "stats": variadic g_object_get cannot be called from Swift. Returns (full) a copy
 * to free with gst_structure_free, or NULL. */
GstStructure *pcg_object_get_structure(gpointer object, const gchar *property);

/* g_signal_emit_by_name(instance, signal, arg, promise) - the shape of
 * webrtcbin's create-offer, create-answer, set-local-description,
 * set-remote-description and get-stats action signals. */
void pcg_emit_with_promise(gpointer instance, const gchar *signal, gpointer arg,
                           GstPromise *promise);

/* webrtcbin "add-ice-candidate"(mline, candidate). */
void pcg_webrtc_add_ice_candidate(GstElement *webrtc, guint mline, const gchar *candidate);

/* webrtcbin "create-data-channel"(label, options) → (full) channel or NULL. */
GstWebRTCDataChannel *pcg_webrtc_create_data_channel(GstElement *webrtc, const gchar *label,
                                                     GstStructure *options);

/* webrtcbin "add-transceiver"(direction, caps) → (full) transceiver or NULL. */
GstWebRTCRTPTransceiver *pcg_webrtc_add_transceiver(GstElement *webrtc,
                                                    GstWebRTCRTPTransceiverDirection direction,
                                                    GstCaps *caps);

/* RTP payloader "add-extension"(ext): the payloader takes its own reference. */
void pcg_payloader_add_extension(GstElement *payloader, GstRTPHeaderExtension *ext);

/* --- Streams nobody receives ------------------------------------------------ */

/* Makes webrtcbin drop every received RTP stream it leaves unlinked (a peer sending on
 * an m-line it was told not to send on: answering recvonly and sending anyway, or a
 * forged sendrecv). webrtcbin 1.22 links a transport's receive bin to rtpbin only when
 * one of its m-lines receives, and gives rtpbin's pad for a new SSRC and payload type
 * no transceiver pad when that m-line does not receive; either way the first packet
 * returns not-linked up to nicesrc, whose task stops, and every packet of the session
 * after it (RTCP, the data channel, other streams) is lost. Dropping probes on those
 * two kinds of pads (the receive bins' rtp_src as they are added, rtpbin's new pads
 * after webrtcbin's own handler) turn that into a drop while nothing is linked, with one
 * warning on the bus per pad naming it (the session reports it). In C because the probes
 * run on streaming threads for every packet and need no Swift state; the count of
 * dropped packets is kept on the pad ("pcg-stray-dropped"). Returns FALSE when webrtcbin
 * has no rtpbin. */
gboolean pcg_webrtc_drop_stray_streams(GstElement *webrtc);

/* --- Bus ----------------------------------------------------------------- */

/* TRUE when `object` (a bus message's source: an element or a pad) is, or sits inside,
 * an element made by `factory` (e.g. "webrtcbin"): so an error can be given to the
 * session that owns it. Walking the parents needs GST_IS_ELEMENT, a macro Swift cannot
 * call; the parents are taken with their locks (gst_object_get_parent). */
gboolean pcg_object_inside_factory(GstObject *object, const gchar *factory);

/* --- Threads -------------------------------------------------------------- */

/* Names the calling thread (at most 15 bytes are kept), so per-thread CPU figures
 * (/proc/PID/task/TID/comm, top -H) show what it does: pthread_setname_np is a GNU
 * extension Glibc's Swift overlay does not import. */
void pcg_set_current_thread_name(const char *name);

/* Lowers the calling thread alone to `nice` (0…19): Linux keeps a nice value per thread,
 * set through its kernel thread id, which only gettid gives, and Glibc's Swift overlay
 * imports neither gettid nor SYS_gettid. Returns FALSE when the kernel refused. */
gboolean pcg_nice_current_thread(int nice);

#endif
