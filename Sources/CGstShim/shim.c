/* CGstShim: see include/CGstShim.h for why each function exists. */
#define _GNU_SOURCE 1
#include "CGstShim.h"
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <string.h>

/* ===== Pose meta ========================================================= */

static const gchar *pose_field = "data";

const GstMetaInfo *
pcg_pose_meta_get_info (void)
{
  static gsize info = 0;
  if (g_once_init_enter (&info)) {
    /* Empty tag list on purpose: GstVideoEncoder/Decoder and the RTP
     * (de)payloaders copy only metas without tags (or with video tags). */
    const gchar *tags[] = { NULL };
    const GstMetaInfo *registered =
        gst_meta_register_custom (PCG_POSE_META_NAME, tags, NULL, NULL, NULL);
    g_once_init_leave (&info, (gsize) registered);
  }
  return (const GstMetaInfo *) info;
}

gboolean
pcg_buffer_set_pose (GstBuffer * buffer, const guint8 * data, gsize size)
{
  if (buffer == NULL || size > PCG_POSE_MAX_BYTES || !gst_buffer_is_writable (buffer))
    return FALSE;
  pcg_pose_meta_get_info ();
  GstCustomMeta *meta = gst_buffer_get_custom_meta (buffer, PCG_POSE_META_NAME);
  if (meta == NULL)
    meta = gst_buffer_add_custom_meta (buffer, PCG_POSE_META_NAME);
  if (meta == NULL)
    return FALSE;
  GBytes *bytes = g_bytes_new (data, size);
  GstStructure *s = gst_custom_meta_get_structure (meta);
  /* Replaces the field if an earlier pose was there: one pose per buffer. */
  gst_structure_set (s, pose_field, G_TYPE_BYTES, bytes, NULL);
  g_bytes_unref (bytes);
  return TRUE;
}

/* Borrowed view of the pose bytes of a buffer, NULL when there is none. */
static GBytes *
pose_bytes_of (const GstBuffer * buffer)
{
  if (buffer == NULL)
    return NULL;
  pcg_pose_meta_get_info ();
  GstCustomMeta *meta =
      gst_buffer_get_custom_meta ((GstBuffer *) buffer, PCG_POSE_META_NAME);
  if (meta == NULL)
    return NULL;
  const GValue *v = gst_structure_get_value (gst_custom_meta_get_structure (meta), pose_field);
  if (v == NULL || !G_VALUE_HOLDS (v, G_TYPE_BYTES))
    return NULL;
  return (GBytes *) g_value_get_boxed (v);
}

gssize
pcg_buffer_get_pose (GstBuffer * buffer, guint8 * out, gsize cap)
{
  GBytes *bytes = pose_bytes_of (buffer);
  if (bytes == NULL)
    return -1;
  gsize size = 0;
  const guint8 *data = g_bytes_get_data (bytes, &size);
  if (size > cap)
    size = cap;
  if (size > 0)
    memcpy (out, data, size);
  return (gssize) size;
}

/* ===== Pose RTP header extension ======================================== */

typedef struct
{
  GstRTPHeaderExtension parent;
  guint64 written;              /* packets that carried the pose */
  guint64 read;                 /* frames whose pose was read */
  guint64 refused;              /* elements refused on read */
} PcgPoseHdrExt;

typedef struct
{
  GstRTPHeaderExtensionClass parent_class;
} PcgPoseHdrExtClass;

G_DEFINE_TYPE (PcgPoseHdrExt, pcg_pose_hdrext, GST_TYPE_RTP_HEADER_EXTENSION);

static GstRTPHeaderExtensionFlags
pose_hdrext_supported_flags (GstRTPHeaderExtension * ext)
{
  /* The pose is 58+ bytes: only the two-byte form (RFC 8285) can hold it. */
  return GST_RTP_HEADER_EXTENSION_TWO_BYTE;
}

static gsize
pose_hdrext_max_size (GstRTPHeaderExtension * ext, const GstBuffer * input_meta)
{
  GBytes *bytes = pose_bytes_of (input_meta);
  return bytes ? g_bytes_get_size (bytes) : 0;
}

static gssize
pose_hdrext_write (GstRTPHeaderExtension * ext, const GstBuffer * input_meta,
    GstRTPHeaderExtensionFlags write_flags, GstBuffer * output, guint8 * data, gsize size)
{
  GBytes *bytes = pose_bytes_of (input_meta);
  if (bytes == NULL)
    return 0;                   /* frame without pose: no element in its packets */
  gsize n = 0;
  const guint8 *src = g_bytes_get_data (bytes, &n);
  if (n > size)
    return -1;
  memcpy (data, src, n);
  __atomic_fetch_add (&((PcgPoseHdrExt *) ext)->written, 1, __ATOMIC_RELAXED);
  return (gssize) n;
}

static gboolean
pose_hdrext_read (GstRTPHeaderExtension * ext, GstRTPHeaderExtensionFlags read_flags,
    const guint8 * data, gsize size, GstBuffer * buffer)
{
  /* The bytes are validated in Swift where the pose is decoded (and counted
   * there); here only what would break the meta itself is refused. The
   * 1.22 depayloader calls read() once per frame, so setting replaces. */
  if (!pcg_buffer_set_pose (buffer, data, size)) {
    __atomic_fetch_add (&((PcgPoseHdrExt *) ext)->refused, 1, __ATOMIC_RELAXED);
    GST_WARNING_OBJECT (ext, "refused pose element of %" G_GSIZE_FORMAT " bytes "
        "(buffer writable: %d)", size, buffer ? gst_buffer_is_writable (buffer) : 0);
    return FALSE;
  }
  __atomic_fetch_add (&((PcgPoseHdrExt *) ext)->read, 1, __ATOMIC_RELAXED);
  return TRUE;
}

static void
pcg_pose_hdrext_class_init (PcgPoseHdrExtClass * klass)
{
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstRTPHeaderExtensionClass *ext_class = GST_RTP_HEADER_EXTENSION_CLASS (klass);

  ext_class->get_supported_flags = pose_hdrext_supported_flags;
  ext_class->get_max_size = pose_hdrext_max_size;
  ext_class->write = pose_hdrext_write;
  ext_class->read = pose_hdrext_read;

  gst_element_class_set_static_metadata (element_class,
      "PoseCast camera pose RTP header extension", GST_RTP_HDREXT_ELEMENT_CLASS,
      "Carries each frame's camera pose (PoseCast wire format v1)", "PoseCast");
  gst_rtp_header_extension_class_set_uri (ext_class, PCG_POSE_EXT_URI);
}

static void
pcg_pose_hdrext_init (PcgPoseHdrExt * self)
{
}

gboolean
pcg_pose_hdrext_register (void)
{
  static gsize done = 0;
  if (g_once_init_enter (&done)) {
    pcg_pose_meta_get_info ();
    gboolean ok = gst_element_register (NULL, "posecastposehdrext",
        GST_RANK_MARGINAL, pcg_pose_hdrext_get_type ());
    g_once_init_leave (&done, ok ? 1 : 2);
  }
  return done == 1;
}

GstRTPHeaderExtension *
pcg_pose_hdrext_new (guint ext_id)
{
  GstRTPHeaderExtension *ext = g_object_new (pcg_pose_hdrext_get_type (), NULL);
  gst_object_ref_sink (ext);
  gst_rtp_header_extension_set_id (ext, ext_id);
  return ext;
}

void
pcg_pose_hdrext_counters (GstRTPHeaderExtension * ext, guint64 * written,
    guint64 * read, guint64 * refused)
{
  PcgPoseHdrExt *self = (PcgPoseHdrExt *) ext;
  if (written)
    *written = __atomic_load_n (&self->written, __ATOMIC_RELAXED);
  if (read)
    *read = __atomic_load_n (&self->read, __ATOMIC_RELAXED);
  if (refused)
    *refused = __atomic_load_n (&self->refused, __ATOMIC_RELAXED);
}

/* ===== Variadic wrappers ================================================= */

void
pcg_object_set_pointer (gpointer object, const gchar * property, gpointer value)
{
  g_object_set (object, property, value, NULL);
}

gint
pcg_object_get_int (gpointer object, const gchar * property)
{
  gint value = 0;
  g_object_get (object, property, &value, NULL);
  return value;
}

GstElement *
pcg_rtpbin_get_session (GstElement * rtpbin, guint session)
{
  GstElement *element = NULL;
  g_signal_emit_by_name (rtpbin, "get-session", session, &element);
  return element;
}

guint64
pcg_object_get_uint64 (gpointer object, const gchar * property)
{
  guint64 value = 0;
  g_object_get (object, property, &value, NULL);
  return value;
}

gpointer
pcg_object_get_pointer (gpointer object, const gchar * property)
{
  gpointer value = NULL;
  g_object_get (object, property, &value, NULL);
  return value;
}

gchar *
pcg_object_get_string (gpointer object, const gchar * property)
{
  gchar *value = NULL;
  g_object_get (object, property, &value, NULL);
  return value;
}

GstStructure *
pcg_object_get_structure (gpointer object, const gchar * property)
{
  GstStructure *value = NULL;
  g_object_get (object, property, &value, NULL);
  return value;
}

void
pcg_emit_with_promise (gpointer instance, const gchar * signal, gpointer arg,
    GstPromise * promise)
{
  g_signal_emit_by_name (instance, signal, arg, promise);
}

void
pcg_webrtc_add_ice_candidate (GstElement * webrtc, guint mline, const gchar * candidate)
{
  g_signal_emit_by_name (webrtc, "add-ice-candidate", mline, candidate);
}

GstWebRTCDataChannel *
pcg_webrtc_create_data_channel (GstElement * webrtc, const gchar * label,
    GstStructure * options)
{
  GstWebRTCDataChannel *channel = NULL;
  g_signal_emit_by_name (webrtc, "create-data-channel", label, options, &channel);
  return channel;
}

GstWebRTCRTPTransceiver *
pcg_webrtc_add_transceiver (GstElement * webrtc,
    GstWebRTCRTPTransceiverDirection direction, GstCaps * caps)
{
  GstWebRTCRTPTransceiver *transceiver = NULL;
  g_signal_emit_by_name (webrtc, "add-transceiver", direction, caps, &transceiver);
  return transceiver;
}

void
pcg_payloader_add_extension (GstElement * payloader, GstRTPHeaderExtension * ext)
{
  g_signal_emit_by_name (payloader, "add-extension", ext);
}

/* ===== Bus =============================================================== */

gboolean
pcg_object_inside_factory (GstObject *object, const gchar *factory)
{
  GstObject *current = object ? gst_object_ref (object) : NULL;
  gboolean found = FALSE;
  while (current && !found) {
    if (GST_IS_ELEMENT (current)) {
      GstElementFactory *made_by = gst_element_get_factory (GST_ELEMENT (current));
      found = made_by && g_strcmp0 (gst_plugin_feature_get_name (GST_PLUGIN_FEATURE (made_by)), factory) == 0;
    }
    GstObject *parent = gst_object_get_parent (current);
    gst_object_unref (current);
    current = parent;
  }
  if (current)
    gst_object_unref (current);
  return found;
}

/* ===== Threads =========================================================== */

void
pcg_set_current_thread_name (const char *name)
{
  char truncated[16];
  g_strlcpy (truncated, name, sizeof truncated);
  pthread_setname_np (pthread_self (), truncated);
}

gboolean
pcg_nice_current_thread (int nice)
{
  return setpriority (PRIO_PROCESS, (id_t) syscall (SYS_gettid), nice) == 0;
}

/* ===== Streams nobody receives ============================================ */

/* Posts one warning naming the pad, the first time it drops something. */
static void
stray_stream_warn_once (GstPad * pad, const gchar * what)
{
  if (g_object_get_data (G_OBJECT (pad), "pcg-stray-warned") != NULL)
    return;
  g_object_set_data (G_OBJECT (pad), "pcg-stray-warned", GINT_TO_POINTER (1));
  GstElement *element = gst_pad_get_parent_element (pad);
  if (element == NULL)
    return;
  gchar *name = gst_object_get_path_string (GST_OBJECT (pad));
  GError *error = g_error_new (GST_STREAM_ERROR, GST_STREAM_ERROR_WRONG_TYPE,
      "dropping a stream the peer sends on an m-line it may not send on (%s, at %s)", what, name);
  gst_element_post_message (element, gst_message_new_warning (GST_OBJECT (element), error, name));
  g_error_free (error);
  g_free (name);
  gst_object_unref (element);
}

/* Drops what reaches a pad nothing is linked to (and lets it through once linked). */
static GstPadProbeReturn
stray_stream_probe (GstPad * pad, GstPadProbeInfo * info, gpointer what)
{
  if (gst_pad_is_linked (pad))
    return GST_PAD_PROBE_OK;
  gsize dropped = GPOINTER_TO_SIZE (g_object_get_data (G_OBJECT (pad), "pcg-stray-dropped"));
  guint n = 1;
  if (GST_PAD_PROBE_INFO_TYPE (info) & GST_PAD_PROBE_TYPE_BUFFER_LIST)
    n = gst_buffer_list_length (GST_PAD_PROBE_INFO_BUFFER_LIST (info));
  g_object_set_data (G_OBJECT (pad), "pcg-stray-dropped", GSIZE_TO_POINTER (dropped + n));
  stray_stream_warn_once (pad, (const gchar *) what);
  return GST_PAD_PROBE_DROP;
}

static void
stray_stream_guard (GstPad * pad, const gchar * what)
{
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST,
      stray_stream_probe, (gpointer) what, NULL);
}

/* rtpbin: a new SSRC and payload type webrtcbin found no transceiver pad for. */
static void
stray_stream_rtpbin_pad_added (GstElement * rtpbin, GstPad * pad, gpointer user_data)
{
  gchar *name = gst_pad_get_name (pad);
  if (GST_PAD_DIRECTION (pad) == GST_PAD_SRC && g_str_has_prefix (name, "recv_rtp_src_")
      && !gst_pad_is_linked (pad))
    stray_stream_guard (pad, "an SSRC and payload type no receiving m-line has");
  g_free (name);
}

/* A transport's receive bin: RTP arriving on a transport whose m-lines receive nothing
 * (webrtcbin links its rtp_src to rtpbin only for receiving transceivers). */
static void
stray_stream_element_added (GstBin * webrtc, GstElement * element, gpointer user_data)
{
  if (g_strcmp0 (G_OBJECT_TYPE_NAME (element), "TransportReceiveBin") != 0)
    return;
  GstPad *pad = gst_element_get_static_pad (element, "rtp_src");
  if (pad != NULL) {
    stray_stream_guard (pad, "RTP on a transport that receives no media");
    gst_object_unref (pad);
  }
}

gboolean
pcg_webrtc_drop_stray_streams (GstElement * webrtc)
{
  GstElement *rtpbin = gst_bin_get_by_name (GST_BIN (webrtc), "rtpbin");
  if (rtpbin == NULL)
    return FALSE;
  g_signal_connect_after (rtpbin, "pad-added", G_CALLBACK (stray_stream_rtpbin_pad_added), NULL);
  gst_object_unref (rtpbin);
  g_signal_connect (webrtc, "element-added", G_CALLBACK (stray_stream_element_added), NULL);
  return TRUE;
}
