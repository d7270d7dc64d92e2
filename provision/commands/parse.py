"""``provision parse TOOL FILE``: a saved tool output parsed, printed as JSON."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from provision.commands._common import say
from provision.errors import ExitStatus, ProvisionError
from provision.parsers import MAX_TEXT_CHARS, parse_tool


def main(args: argparse.Namespace) -> int:
    return parse(args.tool, args.file)


def parse(tool: str, file: str) -> int:
    path = Path(file)
    try:  # one character past the parsers' bound, so /dev/zero or an endless FIFO meets the size check
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(MAX_TEXT_CHARS + 1)
    except OSError as exc:
        raise ProvisionError(f"{file}: cannot read: {exc.strerror}") from None
    say(json.dumps(parse_tool(tool, text, source=str(path)), indent=1))
    return ExitStatus.OK
