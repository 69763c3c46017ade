"""The tools the planner and editor agents call, over an in-memory snapshot of the target.

No tool touches the filesystem: the snapshot is all a model can read and ``ToolBox.edits`` all it
can write. That, not path checks alone, is what confines the agents to the target's files.
"""

from __future__ import annotations

import difflib
import json
import posixpath
import re
from collections.abc import Callable
from typing import Any

import attrs

from kernelopt_core.llm.patch import PatchError, apply_patch, patch_targets
from kernelopt_core.llm.paths import glob_match, path_rule, text_lines

MAX_HITS = 50  # search_repo lines per call
MAX_LINE = 200  # characters of a search hit shown
MAX_READ = 400  # read_file lines per call
MAX_PLAN = 4000  # characters of a submitted plan
ROLES = ("planner", "editor")
EDIT_MODES = ("file", "patch")
_ALL_TOOLS = ("search_repo", "read_file", "get_profile", "search_memory", "submit_plan", "write_file",
              "apply_patch")

_JSON_TYPES = {"string": str, "integer": int}
_TYPE_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array",
               dict: "object", type(None): "null"}


class ToolError(Exception):
    """A tool was misused; the message goes back to the model as the tool's result."""


@attrs.frozen
class _Param:
    name: str
    type: str  # JSON-schema type: "string" | "integer"
    description: str
    required: bool = True
    minimum: int | None = None


@attrs.frozen
class _Tool:
    name: str
    description: str
    params: tuple[_Param, ...]

    def schema(self) -> dict[str, Any]:
        properties = {p.name: {"type": p.type, "description": p.description,
                               **({} if p.minimum is None else {"minimum": p.minimum})}
                      for p in self.params}
        return {"type": "function", "function": {
            "name": self.name,
            "description": self.description,
            "parameters": {"type": "object", "properties": properties,
                           "required": [p.name for p in self.params if p.required],
                           "additionalProperties": False},
        }}


class ToolBox:
    """One agent's tools: ``schemas()`` to offer them to the model, ``call()`` to run what it asks."""

    def __init__(self, files: dict[str, bytes], editable: tuple[str, ...], role: str,
                 edit_mode: str = "file", profile: dict | None = None,
                 memory_search: Callable[[str], list[str]] | None = None) -> None:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, not {role!r}")
        if edit_mode not in EDIT_MODES:
            raise ValueError(f"edit_mode must be one of {EDIT_MODES}, not {edit_mode!r}")
        self._files = dict(files)  # a private copy: the caller's dict cannot change under the model
        self.editable = tuple(editable)
        self.role = role
        self.edit_mode = edit_mode
        self._profile = profile or {}
        self._memory_search = memory_search
        self.edits: dict[str, bytes] = {}
        self.plan: str | None = None
        self._tools = {tool.name: tool for tool in self._build_tools()}

    # -- the model-facing surface ---------------------------------------------------------------

    def schemas(self) -> list[dict[str, Any]]:
        """The chat-completions ``tools`` entries for this role (and edit mode)."""
        return [tool.schema() for tool in self._tools.values()]

    def call(self, name: str, arguments_json: str) -> str:
        """Run tool ``name`` with its JSON arguments; ToolError (message for the model) on misuse."""
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(self._unknown_tool(name))
        args = _arguments(tool, arguments_json)
        return getattr(self, f"_{name}")(**args)

    def _build_tools(self) -> list[_Tool]:
        editable = ", ".join(repr(p) for p in self.editable) or "(none)"
        read_file = _Tool(
            "read_file",
            "Read a text file of the repository as numbered lines, at most 400 lines per call."
            if self.role == "planner" else
            "Read a text file of the repository as numbered lines (at most 400 per call), including "
            "the edits you have made so far.",
            (_Param("path", "string", "File path relative to the repository root, e.g. 'src/kernel.cu'."),
             _Param("start_line", "integer", "First line to return, counted from 1 (default 1).",
                    required=False, minimum=1),
             _Param("end_line", "integer", "Last line to return, inclusive (default: the end of the file, "
                    "within the 400-line limit).", required=False, minimum=1)))
        if self.role == "editor":
            if self.edit_mode == "file":
                return [read_file, _Tool(
                    "write_file",
                    "Replace the whole content of an editable file with the content you give.",
                    (_Param("path", "string", f"The file to replace, one of the editable files: {editable}."),
                     _Param("content", "string", "The complete new content of the file (not a fragment "
                            "or a diff): anything left out is deleted.")))]
            return [read_file, _Tool(
                "apply_patch",
                "Edit editable files with a unified diff whose context and removed lines match their "
                "current content exactly.",
                (_Param("patch", "string", "A unified diff: '--- a/PATH' and '+++ b/PATH' headers, then "
                        "'@@ -START,COUNT +START,COUNT @@' hunks whose lines start with ' ' (unchanged), "
                        f"'-' (removed) or '+' (added); editable files: {editable}."),))]
        aspects = ", ".join(repr(k) for k in self._profile) or "none were collected"
        return [
            _Tool("search_repo",
                  "Search every text file of the repository for a regular expression and list matching "
                  "lines as 'path:line: text', at most 50 per call.",
                  (_Param("pattern", "string", "A Python `re` regular expression matched against each line "
                          "on its own, e.g. '__syncthreads|blockDim' (prefix '(?i)' to ignore case)."),
                   _Param("glob", "string", "Only search files whose repository-relative path matches this "
                          "fnmatch pattern, e.g. '*.cu' or 'src/*.h'.", required=False))),
            read_file,
            _Tool("get_profile",
                  "Return the profiler's measurements of the baseline kernel as JSON, whole or one aspect.",
                  (_Param("aspect", "string", f"Return only this top-level key of the profile ({aspects}); "
                          "leave it out for the whole profile.", required=False),)),
            _Tool("search_memory",
                  "Search the notes recorded from earlier optimization attempts on kernels like this one "
                  "(what was tried and whether it helped).",
                  (_Param("query", "string", "What you want to know, in a few words, e.g. 'shared memory "
                          "tiling for softmax'."),)),
            _Tool("submit_plan",
                  "Submit your final optimization plan for the editor to implement, once your "
                  "investigation is done.",
                  (_Param("plan", "string", "The plan, at most 4000 characters: which files and lines to "
                          "change, how, and why that should make the kernel faster."),)),
        ]

    def _unknown_tool(self, name: str) -> str:
        available = ", ".join(self._tools)
        if self.role == "editor" and name in ("write_file", "apply_patch"):
            other = "apply_patch" if name == "write_file" else "write_file"
            return f"{name} is not available: this run edits with {other}; use {other}."
        if name in _ALL_TOOLS:
            owner = "editor" if self.role == "planner" else "planner"
            return f"{name} is {_a(owner)} tool, not yours; your tools are: {available}."
        return f"unknown tool {name!r}; your tools are: {available}."

    # -- paths ----------------------------------------------------------------------------------

    def _current(self, path: str) -> bytes:
        return self.edits.get(path, self._files[path])

    def _check_path(self, path: str, *, write: bool = False) -> str:
        rule = path_rule(path)
        if rule is not None:
            raise ToolError(f"path {path!r} refused: {rule}. Paths are relative to the repository root, "
                            "like 'src/kernel.cu'.")
        if path not in self._files:
            raise ToolError(f"no file {path!r} in the repository.{self._suggest(path)}")
        if write and path not in self.editable:
            raise ToolError(f"{path!r} is not editable; only these files may be changed: "
                            f"{', '.join(self.editable) or '(none)'}.")
        return path

    def _suggest(self, path: str) -> str:
        base = posixpath.basename(path)
        same_name = [p for p in sorted(self._files) if posixpath.basename(p) == base]
        close = same_name or difflib.get_close_matches(path, list(self._files), n=3)
        if close:
            return f" Did you mean {', '.join(repr(p) for p in close[:3])}?"
        if self.role == "editor":
            return f" The editable files are: {', '.join(self.editable) or '(none)'}."
        return " Use search_repo to find files."

    # -- tools (one method per tool, named _<tool>) ---------------------------------------------

    def _search_repo(self, pattern: str, glob: str | None = None) -> str:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"invalid regular expression {pattern!r}: {exc}. Patterns are Python `re` "
                            "syntax; escape literal characters such as ( [ . * + ? with a backslash."
                            ) from exc
        hits: list[str] = []
        total = searched = 0
        for path in sorted(self._files):
            if glob is not None and not glob_match(path, glob):
                continue
            data = self._current(path)
            if b"\0" in data:  # binary: nothing a line-based regex can usefully show
                continue
            searched += 1
            for number, line in enumerate(text_lines(data), 1):
                if regex.search(line):
                    total += 1
                    if len(hits) < MAX_HITS:
                        clipped = line if len(line) <= MAX_LINE else line[:MAX_LINE] + " [...]"
                        hits.append(f"{path}:{number}: {clipped}")
        scope = f" matching glob {glob!r}" if glob is not None else ""
        if searched == 0:
            return f"no text file{scope} in the repository; nothing was searched."
        if not hits:
            return f"no match for {pattern!r} in {searched} text file(s){scope}."
        left_out = total - len(hits)
        if left_out:
            hits.append(f"[{left_out} more hit(s) were left out; narrow the pattern or pass a glob]")
        else:
            hits.append(f"[0 more hits: all {total} shown]")
        return "\n".join(hits)

    def _read_file(self, path: str, start_line: int = 1, end_line: int | None = None) -> str:
        self._check_path(path)
        data = self._current(path)
        if b"\0" in data:
            raise ToolError(f"{path!r} is a binary file ({len(data)} bytes); only text files can be read.")
        if end_line is not None and end_line < start_line:
            raise ToolError(f"end_line ({end_line}) is before start_line ({start_line}).")
        lines = text_lines(data)
        total = len(lines)
        if total == 0:
            return f"{path} is empty (0 lines)."
        if start_line > total:
            raise ToolError(f"start_line {start_line} is past the end of {path}, which has {total} lines.")
        last = total if end_line is None else min(end_line, total)
        cut = last - start_line + 1 > MAX_READ
        if cut:
            last = start_line + MAX_READ - 1
        out = [f"{n:>5}| {lines[n - 1]}" for n in range(start_line, last + 1)]
        if cut:
            out.append(f"[cut at {MAX_READ} lines: showing {start_line}-{last} of {total}; call read_file "
                       f"with start_line={last + 1} for more]")
        elif last < total:
            out.append(f"[lines {start_line}-{last} of {total}]")
        return "\n".join(out)

    def _get_profile(self, aspect: str | None = None) -> str:
        if not self._profile:
            return "no profile was collected for this run"
        if aspect is None:
            data: Any = self._profile
        elif aspect in self._profile:
            data = self._profile[aspect]
        else:
            keys = ", ".join(repr(k) for k in self._profile)
            raise ToolError(f"unknown profile aspect {aspect!r}; the profile has: {keys}.")
        return json.dumps(data, indent=2, default=str)

    def _search_memory(self, query: str) -> str:
        if not query.strip():
            raise ToolError("query is empty; describe what you want to know in a few words.")
        if self._memory_search is None:
            return "no experience recorded yet"
        results = self._memory_search(query)
        if not results:
            return f"no recorded experience matches {query!r}."
        return "\n\n".join(f"[{n}] {text}" for n, text in enumerate(results, 1))

    def _submit_plan(self, plan: str) -> str:
        text = plan.strip()
        if not text:
            raise ToolError("the plan is empty; describe what to change, where, and why.")
        if len(text) > MAX_PLAN:
            raise ToolError(f"the plan is {len(text)} characters; at most {MAX_PLAN} are allowed. "
                            "Shorten it.")
        self.plan = text  # a second submission replaces the first
        return "plan recorded"

    def _write_file(self, path: str, content: str) -> str:
        self._check_path(path, write=True)
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ToolError(f"content is not valid text ({exc}); send the file as plain UTF-8 text.") from exc
        if data == self._current(path):
            return f"{path} unchanged: the content is identical to the current file."
        self._record(path, data)
        return f"wrote {path} ({len(text_lines(data))} lines, {len(data)} bytes)."

    def _apply_patch(self, patch: str) -> str:
        view = {**self._files, **self.edits}
        try:
            targets = patch_targets(view, patch)
        except PatchError as exc:
            raise ToolError(f"patch not applied: {exc} The editable files are: "
                            f"{', '.join(self.editable) or '(none)'}.") from exc
        for path in targets:
            self._check_path(path, write=True)
        try:
            changed = apply_patch(view, patch)
        except PatchError as exc:
            raise ToolError(f"patch not applied: {exc}") from exc
        for path, data in changed.items():
            self._record(path, data)
        done = ", ".join(f"{path} (now {len(text_lines(data))} lines)" for path, data in changed.items())
        return f"patch applied: {done}."

    def _record(self, path: str, data: bytes) -> None:
        if data == self._files[path]:
            self.edits.pop(path, None)  # back to the baseline: no longer an edit
        else:
            self.edits[path] = data


def _arguments(tool: _Tool, raw: str | None) -> dict[str, Any]:
    """Parse and check a call's JSON arguments against the tool's parameters."""
    if raw is None or not raw.strip():
        args: Any = {}  # some providers send "" for a call without arguments
    else:
        try:
            args = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ToolError(f"the arguments of {tool.name} are not valid JSON ({exc}); send one JSON object, "
                            f"e.g. {_example(tool)}.") from exc
    if not isinstance(args, dict):
        raise ToolError(f"the arguments of {tool.name} must be a JSON object, e.g. {_example(tool)}; "
                        f"got {_a(_TYPE_NAMES.get(type(args), 'value'))}.")
    names = [p.name for p in tool.params]
    extra = [k for k in args if k not in names]
    if extra:
        raise ToolError(f"{tool.name} has no argument(s) {', '.join(repr(k) for k in extra)}; its arguments "
                        f"are: {', '.join(names) or '(none)'}.")
    out: dict[str, Any] = {}
    for param in tool.params:
        value = args.get(param.name)
        if value is None:  # null for an optional argument means "left out"
            if param.required:
                raise ToolError(f"{tool.name} is missing its required argument {param.name!r} "
                                f"({param.type}).")
            continue
        expected = _JSON_TYPES[param.type]
        if type(value) is not expected:  # type(), not isinstance: JSON true is not an integer
            got = _TYPE_NAMES.get(type(value), type(value).__name__)
            raise ToolError(f"argument {param.name!r} of {tool.name} must be {_a(param.type)}, "
                            f"not {_a(got)}.")
        if (param.minimum is not None and isinstance(value, int | float)
                and value < param.minimum):
            raise ToolError(f"argument {param.name!r} of {tool.name} must be at least {param.minimum}, "
                            f"not {value}.")
        out[param.name] = value
    return out


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def _example(tool: _Tool) -> str:
    sample = {"string": "...", "integer": 1}
    return json.dumps({p.name: sample[p.type] for p in tool.params if p.required})
