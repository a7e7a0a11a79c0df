#!/usr/bin/env python3
"""Prints one closing line for `make test` from meson's testlog.json files (one per build
directory: build/ and the sanitizer build build-asan/): the number of test cases
passed and failed across all suites (each unit-test program counts its own cases from its
"N passed, M failed" line; scripts count as one case each unless they print such a line too),
and the tests that were skipped (exit 77)."""
import json
import re
import sys

LINE = re.compile(r"^(\d+) passed, (\d+) failed", re.M)


def main() -> None:
    passed = failed = skipped = 0
    lines = [line for path in sys.argv[1:] for line in open(path)]
    for line in lines:
        t = json.loads(line)
        result = t.get("result")
        if result == "SKIP":
            skipped += 1
            print("skipped: %s" % t.get("name"))
            continue
        m = LINE.findall(t.get("stdout") or "")
        if m:
            p, fl = map(int, m[-1])
            passed += p
            failed += fl
            if result != "OK" and fl == 0:
                failed += 1
        elif result == "OK":
            passed += 1
        else:
            failed += 1
    print("summary: %d passed, %d failed, %d skipped" % (passed, failed, skipped))


if __name__ == "__main__":
    main()
