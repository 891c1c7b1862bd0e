/// RTCSession's API speaks in RTCModel's values (descriptions, candidates, reports,
/// errors): a module that drives a `WebRTCPeer` gets them with `import RTCSession`, and
/// one that only reasons about them (a session machine) imports RTCModel alone.
@_exported import RTCModel
