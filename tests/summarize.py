#!/usr/bin/env python3
"""Prints "N passed, N failed" over all test cases of the last `meson test` run in each build
directory's meson-logs given (the plain build, then the sanitizer and fuzz builds).

GoogleTest suites contribute one case per TEST (from the JUnit log); other tests count as one
case each. A test that failed without a failing case in the log (a crash, a timeout, a missing
report) counts as one failed case, so nothing that failed can be hidden.
"""
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

passed = failed = 0
for logs in map(Path, sys.argv[1:]):
    failing_suites = []
    for suite in ET.parse(logs / "testlog.junit.xml").getroot().iter("testsuite"):
        for case in suite.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                failing_suites.append(suite.get("name", "") + " " + case.get("name", ""))
            elif case.find("skipped") is None:
                passed += 1

    for line in (logs / "testlog.json").read_text().splitlines():
        test = json.loads(line)
        if test["result"] in ("OK", "SKIP", "EXPECTEDFAIL"):
            continue
        if not any(test["name"] in name for name in failing_suites):
            failed += 1
            print(f"{logs}: {test['name']}: {test['result']} without a failing test case in the log", file=sys.stderr)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
