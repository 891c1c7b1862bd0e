// What the console says to the person, in plain words: the publisher's refusals, the
// signaling server's, a closed WebSocket's code, and short names for ids. Pure.

const controlWords = {
  notAllowed: "Not allowed: you joined as a viewer; only an expert may annotate or steer the camera.",
  rateLimited: "Too many requests at once; the publisher will take more in a moment.",
  invalidValue: "The publisher refused a value",
  missingField: "The request missed a field",
  notFound: "Not found",
  unsupported: "The camera cannot do that",
  limitReached: "Too many annotations: remove some first.",
  malformed: "The publisher could not read the request",
  unknownType: "The publisher does not know this request",
  tooLarge: "The request is too large",
};

// A control `error` reply in words, with the publisher's own message.
export function explainControl(code, message) {
  const words = controlWords[code] || `Refused (${code})`;
  return message ? `${words} (${message})` : words;
}

export const signalingWords = {
  unauthorized: "The room needs a token, and this one is wrong or missing.",
  roomFull: "The room is full or the publisher busy; trying again.",
  wrongRole: "That role cannot do this here.",
  rateLimited: "Signaling refused us for sending too fast; trying again.",
  idleTimeout: "The server dropped us for waiting without a session; trying again.",
};

// Why the signaling WebSocket closed, from its close code and whether it had opened:
// 1006 (no close frame) is a server that cannot be reached or that went away.
export function closeWords(code, wasOpen, server) {
  const where = server ? hostOf(server) : "the server";
  if (!wasOpen) return `cannot reach the server at ${where}`;
  switch (code) {
  case 1000: return "the server closed the connection";
  case 1001: return "the server is shutting down or restarting";
  case 1008: return "the server refused the connection";
  case 1009: return "the server found a message too large";
  case 1011: return "the server hit an error";
  case 1012: return "the server is restarting";
  case 1013: return "the server is busy";
  default: return "lost the connection to the server";
  }
}

// host:port of a ws:// URL (the whole text when it is not one).
export function hostOf(url) {
  const found = /^[a-z]+:\/\/([^/?#]+)/i.exec(url || "");
  return found ? found[1] : url;
}

// A short name for a long id (a session's UUID, a peer's): its first four hexadecimal
// digits, enough to tell the sessions of one afternoon apart.
export function shortName(id) {
  if (!id) return "";
  const hex = String(id).replace(/[^0-9a-f]/gi, "");
  return hex.length >= 4 ? hex.slice(0, 4).toLowerCase() : String(id).slice(0, 8);
}
