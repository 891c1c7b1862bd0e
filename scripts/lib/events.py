"""The "event" names the executables print with --json, read from their one definition,
Sources/NodeOutput/NodeEventName.swift (one `case` per line), so the scripts, the tests
and the executables cannot drift apart: a name that is not defined there raises at once
instead of silently never matching.

    from events import EVENT
    if obj.get("event") == EVENT.status: ...
"""
import os
import re

_SWIFT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "Sources", "NodeOutput", "NodeEventName.swift")


def _load():
    names = []
    with open(_SWIFT) as f:
        for line in f:
            m = re.match(r"\s*case\s+([A-Za-z][A-Za-z0-9]*)\s*(?://.*)?$", line)
            if m:
                names.append(m.group(1))
    if not names:
        raise RuntimeError(f"no event names found in {_SWIFT}")
    return frozenset(names)


NAMES = _load()


class _Events:
    """EVENT.status == "status"; EVENT.statsu raises AttributeError naming the file."""
    def __getattr__(self, name):
        if name in NAMES:
            return name
        raise AttributeError(f"no event {name!r} in Sources/NodeOutput/NodeEventName.swift")


EVENT = _Events()


def check(name):
    """name itself, when it is a defined event name; ValueError otherwise."""
    if name not in NAMES:
        raise ValueError(f"no event {name!r} in Sources/NodeOutput/NodeEventName.swift")
    return name


if __name__ == "__main__":
    # The names as one JSON array (the Swift suite checks they are NodeEventName's).
    import json
    print(json.dumps(sorted(NAMES)))
