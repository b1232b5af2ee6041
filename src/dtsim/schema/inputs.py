"""Reading what users hand dtsim — scenario and record files, uploads, share links, `--set` values —
so that no input can hang it, exhaust its memory or end in a traceback.

- Files must be regular files (not a FIFO, a device or a directory) of at most `MAX_FILE_BYTES`, read
  as UTF-8 (a UTF-8 byte-order mark is dropped; UTF-16 and other encodings are named in the error).
- YAML is parsed with PyYAML's safe loader and then checked: mapping keys are text, values are text
  (valid Unicode: no lone surrogate such as JSON's "\\ud800"),
  numbers, true/false, null, lists or mappings (no YAML 1.1 dates, sets or binary), nested at most
  `MAX_DEPTH` deep with at most `MAX_NODES` values in all, counting each alias (`*name`) as the
  values it stands for. An 826-byte "billion laughs" document of nested aliases loads as shared
  references but expands to gigabytes once anything walks or prints it; the count stops at the budget,
  so it is refused in milliseconds. Integers too long for Python to convert (over 4,300 digits) are an
  error, not a crash.
- Error messages quote at most `errors.QUOTE_CHARS` characters of a value (`errors.quote`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

from dtsim.errors import ScenarioError
from dtsim.textfiles import MAX_FILE_BYTES, decode_text, read_text_file  # noqa: F401 (re-exported)

# One size limit for every input: a scenario, record or layouts file, an upload, a request's text, a
# `--set` value. The largest bundled record file is ~0.2 MB; PyYAML builds a 1 MB document in about a
# second and ~100 MB, where 10 MB took 13 s and ~1 GB before anything could be checked.
MAX_TEXT_CHARS = MAX_FILE_BYTES  # a text is read whole only up to the size of a file
MAX_DEPTH = 32  # nesting of lists and mappings (a scenario nests 3 deep)
MAX_NODES = 200_000  # values in one document (the bundled records hold ~40,000)


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader (libyaml's when installed), refusing a key given twice in one mapping: YAML and
    JSON keep the last silently, so `num_nodes: 1` then `num_nodes: 2` would run 2 without a word."""

    def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: check_plain names it
                continue
            if duplicate:
                mark = key_node.start_mark
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice (line {mark.line + 1})", mark
                )
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 (PyYAML) reads 5e9 and 1E-3 as text: only 5.0e+9 is a float there. YAML 1.2 and JSON read
# them as numbers, and users write them so (a 5.1 Pbit/s link is bandwidth_mbps: 5.1e9).
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


class InputLimitError(ScenarioError):
    """An input over one of the limits above (size, values, depth): refused whatever the input is
    meant to be, unlike a text that is simply not YAML (`--set` then takes it as text)."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _yaml_problem(exc: yaml.YAMLError) -> tuple[str, str]:
    """(where in the text, what is wrong) of a YAML error: 'line 43, column 7' and the parser's
    problem with its context ('expected ',' or ']', but got '<stream end>' while parsing a flow sequence')."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or _first_line(exc)
    context = getattr(exc, "context", None)
    at = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "the text"
    return at, f"{problem} {context}" if context and context not in problem else problem


def parse_yaml(text: str, where: str = "file", nan_ok: bool = False) -> Any:
    """YAML (or JSON, which YAML reads) text as plain data, or a ScenarioError naming `where`. `nan_ok`:
    leave a NaN to the reader's own checks (a file of many records rejects only the record holding it)."""
    if len(text) > MAX_TEXT_CHARS:
        raise InputLimitError(
            [(where, f"{len(text):,} characters", f"is over the {MAX_TEXT_CHARS:,} allowed")]
        )
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        at, problem = _yaml_problem(exc)
        raise ScenarioError([(where, at, f"malformed YAML: {problem}")]) from None
    except (ValueError, RecursionError, MemoryError) as exc:  # e.g. an integer of over 4,300 digits
        raise ScenarioError([(where, _excerpt(text), f"cannot be read: {_first_line(exc)}")]) from None
    check_plain(data, where, nan_ok)
    return data


def parse_json(text: str, where: str = "file") -> Any:
    """JSON text as plain data (the same checks as YAML), or a ScenarioError naming `where`."""
    try:
        data = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}, column {exc.colno}"
        raise ScenarioError([(where, at, f"malformed JSON: {exc.msg}")]) from None
    except RecursionError:
        raise InputLimitError([(where, _excerpt(text), f"is nested more than {MAX_DEPTH} deep")]) from None
    except ValueError as exc:
        raise ScenarioError([(where, _excerpt(text), f"cannot be read: {_first_line(exc)}")]) from None
    check_plain(data, where)
    return data


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} is given twice in one object")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_data(text: str, path: str | Path, where: str = "file") -> Any:
    """A file's YAML or JSON text (by its suffix) as plain data."""
    if str(path).lower().endswith(".json"):
        return parse_json(text, where)
    return parse_yaml(text, where)


def check_plain(data: Any, where: str, nan_ok: bool = False) -> None:
    """A ScenarioError naming the place (`where.key[2]`) of the first value that is not plain data:
    a key that is not text, a date, a set, bytes, a NaN (unless `nan_ok`), or nesting beyond MAX_DEPTH /
    more than MAX_NODES values."""
    count = 0
    stack: list[tuple[Any, str, int]] = [(data, where, 0)]
    while stack:
        value, place, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise InputLimitError(
                [(where, "…", f"holds more than {MAX_NODES:,} values (an alias counts as all it repeats)")]
            )
        if depth > MAX_DEPTH:
            raise InputLimitError([(place, "…", f"is nested more than {MAX_DEPTH} deep")])
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise ScenarioError(
                        [(place, k, f"keys must be text; {type(k).__name__} key {k!r} (quote it)")]
                    )
                if not _valid_unicode(k):
                    raise ScenarioError([(place, k, _NOT_UNICODE)])
                stack.append((v, f"{place}.{k}", depth + 1))
        elif isinstance(value, list):
            stack.extend((v, f"{place}[{i}]", depth + 1) for i, v in enumerate(value))
        elif isinstance(value, str):
            if not _valid_unicode(value):
                raise ScenarioError([(place, value, _NOT_UNICODE)])
        elif value is None or isinstance(value, bool | int):
            continue
        elif isinstance(value, float):
            if math.isnan(value) and not nan_ok:
                raise ScenarioError([(place, value, "must be a number, not NaN")])
        else:
            raise ScenarioError(
                [(place, str(value), f"{type(value).__name__} values are not accepted; quote it as text")]
            )


_NOT_UNICODE = "is not valid Unicode text (it holds a lone surrogate such as \\ud800)"


def _valid_unicode(text: str) -> bool:
    """False for text holding a lone surrogate (JSON's "\\ud800"), which no UTF-8 output can hold."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _excerpt(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "…"


def names_a_file(text: str) -> bool:
    """Whether `text` is the path of something that exists (False for a name too long to be a path,
    or one with a NUL, rather than an OSError)."""
    try:
        return Path(text).exists()
    except (OSError, ValueError):
        return False
