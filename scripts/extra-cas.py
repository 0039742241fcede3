#!/usr/bin/env python3
"""Print the certificates this host trusts beyond Debian's own set: those in the system bundle
(/etc/ssl/certs/ca-certificates.crt) that are not among the Mozilla set Debian's
ca-certificates package ships (/usr/share/ca-certificates/mozilla), as PEM: a CA added by
hand, in /usr/local/share/ca-certificates or in /usr/share/ca-certificates/extra alike. A network whose HTTPS goes through a proxy with
a CA of its own puts it there; `make container-test` hands what this prints to the image's
build stage (a BuildKit secret, never a layer of the shipped image). Nothing is printed
where the host trusts only Debian's set.

    scripts/extra-cas.py > FILE
"""
import re
import sys
from pathlib import Path

PEM = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)


def certs(text: str) -> list:
    return ["".join(m.group(0).split()) for m in PEM.finditer(text)], \
        [m.group(0) for m in PEM.finditer(text)]


def main() -> int:
    bundle = Path(sys.argv[1] if len(sys.argv) > 1 else "/etc/ssl/certs/ca-certificates.crt")
    try:
        keys, blocks = certs(bundle.read_text())
    except OSError as e:
        print(f"extra-cas: cannot read {bundle}: {e}", file=sys.stderr)
        return 1
    known = set()
    for f in Path("/usr/share/ca-certificates/mozilla").glob("*.crt"):
        known.update(certs(f.read_text(errors="replace"))[0])
    extra = [b for k, b in zip(keys, blocks) if k not in known]
    sys.stdout.write("".join(b + "\n" for b in extra))
    print(f"extra-cas: {len(extra)} of the {len(blocks)} certificates in {bundle} are not "
          "Debian's", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
