#!/usr/bin/env python3
"""Prints one TAP line per test case of a GoogleTest XML report, without test numbers.

    gtest_to_tap.py REPORT.xml PREFIX

so that a script running GoogleTest executables itself (under a launcher meson cannot drive with its
gtest protocol) still reports, and counts, each case. Exits 1 when the report is missing or unreadable.
"""
import sys
import xml.etree.ElementTree as ET

report, prefix = sys.argv[1], sys.argv[2]
try:
    root = ET.parse(report).getroot()
except (OSError, ET.ParseError) as error:
    sys.exit(f"no GoogleTest report {report}: {error}")
for case in root.iter("testcase"):
    name = f"{prefix} {case.get('classname')}.{case.get('name')}"
    if case.get("result") == "skipped" or case.find("skipped") is not None:
        print(f"ok - {name} # SKIP")
    elif case.find("failure") is not None or case.find("error") is not None:
        print(f"not ok - {name}")
    else:
        print(f"ok - {name}")
