internal import CGStreamer

/// Creates elements by factory name, turning a missing plugin into an error that
/// names the plugin and the Debian package to install.
package enum ElementFactory {
    /// factory → (plugin, Debian package), for the elements PoseCast uses.
    static let knownFactories: [String: (plugin: String, package: String)] = [
        "webrtcbin": ("webrtc", "gstreamer1.0-plugins-bad"),
        "nicesrc": ("nice", "gstreamer1.0-nice"), "nicesink": ("nice", "gstreamer1.0-nice"),
        "dtlssrtpenc": ("dtls", "gstreamer1.0-plugins-bad"), "dtlssrtpdec": ("dtls", "gstreamer1.0-plugins-bad"),
        "srtpenc": ("srtp", "gstreamer1.0-plugins-bad"), "srtpdec": ("srtp", "gstreamer1.0-plugins-bad"),
        "sctpenc": ("sctp", "gstreamer1.0-plugins-bad"), "sctpdec": ("sctp", "gstreamer1.0-plugins-bad"),
        "netsim": ("netsim", "gstreamer1.0-plugins-bad"),
        "openh264enc": ("openh264", "gstreamer1.0-plugins-bad"), "openh264dec": ("openh264", "gstreamer1.0-plugins-bad"),
        "h264parse": ("videoparsersbad", "gstreamer1.0-plugins-bad"),
        "vp8enc": ("vpx", "gstreamer1.0-plugins-good"), "vp8dec": ("vpx", "gstreamer1.0-plugins-good"),
        "rtpvp8pay": ("rtp", "gstreamer1.0-plugins-good"), "rtpvp8depay": ("rtp", "gstreamer1.0-plugins-good"),
        "rtph264pay": ("rtp", "gstreamer1.0-plugins-good"), "rtph264depay": ("rtp", "gstreamer1.0-plugins-good"),
        "rtpbin": ("rtpmanager", "gstreamer1.0-plugins-good"), "rtpjitterbuffer": ("rtpmanager", "gstreamer1.0-plugins-good"),
        "v4l2src": ("video4linux2", "gstreamer1.0-plugins-good"),
        "autovideosink": ("autodetect", "gstreamer1.0-plugins-good"),
        "ximagesink": ("ximagesink", "gstreamer1.0-x"), "xvimagesink": ("xvimagesink", "gstreamer1.0-x"),
        "x264enc": ("x264", "gstreamer1.0-plugins-ugly"), "avdec_h264": ("libav", "gstreamer1.0-libav"),
        "videotestsrc": ("videotestsrc", "gstreamer1.0-plugins-base"),
        "videoconvert": ("videoconvertscale", "gstreamer1.0-plugins-base"),
        "videoscale": ("videoconvertscale", "gstreamer1.0-plugins-base"),
        "videorate": ("videorate", "gstreamer1.0-plugins-base"),
        "appsrc": ("app", "gstreamer1.0-plugins-base"), "appsink": ("app", "gstreamer1.0-plugins-base"),
        "capsfilter": ("coreelements", "libgstreamer1.0-0"), "queue": ("coreelements", "libgstreamer1.0-0"),
        "tee": ("coreelements", "libgstreamer1.0-0"), "fakesink": ("coreelements", "libgstreamer1.0-0"),
        "identity": ("coreelements", "libgstreamer1.0-0"),
        // Voice.
        "opusenc": ("opus", "gstreamer1.0-plugins-base"), "opusdec": ("opus", "gstreamer1.0-plugins-base"),
        "rtpopuspay": ("rtp", "gstreamer1.0-plugins-good"), "rtpopusdepay": ("rtp", "gstreamer1.0-plugins-good"),
        "audiomixer": ("audiomixer", "gstreamer1.0-plugins-base"), "audiotestsrc": ("audiotestsrc", "gstreamer1.0-plugins-base"),
        "audioconvert": ("audioconvert", "gstreamer1.0-plugins-base"), "audioresample": ("audioresample", "gstreamer1.0-plugins-base"),
        "volume": ("volume", "gstreamer1.0-plugins-base"), "wavparse": ("wavparse", "gstreamer1.0-plugins-good"),
        "webrtcdsp": ("webrtcdsp", "gstreamer1.0-plugins-bad"), "webrtcechoprobe": ("webrtcdsp", "gstreamer1.0-plugins-bad"),
        "autoaudiosrc": ("autodetect", "gstreamer1.0-plugins-good"), "autoaudiosink": ("autodetect", "gstreamer1.0-plugins-good"),
        "pulsesrc": ("pulseaudio", "gstreamer1.0-pulseaudio"), "pulsesink": ("pulseaudio", "gstreamer1.0-pulseaudio"),
        "alsasrc": ("alsa", "gstreamer1.0-alsa"), "alsasink": ("alsa", "gstreamer1.0-alsa"),
        "filesrc": ("coreelements", "libgstreamer1.0-0"), "clocksync": ("coreelements", "libgstreamer1.0-0"),
    ]

    /// Makes an element (full reference, sunk). Throws `.elementMissing` naming the package.
    package static func make(_ factory: String, name: String? = nil) throws(RTCError) -> Element {
        guard let raw = gst_element_factory_make(factory, name) else { throw missing(factory) }
        return Element(takingFloating: raw)
    }

    /// The error for an absent factory, naming its plugin and package where known.
    package static func missing(_ factory: String) -> RTCError {
        let known = knownFactories[factory]
        return .elementMissing(factory: factory, plugin: known?.plugin ?? "unknown",
                               package: known?.package ?? "the GStreamer plugin package providing '\(factory)'")
    }

    /// True when the factory is installed (no element is created).
    package static func isAvailable(_ factory: String) -> Bool {
        guard let f = gst_element_factory_find(factory) else { return false }
        gst_object_unref(UnsafeMutableRawPointer(f))
        return true
    }
}
