"""A strict, pure-Python unified-diff applier for patches a model writes.

Strict because a model's patch that does not match the file means the model misread it: we say
exactly where it went wrong instead of guessing. The one tolerance is position: a hunk whose lines
are found verbatim within ``FUZZ_LINES`` of where its ``@@`` header says is applied there (models
miscount line numbers far more often than they misquote code). Hunk line counts in the header are
not checked for the same reason; the body is what is matched.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping

import attrs

FUZZ_LINES = 50
_SHOW = 200  # longest line quoted back in an error message

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
# Git extended headers that create, delete, rename or binary-patch a file: all refused.
_REFUSED_GIT = {
    "new file mode": "creating files is not supported; only edit existing files",
    "deleted file mode": "deleting files is not supported; only edit existing files",
    "rename from": "renaming files is not supported; only edit existing files in place",
    "rename to": "renaming files is not supported; only edit existing files in place",
    "copy from": "copying files is not supported; only edit existing files in place",
    "copy to": "copying files is not supported; only edit existing files in place",
    "GIT binary patch": "binary patches are not supported; only text edits",
    "Binary files ": "binary patches are not supported; only text edits",
}
_NOTHING_APPLIED = "Nothing was applied; fix the patch and send it whole again."


class PatchError(ValueError):
    """The patch cannot be applied; the message says which file, hunk and line, for the model to fix."""


@attrs.define
class _Line:
    kind: str  # " " context | "-" removed | "+" added
    text: bytes
    eol: bool = True  # False when "\ No newline at end of file" follows it
    blank: bool = False  # an empty patch line, read as an empty context line


@attrs.define
class _Hunk:
    header: str  # the "@@ -a,b +c,d @@" part, for messages
    old_start: int
    old_count: int  # only read to place a hunk without context: 0 means "after old_start"
    lines: list[_Line] = attrs.field(factory=list)


@attrs.define
class _FilePatch:
    old: str
    new: str
    patch_line: int  # 1-based line of the "---" header, for messages
    hunks: list[_Hunk] = attrs.field(factory=list)


def apply_patch(files: Mapping[str, bytes], patch: str) -> dict[str, bytes]:
    """Apply ``patch`` to ``files``; return the new full content of every file it changes.

    All or nothing: any problem raises PatchError and nothing is returned.
    """
    sections = _parse(patch)
    current: dict[str, bytes] = {}
    for section in sections:
        path = _resolve(section, files)
        # A file may appear in several sections; each one applies to the result of the last.
        base = current.get(path, files[path])
        current[path] = _apply_hunks(path, base, section.hunks)
    changed = {path: data for path, data in current.items() if data != files[path]}
    if not changed:
        raise PatchError("the patch applies but changes nothing: every hunk leaves its file as it was.")
    return changed


def patch_targets(files: Collection[str], patch: str) -> list[str]:
    """The paths (keys of ``files``) that ``patch`` would edit, in patch order; PatchError if malformed."""
    out: list[str] = []
    for section in _parse(patch):
        path = _resolve(section, files)
        if path not in out:
            out.append(path)
    return out


# -- parsing ----------------------------------------------------------------------------------------


def _parse(patch: str) -> list[_FilePatch]:
    if not patch.strip():
        raise PatchError("the patch is empty; send a unified diff with '--- a/PATH', '+++ b/PATH' and "
                         "'@@ -OLD,N +NEW,M @@' hunks.")
    lines = [line[:-1] if line.endswith("\r") else line for line in patch.split("\n")]
    sections: list[_FilePatch] = []
    section: _FilePatch | None = None
    hunk: _Hunk | None = None
    i = 0
    while i < len(lines):
        line, where = lines[i], f"patch line {i + 1}"
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            _close(hunk, section)
            section = _FilePatch(_header_path(line[4:]), _header_path(lines[i + 1][4:]), i + 1)
            sections.append(section)
            hunk = None
            i += 2
            continue
        if line.startswith("@@"):
            _close(hunk, None)
            if section is None:
                raise PatchError(f"{where}: hunk header {_quote(line)} comes before any file header; start "
                                 "each file with '--- a/PATH' and '+++ b/PATH' lines.")
            match = _HUNK_RE.match(line)
            if match is None:
                raise PatchError(f"{where}: malformed hunk header {_quote(line)}; it must read "
                                 "'@@ -OLD_START,OLD_COUNT +NEW_START,NEW_COUNT @@' with line numbers.")
            hunk = _Hunk(match.group(0), int(match.group(1)), int(match.group(2) or 1))
            section.hunks.append(hunk)
        elif hunk is not None and line[:1] in (" ", "-", "+"):
            hunk.lines.append(_Line(line[0], line[1:].encode()))
        elif hunk is not None and line == "":
            hunk.lines.append(_Line(" ", b"", blank=True))
        elif hunk is not None and line.startswith("\\"):
            if not hunk.lines:
                raise PatchError(f"{where}: '\\ No newline at end of file' must follow a hunk line.")
            hunk.lines[-1].eol = False
        else:
            for prefix, why in _REFUSED_GIT.items():
                if line.startswith(prefix):
                    raise PatchError(f"{where} ({_quote(line)}): {why}.")
            if line.startswith(("diff ", "Index: ", "```")):
                # The next file's header, or the end of a markdown code fence around the patch:
                # whatever came before it is complete.
                _close(hunk, section)
                section, hunk = None, None
            elif not line.strip() and hunk is None:
                pass  # blank lines between files or before a hunk carry nothing
            elif hunk is not None:
                raise PatchError(
                    f"{where}: {_quote(line)} in hunk {hunk.header} does not start with ' ' (context), "
                    "'-' (removed) or '+' (added); every hunk line needs one of these prefixes, "
                    "including unchanged lines (a leading space).")
            elif section is not None:
                raise PatchError(f"{where}: expected an '@@ -OLD,N +NEW,M @@' hunk header after the file "
                                 f"header of {section.new!r}, found {_quote(line)}.")
            # Anything else before the first file header is preamble (a git log message...): skipped.
        i += 1
    _close(hunk, section)
    if not sections:
        raise PatchError("no file header found; a unified diff starts each file with '--- a/PATH' "
                         "then '+++ b/PATH', followed by '@@ ... @@' hunks.")
    return sections


def _close(hunk: _Hunk | None, section: _FilePatch | None) -> None:
    """Finish the hunk, and the file section when given, that the parser just left."""
    if hunk is not None:
        # Empty lines after the last real hunk line are the patch's trailing blank lines, not context.
        while hunk.lines and hunk.lines[-1].blank:
            hunk.lines.pop()
        if not hunk.lines:
            raise PatchError(f"hunk {hunk.header} has no lines; a hunk needs context, '-' or '+' lines.")
    if section is not None and not section.hunks:
        raise PatchError(f"patch line {section.patch_line}: the file header for {section.new!r} has no "
                         "'@@ ... @@' hunk after it.")


def _header_path(raw: str) -> str:
    path = raw.split("\t", 1)[0].strip()  # drop a timestamp ("--- a/x<TAB>2024-01-01 ...")
    if len(path) >= 2 and path[0] == path[-1] == '"':
        path = path[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return path


def _resolve(section: _FilePatch, files: Collection[str]) -> str:
    """Which key of ``files`` the section edits; refuses creation, deletion and renames."""
    where = f"patch line {section.patch_line}"
    if section.old == "/dev/null":
        raise PatchError(f"{where}: '--- /dev/null' creates {section.new!r}; creating files is not "
                         "supported, only edits of existing files.")
    if section.new == "/dev/null":
        raise PatchError(f"{where}: '+++ /dev/null' deletes {section.old!r}; deleting files is not "
                         "supported, only edits of existing files.")
    # git style (a/ and b/) strips the prefixes first; otherwise a path is tried as written first.
    git_style = section.old.startswith("a/") and section.new.startswith("b/")
    old, new = _lookup(section.old, files, git_style), _lookup(section.new, files, git_style)
    if old is not None and new is not None and old != new:
        raise PatchError(f"{where}: '---' names {old!r} but '+++' names {new!r}; renaming files is not "
                         "supported, both headers must name the same file.")
    found = new or old
    if found is None:
        close = difflib.get_close_matches(_strip_prefix(section.new), list(files), n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise PatchError(f"{where}: no file {section.new!r} in the repository; a patch can only edit "
                         f"existing files, named relative to the repository root.{hint}")
    return found


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def _lookup(path: str, files: Collection[str], git_style: bool) -> str | None:
    stripped = _strip_prefix(path)
    order = (stripped, path) if git_style else (path, stripped)
    return next((p for p in order if p in files), None)


# -- applying ---------------------------------------------------------------------------------------


def _split(data: bytes) -> list[tuple[bytes, bytes]]:
    """(body, ending) per line; ending is b"\\n", b"\\r\\n" or, on an unterminated last line, b""."""
    out: list[tuple[bytes, bytes]] = []
    parts = data.split(b"\n")
    for part in parts[:-1]:
        out.append((part[:-1], b"\r\n") if part.endswith(b"\r") else (part, b"\n"))
    if parts[-1]:
        out.append((parts[-1], b""))
    return out


def _apply_hunks(path: str, content: bytes, hunks: list[_Hunk]) -> bytes:
    lines = _split(content)
    newline = b"\r\n" if lines and lines[0][1] == b"\r\n" else b"\n"  # added lines follow the file
    floor = 0  # hunks go in file order: none may match inside what an earlier one wrote
    shift = 0  # how far earlier hunks (their size change and any offset) moved the text
    delta = 0  # net lines added by earlier hunks, to quote line numbers of the file as it was
    for number, hunk in enumerate(hunks, 1):
        old = [line.text for line in hunk.lines if line.kind != "+"]
        # "-5,0" inserts after line 5; with old lines (or a count) the hunk starts at line 5.
        stated = hunk.old_start if not old and hunk.old_count == 0 else max(hunk.old_start - 1, 0)
        at = _locate(lines, old, stated + shift, floor)
        if at is None:
            label = f"file {path!r}, hunk {number} of {len(hunks)} ({hunk.header})"
            raise PatchError(_mismatch(label, lines, old, stated + shift, floor, delta))
        replacement: list[tuple[bytes, bytes]] = []
        k = at
        for line in hunk.lines:
            if line.kind == "+":
                replacement.append((line.text, newline if line.eol else b""))
                continue
            if line.kind == " ":
                body, ending = lines[k]
                replacement.append((body, ending if line.eol else b""))
            k += 1
        lines[at:at + len(old)] = replacement
        floor = at + len(replacement)
        shift = at - stated + len(replacement) - len(old)
        delta += len(replacement) - len(old)
    # Only the last line may lack its newline (a context line that ended the file may no longer).
    fixed = [(body, ending or newline) for body, ending in lines[:-1]] + lines[-1:]
    return b"".join(body + ending for body, ending in fixed)


def _matches(lines: list[tuple[bytes, bytes]], old: list[bytes], at: int) -> bool:
    return all(lines[at + j][0] == text for j, text in enumerate(old))


def _locate(lines: list[tuple[bytes, bytes]], old: list[bytes], expected: int, floor: int) -> int | None:
    """Where the hunk's old lines sit: at ``expected`` or the nearest exact match within the fuzz."""
    if not old:  # a pure insertion has nothing to search by: only its stated place will do
        return expected if floor <= expected <= len(lines) else None
    for distance in range(FUZZ_LINES + 1):
        for at in (expected,) if distance == 0 else (expected - distance, expected + distance):
            if floor <= at <= len(lines) - len(old) and _matches(lines, old, at):
                return at
    return None


def _mismatch(label: str, lines: list[tuple[bytes, bytes]], old: list[bytes], expected: int,
              floor: int, delta: int) -> str:
    """Explain a hunk that does not match: the first differing line at the most plausible place."""
    line_no = expected - delta + 1  # in the file as the model saw it
    if not old:
        return (f"{label}: it only adds lines, at line {line_no}, but the file has {len(lines) - delta} "
                f"lines; include a few unchanged context lines around the addition. {_NOTHING_APPLIED}")
    # The most plausible place is the one with the longest matching run of leading lines.
    best, best_run = min(max(expected, floor), len(lines)), 0
    for at in sorted(range(max(floor, expected - FUZZ_LINES), expected + FUZZ_LINES + 1),
                     key=lambda a: abs(a - expected)):
        run = 0
        while run < len(old) and at + run < len(lines) and lines[at + run][0] == old[run]:
            run += 1
        if run > best_run:
            best, best_run = at, run
    first = best + best_run
    want = old[best_run].decode(errors="replace")
    if first < len(lines):
        have = lines[first][0].decode(errors="replace")
        detail = f"expected {_quote(want)} but the file has {_quote(have)}"
        if want.split() == have.split():
            detail += " (they differ only in whitespace: check indentation, tabs and trailing spaces)"
    else:
        detail = f"expected {_quote(want)} but the file ends at line {len(lines) - delta}"
    text = (f"{label}: its context and removed lines do not match the file at line {line_no} (nor "
            f"within {FUZZ_LINES} lines of it). First mismatch at line {first - delta + 1}: {detail}.")
    elsewhere = [at for at in range(len(lines) - len(old) + 1) if _matches(lines, old, at)]
    if any(at >= floor for at in elsewhere):
        where = ", ".join(str(at - delta + 1) for at in elsewhere if at >= floor)
        text += f" These lines do occur at line(s) {where}: fix the @@ header's line numbers."
    elif elsewhere:
        text += (" These lines occur only inside or before an earlier hunk: hunks must be in file order "
                 "and must not overlap.")
    else:
        text += " Re-read the file and copy the context and removed lines exactly."
    return f"{text} {_NOTHING_APPLIED}"


def _quote(text: str) -> str:
    return repr(text if len(text) <= _SHOW else text[:_SHOW] + "...")
