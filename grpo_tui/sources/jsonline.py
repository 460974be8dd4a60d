"""Turning one line of bytes into a JSON object, leniently where the data is valid.

orjson is the fast path. Python's `json.dumps` (what ms-swift and EasyR1 write with)
emits bare `NaN`, `Infinity` and `-Infinity`, which orjson rejects: those lines, and lines
with invalid UTF-8 inside a string, go through the standard library, which accepts them.
Anything else that fails is a bad line, with a reason a user can act on.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


class BadJson(ValueError):
    """The line is not a JSON object; the message says why."""


def parse_object(data: bytes) -> dict[str, Any]:
    """Parse a line that must hold one JSON object. Raises BadJson."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as fast_error:
        try:
            obj = json.loads(data.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as error:
            raise BadJson(describe_json_error(error, data)) from fast_error
        except RecursionError as error:
            raise BadJson("nested too deeply") from error
    if not isinstance(obj, dict):
        raise BadJson(f"a JSON {type(obj).__name__}, not an object")
    return obj


def describe_json_error(error: json.JSONDecodeError, data: bytes) -> str:
    """Why a line (or file) is not JSON, in words: "cut off: …" or "not JSON: …", with where.
    (The standard library's messages end in " at" for some errors: "Invalid control
    character at"; the position is added here once.)"""
    message = error.msg.removesuffix(" at")
    where = (
        f"line {error.lineno} column {error.colno}" if error.lineno > 1 else f"column {error.colno}"
    )
    # the text stopped where more was expected: an unterminated string, or a value or
    # delimiter expected at the very end (not "Extra data", which is more than expected)
    at_end = error.pos >= len(error.doc.rstrip())
    if "Unterminated" in error.msg or (error.msg.startswith("Expecting") and at_end):
        return f"cut off: {message} at {where}"
    return f"not JSON: {message} at {where}"
