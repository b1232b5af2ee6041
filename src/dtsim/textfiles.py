"""Reading a user's text file safely: a regular file of at most MAX_FILE_BYTES, UTF-8, never a FIFO,
a device or a folder (which would block or never end). The lowest layer, so every reader uses it: the
scenario and record inputs (`schema.inputs` re-exports these) and the calibration file
(`catalog.calibration_file`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dtsim.errors import ScenarioError

MAX_FILE_BYTES = 1024 * 1024


def read_text_file(path: str | Path, field: str = "file") -> str:
    """A regular UTF-8 text file's contents (without a byte-order mark), at most MAX_FILE_BYTES, or a
    ScenarioError naming the file and why it cannot be read. A FIFO, a device or a directory is
    refused before it is opened, so reading never blocks."""
    path = Path(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ScenarioError([(field, str(path), f"cannot read: {exc.strerror or exc}")]) from None
    except ValueError as exc:  # an embedded NUL in the path
        raise ScenarioError([(field, str(path), f"cannot read: {exc}")]) from None
    if stat.S_ISDIR(info.st_mode):
        raise ScenarioError([(field, str(path), "is a folder; give a file")])
    if not stat.S_ISREG(info.st_mode):
        raise ScenarioError([(field, str(path), "is not a regular file (a pipe, device or socket)")])
    if info.st_size > MAX_FILE_BYTES:
        raise ScenarioError(
            [(field, str(path), f"is {info.st_size:,} bytes; at most {MAX_FILE_BYTES:,} are read")]
        )
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ScenarioError([(field, str(path), f"cannot read: {exc.strerror or exc}")]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError([(field, str(path), f"is over {MAX_FILE_BYTES:,} bytes")])
    return decode_text(raw, str(path), field)


def decode_text(raw: bytes, name: str, field: str = "file") -> str:
    """UTF-8 bytes as text (a byte-order mark dropped), or a ScenarioError that names the encoding
    when it is recognisably UTF-16/32."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ScenarioError([(field, name, "is UTF-16 text; save it as UTF-8")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            [(field, name, f"is not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8")]
        ) from None
    if "\x00" in text:
        raise ScenarioError([(field, name, "holds NUL characters: not a text file")])
    return text.removeprefix("\ufeff")


def write_generated(argv: list[str], what: str, default: Path, render) -> int:
    """A maintainer's command that regenerates a generated file (`python -m dtsim.validation.docs`
    and the like): an optional target path, `--help` that only prints help (it used to be taken as the
    path to write, or ignored while the catalog file was rewritten), then `render()` written there."""
    import argparse

    parser = argparse.ArgumentParser(
        prog=Path(argv[0]).name if argv else None, description=f"Regenerate {what}."
    )
    parser.add_argument(
        "target", nargs="?", default=str(default), help=f"where to write it [default: {default}]"
    )
    args = parser.parse_args(argv[1:])
    Path(args.target).write_text(render(), encoding="utf-8")
    print(f"wrote {args.target}")
    return 0
