#!/usr/bin/env python3
"""Prints "N passed, N failed" over all test cases of the last `meson test` runs.

    summarize.py [LABEL=]LOG_DIR [[LABEL=]LOG_DIR ...]

Each LOG_DIR is a build's meson-logs (one per MPI: openmpi=build/meson-logs mpich=build-mpich/...).
With more than one, a line per labelled run comes first; the last line is always the total.
GoogleTest suites contribute one case per TEST (from the JUnit log); other tests count as one
case each. A test that failed without a failing case in the log (a crash, a timeout, a missing
report) counts as one failed case, and so does a LOG_DIR without a test log (a build that failed),
so nothing that failed can be hidden.
"""
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def count(logs):
    """(passed, failed) test cases of the run logged in `logs`: meson's testlog, and the waiting
    lane's testlog-waiting where tests/run.sh ran one beside it."""
    passed = failed = 0
    if not (logs / "testlog.json").exists() or not (logs / "testlog.junit.xml").exists():
        # The stage never ran its tests (its build failed): one failure, not a traceback.
        print(f"{logs}: no test log: the build or its test run did not finish", file=sys.stderr)
        return 0, 1
    for base in ("testlog", "testlog-waiting"):
        if base == "testlog" or (logs / f"{base}.json").exists():
            p, f = count_log(logs, base)
            passed += p
            failed += f
    return passed, failed


def count_log(logs, base):
    """(passed, failed) test cases of one meson test run, logged as logs/BASE.json and .junit.xml."""
    passed = failed = 0
    failing_suites = []
    # A failed run's output is kept in the XML as it was printed, colour escapes included, which
    # XML 1.0 does not allow: they are dropped before parsing.
    text = (logs / f"{base}.junit.xml").read_text(errors="replace")
    text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", "", text)
    for suite in ET.fromstring(text).iter("testsuite"):
        for case in suite.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                failing_suites.append(suite.get("name", "") + " " + case.get("name", ""))
            elif case.find("skipped") is None:
                passed += 1
    for line in (logs / f"{base}.json").read_text().splitlines():
        test = json.loads(line)
        if test["result"] in ("OK", "SKIP", "EXPECTEDFAIL"):
            continue
        if not any(test["name"] in name for name in failing_suites):
            failed += 1
            print(f"{logs}: {test['name']}: {test['result']} without a failing test case in the log", file=sys.stderr)
    return passed, failed


def main(arguments):
    if not arguments:
        sys.exit(__doc__)
    total_passed = total_failed = 0
    for argument in arguments:
        label, _, path = argument.rpartition("=")
        passed, failed = count(Path(path))
        if len(arguments) > 1:
            print(f"{label or path}: {passed} passed, {failed} failed")
        total_passed += passed
        total_failed += failed
    print(f"{total_passed} passed, {total_failed} failed")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
