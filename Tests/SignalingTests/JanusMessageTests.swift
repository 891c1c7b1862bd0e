import Foundation
import SFU
import Signaling
import Testing

@Suite("Janus API messages (pure)")
struct JanusMessageTests {
    static func object(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    @Test("requests carry the verb, the transaction and the session and handle ids; a message its body and JSEP; trickle its candidate or completion")
    func requests() {
        let create = Self.object(JanusMessage.request("create", transaction: "pc1"))
        #expect(create["janus"] as? String == "create" && create["transaction"] as? String == "pc1" && create["session_id"] == nil)
        let message = Self.object(JanusMessage.message(transaction: "pc2", session: 4_503_599_627_370_495, handle: 7,
                                                       body: ["request": "publish"], jsep: ("offer", "v=0\r\n")))
        #expect((message["session_id"] as? NSNumber)?.uint64Value == 4_503_599_627_370_495)
        #expect((message["handle_id"] as? NSNumber)?.intValue == 7)
        #expect((message["body"] as? [String: Any])?["request"] as? String == "publish")
        #expect((message["jsep"] as? [String: Any])?["sdp"] as? String == "v=0\r\n")
        let candidate = Self.object(JanusMessage.trickle(transaction: "pc3", session: 1, handle: 2,
                                                         candidate: ("candidate:1 1 UDP 1 10.0.0.1 5000 typ host", 0)))
        #expect((candidate["candidate"] as? [String: Any])?["sdpMLineIndex"] as? Int == 0)
        let done = Self.object(JanusMessage.trickle(transaction: "pc4", session: 1, handle: 2, candidate: nil))
        #expect((done["candidate"] as? [String: Any])?["completed"] as? Bool == true)
    }

    @Test("replies: a session id, a plugin's data and JSEP, Janus's and the plugin's errors, a hangup's sender; anything else is no reply")
    func replies() throws {
        let success = try #require(JanusReply(text: #"{"janus":"success","transaction":"pc1","data":{"id":8796093022207}}"#))
        #expect(success.data?["id"]?.uint64Value == 8_796_093_022_207 && success.error == nil)
        let event = try #require(JanusReply(text: #"""
            {"janus":"event","sender":12,"transaction":"pc5","plugindata":{"plugin":"janus.plugin.videoroom",
             "data":{"videoroom":"attached","room":1234}},"jsep":{"type":"offer","sdp":"v=0"}}
            """#))
        #expect(event.sender == 12 && event.pluginData?["videoroom"]?.stringValue == "attached")
        #expect(event.jsep?.type == "offer" && event.jsep?.sdp == "v=0")
        let janusError = try #require(JanusReply(text: #"{"janus":"error","transaction":"pc6","error":{"code":458,"reason":"No such session"}}"#))
        #expect(janusError.error?.code == 458 && janusError.error?.reason == "No such session")
        let pluginError = try #require(JanusReply(text: #"""
            {"janus":"event","sender":3,"transaction":"pc7","plugindata":{"data":{"videoroom":"event","error_code":432,
             "error":"Maximum number of publishers (1) already reached"}}}
            """#))
        #expect(pluginError.error?.code == 432)
        let hangup = try #require(JanusReply(text: #"{"janus":"hangup","sender":12,"reason":"DTLS alert"}"#))
        #expect(hangup.sender == 12 && hangup.reason == "DTLS alert" && hangup.transaction == nil)
        #expect(JanusReply(text: "not json") == nil)
        #expect(JanusReply(text: #"{"type":"welcome"}"#) == nil)
        #expect(JanusReply(text: "[1,2]") == nil)
    }
}
