"""Paths and lines as the agents' tools see them: the path rules a model's path must follow,
glob matching for search_repo, and a file's lines numbered as the patch applier numbers them."""

from __future__ import annotations

import fnmatch
import posixpath
import re


def path_rule(path: str) -> str | None:
    """The path rule ``path`` breaks, or None: relative, normalized, no way out of the repository."""
    if not path:
        return "it is empty"
    if "\0" in path:
        return "it contains a NUL character"
    if "\\" in path:
        return "backslashes are not allowed; separate directories with '/'"
    if path.startswith("/") or re.match(r"[A-Za-z]:", path):
        return "absolute paths are not allowed"
    segments = path.split("/")
    if "" in segments:
        return "empty segments ('//' or a trailing '/') are not allowed"
    if ".." in segments:
        return "'..' segments are not allowed"
    if "." in segments:
        return "'.' segments are not allowed; write the path without them"
    if any(segment.startswith("~") for segment in segments):
        return "'~' (a home directory) is not allowed"
    return None


def glob_match(path: str, glob: str) -> bool:
    # fnmatch's '*' crosses '/', so '*.cu' already matches 'src/k.cu'; also accept '**/x' for top-level
    # files and a slash-free glob against the file name alone ('k*.cu' finds 'src/kernel.cu').
    return (fnmatch.fnmatchcase(path, glob)
            or (glob.startswith("**/") and fnmatch.fnmatchcase(path, glob[3:]))
            or ("/" not in glob and fnmatch.fnmatchcase(posixpath.basename(path), glob)))


def text_lines(data: bytes) -> list[str]:
    """The file's lines, numbered as the patch applier numbers them (split on '\\n' only)."""
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]
