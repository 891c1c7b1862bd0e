extension SessionDescription {
    /// The same offer with transport-wide congestion control asked for on each video and
    /// audio section: `a=extmap:ID <transport-wide-cc URI>` (ID the lowest of 1–14 no
    /// extmap of the description uses, as bundled sections share one ID space; 1–14 fit
    /// either header form) and `a=rtcp-fb:PT transport-cc`. webrtcbin 1.22 offers the
    /// feedback but not the extension. On video, so that Chromium sends feedback on what
    /// we send (and no REMB). On audio too, so that Chromium numbers the voice it sends us
    /// and webrtcbin's rtpsession (which reads its one-byte form) answers with feedback:
    /// with the extension on video alone, Chromium's voice to the publisher broke up in the
    /// one run tried (37 gaps of up to 50 ms in 30 s, ChromiumConsoleSystemTests; 0–5 with it
    /// on both, and without it), perhaps as its sender got no feedback on a transport that had
    /// negotiated it (not traced inside Chromium). Unchanged when a video section has it
    /// already or no ID is free.
    public func addingTransportWideCC() -> SessionDescription {
        var lines = sdp.components(separatedBy: "\r\n")
        let used = Set(lines.compactMap(Self.extmapID))
        guard transportWideCCExtensionID == nil, let id = (1...14).first(where: { !used.contains($0) }) else { return self }
        var index = 0
        while index < lines.count {
            guard lines[index].hasPrefix("m=video ") || lines[index].hasPrefix("m=audio ") else { index += 1; continue }
            var end = index + 1
            while end < lines.count, !lines[end].hasPrefix("m="), !lines[end].isEmpty { end += 1 }
            // After the section's last extmap, else at its end; the same ID in each section.
            let at = (lines[index..<end].lastIndex { Self.extmapID($0) != nil }).map { $0 + 1 } ?? end
            lines.insert("a=extmap:\(id) \(TransportSequencer.extensionURI)", at: at)
            index = end + 1
        }
        return SessionDescription(kind: kind, sdp: lines.joined(separator: "\r\n")).addingFeedback("transport-cc")
    }

    /// The ID of the transport-wide sequence number extension in the first video section
    /// (an answer that kept it), nil when it is not there.
    public var transportWideCCExtensionID: Int? {
        var inVideo = false
        for line in sdp.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("m=") {
                if inVideo { return nil }
                inVideo = line.hasPrefix("m=video ")
            } else if inVideo, line.hasSuffix(" " + TransportSequencer.extensionURI) || line.contains(" \(TransportSequencer.extensionURI) "),
                      let id = Self.extmapID(String(line)), (1...255).contains(id) {
                return id
            }
        }
        return nil
    }

    /// `a=extmap:ID[/direction] URI …` → ID.
    private static func extmapID(_ line: String) -> Int? {
        guard line.hasPrefix("a=extmap:") else { return nil }
        let value = line.dropFirst("a=extmap:".count).prefix { $0 != " " && $0 != "/" }
        return Int(value)
    }
}
