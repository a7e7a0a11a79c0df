#!/usr/bin/env python3
"""Prints the closing lines of `make test` from meson's testlog.json files (one per build
directory: build/ and the sanitizer build build-asan/): the tests that were skipped (exit 77);
for each failed test, the lines of its output that name a failure (FAIL, not ok, sanitizer
reports; the last 12), because CI shows only the tail of `make test` and meson prints a failed
test's log where it ran, long before the end; and the number of test cases passed and failed
across all suites (each unit-test program counts its own cases from its "N passed, M failed"
line; scripts count as one case each unless they print such a line too). Skips are counted too:
a whole test that exited 77, and each check a test skipped inside itself (a line of its output
that starts "skip ", "skip:", "SKIP:" or "# SKIP", with the reason), so "0 skipped" means that
nothing was left out."""
import json
import re
import sys

LINE = re.compile(r"^(\d+) passed, (\d+) failed", re.M)
SKIPPED = re.compile(r"^(skip[ :]|SKIP:|# SKIP\b)")
FAILURE = re.compile(r"^(FAIL\b|not ok\b|==\d+==ERROR|.*runtime error:|.*Assertion)")


def failure_lines(t: dict) -> list:
    out = (t.get("stdout") or "") + "\n" + (t.get("stderr") or "")
    return [l.rstrip()[:300] for l in out.splitlines() if FAILURE.match(l)][-12:]


def main() -> None:
    passed = failed = skipped = 0
    failures = []
    for path in sys.argv[1:]:
        for line in open(path):
            t = json.loads(line)
            result = t.get("result")
            if result == "SKIP":
                skipped += 1
                print("skipped: %s" % t.get("name"))
                continue
            for l in (t.get("stdout") or "").splitlines():
                if SKIPPED.match(l):
                    skipped += 1
                    print("skipped in %s: %s" % (t.get("name"), l.rstrip()[:300]))
            if result != "OK":
                failures.append((t.get("name"), result, path, failure_lines(t)))
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
    for name, result, path, found in failures:
        print("failed: %s (%s, %s)" % (name, result, path))
        for l in found or ["(no failure line in its output: its log is above)"]:
            print("    " + l)
    print("summary: %d passed, %d failed, %d skipped" % (passed, failed, skipped))


if __name__ == "__main__":
    main()
