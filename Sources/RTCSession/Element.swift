package import CGStreamer
import CGstShim

/// Reinterprets a GObject-family pointer as another C struct type (the C cast macros):
/// the one pointer-cast idiom of the GStreamer code.
@inline(__always)
package func gcast<T>(_ pointer: UnsafeMutableRawPointer, to _: T.Type) -> UnsafeMutablePointer<T> {
    pointer.assumingMemoryBound(to: T.self)
}

/// `gcast` from a typed pointer: GStreamer's up- and down-casts (GstBuffer → GstMiniObject,
/// GstElement → GstBin, …) are this one call, never `OpaquePointer` round trips.
@inline(__always)
package func gcast<T, U>(_ pointer: UnsafeMutablePointer<U>, to _: T.Type) -> UnsafeMutablePointer<T> {
    UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: T.self)
}

/// GST_OBJECT_NAME (a field read in C): the object's name, "" when it has none.
package func objectName(_ object: UnsafeMutableRawPointer) -> String {
    gcast(object, to: GstObject.self).pointee.name.map { String(cString: $0) } ?? ""
}

/// A GstElement this wrapper holds one full reference to, released in `deinit`.
package final class Element: @unchecked Sendable {
    package let raw: UnsafeMutablePointer<GstElement>

    /// Takes a floating reference (fresh from a factory) and sinks it: we own it.
    package init(takingFloating raw: UnsafeMutablePointer<GstElement>) {
        self.raw = raw
        gst_object_ref_sink(UnsafeMutableRawPointer(raw))
    }

    /// Adopts a full reference the caller transfers to us (`transfer full`).
    package init(takingOwnership raw: UnsafeMutablePointer<GstElement>) {
        self.raw = raw
    }

    /// Borrows a reference (`transfer none`) and adds our own.
    package init(retaining raw: UnsafeMutablePointer<GstElement>) {
        self.raw = raw
        gst_object_ref(UnsafeMutableRawPointer(raw))
    }

    deinit { gst_object_unref(UnsafeMutableRawPointer(raw)) }

    package var object: UnsafeMutableRawPointer { UnsafeMutableRawPointer(raw) }
    package var name: String { objectName(object) }

    /// Sets a property from its string form (any type GStreamer can parse: ints, enums, caps, bools).
    package func set(_ property: String, _ value: String) {
        gst_util_set_object_arg(gcast(object, to: GObject.self), property, value)
    }
    package func set(_ property: String, _ value: Int) { set(property, String(value)) }

    /// Sets a property from its string form, or says why it cannot: no such property, not
    /// writable, a value its type does not parse, or one outside its range (where `set`
    /// would only log a warning and leave the property as it was).
    package func setChecked(_ property: String, _ value: String) throws(RTCError) {
        let gobject = gcast(object, to: GObject.self)
        let factory = Self.factoryName(of: raw)
        guard let klass = gobject.pointee.g_type_instance.g_class,
              let spec = g_object_class_find_property(gcast(UnsafeMutableRawPointer(klass), to: GObjectClass.self), property) else {
            throw .invalidArgument("\(factory) has no property \(property) (gst-inspect-1.0 \(factory) lists them)")
        }
        guard spec.pointee.flags.rawValue & G_PARAM_WRITABLE.rawValue != 0 else {
            throw .invalidArgument("\(factory)'s \(property) cannot be set")
        }
        let typeName = String(cString: g_type_name(spec.pointee.value_type))
        var v = GValue()
        g_value_init(&v, spec.pointee.value_type)
        defer { g_value_unset(&v) }
        guard gst_value_deserialize(&v, value) != 0 else {
            throw .invalidArgument("\(factory)'s \(property) takes a \(typeName), not \(value)")
        }
        // Validation clamps a value outside the property's range and says so.
        guard g_param_value_validate(spec, &v) == 0 else {
            throw .invalidArgument("\(value) is outside the range of \(factory)'s \(property) (gst-inspect-1.0 \(factory))")
        }
        g_object_set_property(gobject, property, &v)
    }
    package func set(_ property: String, _ value: Bool) { set(property, value ? "true" : "false") }

    /// Sets an object- or boxed-typed property (caps, another element); the element takes its own reference.
    package func set(_ property: String, pointer: UnsafeMutableRawPointer?) {
        pcg_object_set_pointer(object, property, pointer)
    }

    package func int(_ property: String) -> Int32 { pcg_object_get_int(object, property) }

    /// Gives back a pad `requestPad` made (a tee's or a mixer's branch pad).
    package func releaseRequestPad(_ pad: Pad) { gst_element_release_request_pad(raw, pad.raw) }

    /// Sets this element (and its children) to NULL on the calling thread, joining its
    /// streaming threads: on the state worker or a thread of its own, never a streaming
    /// thread or the async pool.
    package func stopOnThisThread() { _ = gst_element_set_state(raw, GST_STATE_NULL) }

    /// Sets READY on the calling thread (a device opened, nothing flowing); false when the
    /// element refused (a sound device that cannot be opened).
    package func readyOnThisThread() -> Bool { gst_element_set_state(raw, GST_STATE_READY) != GST_STATE_CHANGE_FAILURE }

    /// Locks the element's state, so it stays where it is when its bin changes state (a
    /// lost device kept in NULL while the call goes on), or unlocks it.
    package func lockState(_ locked: Bool) { _ = gst_element_set_locked_state(raw, locked ? 1 : 0) }

    package func staticPad(_ name: String) -> Pad? {
        gst_element_get_static_pad(raw, name).map { Pad(takingOwnership: $0) }
    }

    package func requestPad(_ template: String) -> Pad? {
        gst_element_request_pad_simple(raw, template).map { Pad(takingOwnership: $0) }
    }

    package func link(_ next: Element) throws(RTCError) {
        guard gst_element_link(raw, next.raw) != 0 else { throw .linkFailed(from: name, to: next.name) }
    }

    /// Brings a just-added element to its bin's state (for elements added while playing).
    /// Brings the element to its bin's state; false when it could not.
    @discardableResult
    package func syncStateWithParent() -> Bool { gst_element_sync_state_with_parent(raw) != 0 }
}

/// A GstPad this wrapper holds a full reference to.
package final class Pad: @unchecked Sendable {
    package let raw: UnsafeMutablePointer<GstPad>

    package init(takingOwnership raw: UnsafeMutablePointer<GstPad>) { self.raw = raw }
    package init(retaining raw: UnsafeMutablePointer<GstPad>) {
        self.raw = raw
        gst_object_ref(UnsafeMutableRawPointer(raw))
    }
    deinit { gst_object_unref(UnsafeMutableRawPointer(raw)) }

    package var name: String { objectName(UnsafeMutableRawPointer(raw)) }
    package var isSource: Bool { raw.pointee.direction == GST_PAD_SRC }

    /// Asks upstream for a keyframe (an upstream force-key-unit event): sent to a source
    /// pad, it travels up to the encoder, or to the RTP session, which turns it into RTCP
    /// to the sender: a FIR with `allHeaders`, a PLI without. False when the event was not
    /// handled.
    @discardableResult
    package func requestKeyframeUpstream(allHeaders: Bool = true) -> Bool {
        guard let event = gst_video_event_new_upstream_force_key_unit(GstClockTime.max, allHeaders ? 1 : 0, 0) else { return false }
        return gst_pad_send_event(raw, event) != 0
    }

    /// The negotiated caps as a string, or the pad's possible caps if none are set yet.
    package var capsDescription: String {
        let caps = gst_pad_get_current_caps(raw) ?? gst_pad_query_caps(raw, nil)
        guard let caps else { return "" }
        defer { gst_caps_unref(caps) }
        guard let s = gst_caps_to_string(caps) else { return "" }
        defer { g_free(s) }
        return String(cString: s)
    }

    /// A string field of the pad's caps (negotiated, else possible), e.g. "encoding-name".
    package func capsField(_ field: String) -> String? {
        guard let caps = gst_pad_get_current_caps(raw) ?? gst_pad_query_caps(raw, nil) else { return nil }
        defer { gst_caps_unref(caps) }
        guard gst_caps_get_size(caps) > 0, let value = gst_structure_get_string(gst_caps_get_structure(caps, 0), field) else {
            return nil
        }
        return String(cString: value)
    }

    /// An unsigned integer field of the pad's negotiated caps (an RTP payloader's "ssrc"), or nil.
    package func capsUInt(_ field: String) -> UInt32? {
        guard let caps = gst_pad_get_current_caps(raw) else { return nil }
        defer { gst_caps_unref(caps) }
        var value: guint = 0
        guard gst_caps_get_size(caps) > 0, gst_structure_get_uint(gst_caps_get_structure(caps, 0), field, &value) != 0 else {
            return nil
        }
        return UInt32(value)
    }

    /// An integer field of the pad's negotiated caps (e.g. "width"), or nil.
    package func capsInt(_ field: String) -> Int? {
        guard let caps = gst_pad_get_current_caps(raw) else { return nil }
        defer { gst_caps_unref(caps) }
        var value: Int32 = 0
        guard gst_caps_get_size(caps) > 0, gst_structure_get_int(gst_caps_get_structure(caps, 0), field, &value) != 0 else {
            return nil
        }
        return Int(value)
    }

    /// A fraction field of the pad's negotiated caps (e.g. "pixel-aspect-ratio"), or nil.
    package func capsFraction(_ field: String) -> (numerator: Int, denominator: Int)? {
        guard let caps = gst_pad_get_current_caps(raw) else { return nil }
        defer { gst_caps_unref(caps) }
        var n: Int32 = 0, d: Int32 = 0
        guard gst_caps_get_size(caps) > 0, gst_structure_get_fraction(gst_caps_get_structure(caps, 0), field, &n, &d) != 0,
              n > 0, d > 0 else { return nil }
        return (Int(n), Int(d))
    }

    /// The negotiated caps as a string without the named fields, or nil before negotiation.
    package func negotiatedCaps(removing fields: [String] = []) -> String? {
        guard let current = gst_pad_get_current_caps(raw) else { return nil }
        let caps = gst_caps_copy(current)!
        gst_caps_unref(current)
        defer { gst_caps_unref(caps) }
        for i in 0..<gst_caps_get_size(caps) {
            for field in fields { gst_structure_remove_field(gst_caps_get_structure(caps, i), field) }
        }
        guard let s = gst_caps_to_string(caps) else { return nil }
        defer { g_free(s) }
        return String(cString: s)
    }

    package func link(to sink: Pad) throws(RTCError) {
        let result = gst_pad_link(raw, sink.raw)
        guard result == GST_PAD_LINK_OK else {
            throw .linkFailed(from: name, to: "\(sink.name) (\(result.rawValue))")
        }
    }

    /// Installs a probe; the closure is boxed into user_data and freed by the destroy notify.
    /// Returns the probe id (remove with `removeProbe`).
    @discardableResult
    package func addProbe(_ mask: GstPadProbeType,
                          _ body: @escaping @Sendable (UnsafeMutablePointer<GstPadProbeInfo>) -> GstPadProbeReturn) -> UInt {
        let box = Unmanaged.passRetained(ProbeBox(body)).toOpaque()
        return UInt(gst_pad_add_probe(raw, mask, { _, info, userData in
            let box = Unmanaged<ProbeBox>.fromOpaque(userData!).takeUnretainedValue()
            return box.body(info!)
        }, box, { userData in
            Unmanaged<ProbeBox>.fromOpaque(userData!).release()
        }))
    }

    /// `addProbe` whose body also gets the pad (borrowed for the call): probes that read
    /// the pad's sticky events or parent without holding a wrapper of it (which, captured
    /// in the closure the pad owns, would keep the pad alive for ever).
    @discardableResult
    package func addProbeWithPad(_ mask: GstPadProbeType,
                                 _ body: @escaping @Sendable (UnsafeMutablePointer<GstPad>, UnsafeMutablePointer<GstPadProbeInfo>) -> GstPadProbeReturn) -> UInt {
        let box = Unmanaged.passRetained(PadProbeBox(body)).toOpaque()
        return UInt(gst_pad_add_probe(raw, mask, { pad, info, userData in
            let box = Unmanaged<PadProbeBox>.fromOpaque(userData!).takeUnretainedValue()
            return box.body(pad!, info!)
        }, box, { userData in
            Unmanaged<PadProbeBox>.fromOpaque(userData!).release()
        }))
    }

    package func removeProbe(_ id: UInt) { gst_pad_remove_probe(raw, gulong(id)) }
}

private final class PadProbeBox {
    let body: @Sendable (UnsafeMutablePointer<GstPad>, UnsafeMutablePointer<GstPadProbeInfo>) -> GstPadProbeReturn
    init(_ body: @escaping @Sendable (UnsafeMutablePointer<GstPad>, UnsafeMutablePointer<GstPadProbeInfo>) -> GstPadProbeReturn) { self.body = body }
}

private final class ProbeBox {
    let body: @Sendable (UnsafeMutablePointer<GstPadProbeInfo>) -> GstPadProbeReturn
    init(_ body: @escaping @Sendable (UnsafeMutablePointer<GstPadProbeInfo>) -> GstPadProbeReturn) { self.body = body }
}

extension Element {
    /// Every element inside this bin, at any depth (none when it is not a bin), each
    /// borrowed for the duration of `body`. A resync (the bin changed meanwhile) starts
    /// the walk again, so `body` may see an element twice: keep it idempotent.
    package static func forEachDescendant(of bin: UnsafeMutablePointer<GstElement>,
                                          _ body: (UnsafeMutablePointer<GstElement>) -> Void) {
        guard g_type_check_instance_is_a(gcast(bin, to: GTypeInstance.self),
                                         gst_bin_get_type()) != 0,
              let iterator = gst_bin_iterate_recurse(gcast(UnsafeMutableRawPointer(bin), to: GstBin.self)) else { return }
        defer { gst_iterator_free(iterator) }
        var item = GValue()
        defer { g_value_unset(&item) }
        while true {
            switch gst_iterator_next(iterator, &item) {
            case GST_ITERATOR_OK:
                if let child = g_value_get_object(&item) { body(gcast(child, to: GstElement.self)) }
                g_value_reset(&item)
            case GST_ITERATOR_RESYNC:
                gst_iterator_resync(iterator)
            default:
                return
            }
        }
    }

    /// The name of the factory that made `element` ("" for none).
    package static func factoryName(of element: UnsafeMutablePointer<GstElement>) -> String {
        guard let factory = gst_element_get_factory(element) else { return "" }
        return objectName(UnsafeMutableRawPointer(factory))
    }
}
