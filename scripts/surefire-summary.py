#!/usr/bin/env python3
"""Print what the Java tests did, from Maven Surefire's XML reports.

`mvn -q test` prints nothing for a skipped test (JUnit's assumeTrue), so a test that never ran
would look like one that passed. This reads every target/surefire-reports/TEST-*.xml under the
given directory and prints the totals and one line per skipped test with its reason.
Exit status: 0, or 1 when no report was found (the tests did not run at all).
"""
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(root: str) -> int:
    reports = sorted(Path(root).glob("*/target/surefire-reports/TEST-*.xml"))
    if not reports:
        print(f"java tests: no Surefire report under {root}/*/target: the tests did not run")
        return 1
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    skipped = []
    for r in reports:
        suite = ET.parse(r).getroot()
        for k in totals:
            totals[k] += int(suite.get(k, 0))
        for case in suite.iter("testcase"):
            s = case.find("skipped")
            if s is not None:
                why = (s.get("message") or s.text or "no reason given").strip().splitlines()[0]
                skipped.append(f"{case.get('classname')}.{case.get('name')}: {why}")
    ran = totals["tests"] - totals["skipped"]
    print(f"java tests: {ran} ran, {totals['skipped']} skipped, {totals['failures']} failed, "
          f"{totals['errors']} errors ({len(reports)} suites)")
    for s in skipped:
        print(f"  SKIPPED {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "workloads/java"))
