import Foundation
import NodeOutput
import PoseCastKit
import Voice

/// The field's voice from options at start and from stdin while running.
extension PublisherApp {
    /// Says what the voice runs with (and what could not be opened: the video goes on).
    static func reportVoice(_ media: PublisherMedia, out: EventOutput) {
        for message in media.voiceUnavailable {
            out.event(.voiceUnavailable, ["message": message], human: "voice: \(message)")
        }
        guard let options = media.config.voice else { return }
        guard let voice = media.voice else {
            out.event(.voice, ["enabled": false], human: "voice: off (no microphone and no speaker)")
            return
        }
        let microphone = voice.hasMicrophone ? options.microphone.description : "none"
        let speaker = voice.hasSpeaker ? options.speaker.description : "none"
        let mode = voice.hasMicrophone && voice.hasSpeaker ? "two-way" : voice.hasMicrophone ? "talk only (no speaker)" : "listen only (no microphone)"
        out.event(.voice, ["enabled": true, "microphone": microphone, "speaker": speaker, "mode": mode,
                           "echoCancellation": voice.echoCancelling, "muted": voice.isMuted,
                           "viewersMayTalk": media.config.viewersMayTalk],
                  human: "voice: \(mode), microphone \(microphone), speaker \(speaker)"
                    + (voice.echoCancelling ? ", echo cancellation on" : "") + (voice.isMuted ? ", muted" : ""))
    }

    /// A tone found where the field hears (`--detect-tones`).
    static func toneEvent(_ change: ToneChange, out: EventOutput) {
        out.event(.tone, change.eventFields, human: change.summary)
    }

    /// `mute`, `unmute`; push-to-talk's `talk` and `over` (the same, by another name).
    static func voiceCommand(_ word: String, media: PublisherMedia, node: PublisherNode, out: EventOutput) {
        guard let voice = media.voice, voice.hasMicrophone else {
            out.event(.commandError, ["line": word, "message": "no microphone: nothing to mute"], human: "error: no microphone: nothing to mute")
            return
        }
        let muted = word == "mute" || word == "over"
        voice.setMuted(muted)
        out.event(.muted, ["who": PublisherVoice.fieldKey, "muted": muted, "atNanos": WallClock.nowNanos()],
                  human: "voice: microphone \(muted ? "muted" : "on")")
        node.broadcastVoices()
    }
}
