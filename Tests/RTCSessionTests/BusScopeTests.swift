import CGStreamer
import Synchronization
@testable import RTCSession
import Testing

/// Errors belong to their session: two peers share a pipeline, as
/// the publisher's sessions do; an error posted inside one's webrtcbin reaches that peer
/// only, and the observer of the shared part (the camera) hears neither.
@Suite("bus messages reach the part of the pipeline they came from")
struct BusScopeTests {
    private func postError(from element: Element, _ text: String) {
        let error = g_error_new_literal(gst_core_error_quark(), Int32(GST_CORE_ERROR_FAILED.rawValue), text)
        defer { g_error_free(error) }
        _ = gst_element_post_message(element.raw, gst_message_new_error(gcast(element.object, to: GstObject.self), error, "test"))
    }

    @Test("an error inside peer A's webrtcbin goes to A, not to B nor to the shared part; a shared element's to the shared part only")
    func scoped() async throws {
        let pipe = try Pipeline(name: "shared")
        let a = try WebRTCPeer(name: "a", pipeline: pipe), b = try WebRTCPeer(name: "b", pipeline: pipe)
        defer { a.close(); b.close() }
        let camera = try ElementFactory.make("identity", name: "camera")
        pipe.add(camera)
        // An element inside A's webrtcbin, as its sctpenc is.
        let inner = try ElementFactory.make("identity", name: "inner")
        _ = gst_bin_add(gcast(a.webrtc.object, to: GstBin.self), inner.raw)
        let shared = Mutex<[String]>([])
        pipe.addObserver(.outside(factory: "webrtcbin")) { message in
            if case .error(let source, _, _) = message { shared.withLock { $0.append(source) } }
        }
        postError(from: inner, "sctp association went into error state")
        postError(from: camera, "camera unplugged")
        // The bus handler is synchronous: everything is delivered by now.
        #expect(shared.withLock { $0 } == ["camera"])
        func errors(of peer: WebRTCPeer) async -> [String] {
            peer.close()  // ends the stream after what was delivered
            var out: [String] = []
            for await event in peer.events { if case .pipelineError(let e) = event { out.append("\(e)") } }
            return out
        }
        let forA = await errors(of: a), forB = await errors(of: b)
        #expect(forA.count == 1 && forA.first?.contains("inner: sctp association") == true, "\(forA)")
        #expect(forB.isEmpty, "\(forB)")
    }
}
