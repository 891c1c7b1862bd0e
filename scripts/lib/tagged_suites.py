"""The suites tagged TAG in Tests/ (`.tags(.TAG)` among their @Suite traits), as one
regular expression over Swift Testing's test IDs (Module.Suite/test), for `swift test
--filter` and `--skip`.

Why: the tags in the sources say which suites need the machine to themselves
(Tests/TestSupport/TestTags.swift); scripts/test runs them apart. The `swift test` of
Swift 6.3 filters by test ID only (`--filter tag:NAME`, Swift Testing's ST-0025, came
later); once the toolchain has it, `--filter tag:NAME` replaces this script.

Usage: python3 scripts/lib/tagged_suites.py TAG   (prints the regex; fails when no suite
has the tag, so a renamed tag cannot silently select nothing)
"""
import pathlib
import re
import sys


def suite_traits(text):
    """(traits, struct name) for every `@Suite(…) struct NAME` or `@Suite struct NAME`."""
    for match in re.finditer(r"@Suite\b", text):
        i = match.end()
        traits = ""
        if i < len(text) and text[i] == "(":
            depth, j = 0, i
            while True:
                if text[j] == "(":
                    depth += 1
                elif text[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            traits, i = text[i:j + 1], j + 1
        name = re.match(r"\s*(?:(?:public|private|fileprivate|internal|final)\s+)*struct\s+(\w+)", text[i:])
        if name:
            yield traits, name.group(1)


def tagged(tag, root="Tests"):
    names = []
    for path in sorted(pathlib.Path(root).rglob("*.swift")):
        for traits, name in suite_traits(path.read_text()):
            if re.search(r"\.tags\([^)]*\.%s\b" % re.escape(tag), traits):
                names.append(name)
    return names


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    names = tagged(sys.argv[1])
    if not names:
        sys.exit(f"tagged_suites.py: no suite in Tests/ is tagged .{sys.argv[1]}")
    print(r"\.(%s)/" % "|".join(names))


if __name__ == "__main__":
    main()
