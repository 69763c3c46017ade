"""The agents' unified-diff applier and tool box: what a model may do, and what it is told when not."""

from __future__ import annotations

import json

import pytest

from kernelopt_core.llm.patch import PatchError, apply_patch, patch_targets
from kernelopt_core.llm.tools import ToolBox, ToolError

KERNEL = "".join(f"line {n}\n" for n in range(1, 101)).encode()
FILES = {"src/kernel.cu": KERNEL, "src/util.h": b"#pragma once\nint helper();\n",
         "README.md": b"# demo\nuse kernel.cu\n", "data/blob.bin": b"\x00\x01kernel\x00"}
EDITABLE = ("src/kernel.cu",)


def hunk_patch(path: str = "src/kernel.cu", header: str = "@@ -10,3 +10,3 @@", *,
               old: str = "a/", new: str = "b/") -> str:
    return (f"--- {old}{path}\n+++ {new}{path}\n{header}\n line 10\n-line 11\n+LINE 11\n line 12\n")


def lines_of(data: bytes) -> list[str]:
    return data.decode().splitlines()


# -- patch ------------------------------------------------------------------------------------------


def test_patch_single_hunk_changes_only_the_named_file() -> None:
    out = apply_patch(FILES, hunk_patch())
    assert list(out) == ["src/kernel.cu"]
    assert lines_of(out["src/kernel.cu"])[9:12] == ["line 10", "LINE 11", "line 12"]
    assert len(lines_of(out["src/kernel.cu"])) == 100


def test_patch_multi_hunk_with_growth_and_shrink() -> None:
    patch = ("--- a/src/kernel.cu\n+++ b/src/kernel.cu\n"
             "@@ -2,3 +2,5 @@\n line 2\n+added a\n+added b\n line 3\n line 4\n"
             "@@ -50,4 +52,2 @@\n line 50\n-line 51\n-line 52\n line 53\n"
             "@@ -98,3 +98,3 @@\n line 98\n-line 99\n+line ninety-nine\n line 100\n")
    new = lines_of(apply_patch(FILES, patch)["src/kernel.cu"])
    assert new[1:5] == ["line 2", "added a", "added b", "line 3"]
    assert "line 51" not in new and "line 52" not in new
    assert new[-2:] == ["line ninety-nine", "line 100"]
    assert len(new) == 100


def test_patch_multiple_files() -> None:
    patch = hunk_patch() + ("--- a/src/util.h\n+++ b/src/util.h\n@@ -1,2 +1,3 @@\n #pragma once\n"
                            "+#include <cstdio>\n int helper();\n")
    out = apply_patch(FILES, patch)
    assert set(out) == {"src/kernel.cu", "src/util.h"}
    assert out["src/util.h"] == b"#pragma once\n#include <cstdio>\nint helper();\n"


def test_patch_headers_without_prefixes_and_with_git_headers() -> None:
    plain = apply_patch(FILES, hunk_patch(old="", new=""))
    git = apply_patch(FILES, "diff --git a/src/kernel.cu b/src/kernel.cu\nindex 83db48f..bf269f4 100644\n"
                      + hunk_patch())
    stamped = apply_patch(FILES, hunk_patch().replace("a/src/kernel.cu", "a/src/kernel.cu\t2024-01-01 10:00"))
    assert plain == git == stamped == apply_patch(FILES, hunk_patch())
    assert patch_targets(FILES, hunk_patch(old="", new="")) == ["src/kernel.cu"]


def test_patch_prefers_a_real_directory_named_a_when_headers_are_not_git_style() -> None:
    files = {"a/x.txt": b"one\n", "x.txt": b"other\n"}
    out = apply_patch(files, "--- a/x.txt\n+++ a/x.txt\n@@ -1 +1 @@\n-one\n+two\n")
    assert out == {"a/x.txt": b"two\n"}


def test_patch_git_sections_for_two_files() -> None:
    patch = ("diff --git a/src/util.h b/src/util.h\nindex 1..2 100644\n--- a/src/util.h\n+++ b/src/util.h\n"
             "@@ -2 +2 @@\n-int helper();\n+int helper(int);\n"
             "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
             "@@ -1,2 +1,2 @@\n-# demo\n+# Demo\n use kernel.cu\n")
    out = apply_patch(FILES, patch)
    assert out == {"src/util.h": b"#pragma once\nint helper(int);\n", "README.md": b"# Demo\nuse kernel.cu\n"}


@pytest.mark.parametrize("offset", [-9, -1, 1, 12, 50])
def test_patch_offset_fuzz_finds_the_block_nearby(offset: int) -> None:
    out = apply_patch(FILES, hunk_patch(header=f"@@ -{10 + offset},3 +{10 + offset},3 @@"))
    assert lines_of(out["src/kernel.cu"])[10] == "LINE 11"


def test_patch_beyond_the_fuzz_window_is_refused_but_points_at_the_block() -> None:
    with pytest.raises(PatchError) as info:
        apply_patch(FILES, hunk_patch(header="@@ -70,3 +70,3 @@"))
    message = str(info.value)
    assert "src/kernel.cu" in message and "@@ -70,3 +70,3 @@" in message
    assert "do occur at line(s) 10" in message


def test_patch_fuzz_keeps_later_hunks_in_step() -> None:
    # Both headers are 5 lines off; the second hunk follows the offset the first one needed.
    patch = ("--- a/src/kernel.cu\n+++ b/src/kernel.cu\n@@ -15,3 +15,3 @@\n line 10\n-line 11\n+X\n line 12\n"
             "@@ -25,3 +25,4 @@\n line 20\n+Y\n line 21\n line 22\n")
    new = lines_of(apply_patch(FILES, patch)["src/kernel.cu"])
    assert new[10] == "X" and new[20] == "Y"


def test_patch_mismatch_names_file_hunk_and_first_bad_line() -> None:
    patch = ("--- a/src/kernel.cu\n+++ b/src/kernel.cu\n@@ -2,2 +2,2 @@\n line 2\n-line 3\n+three\n"
             "@@ -40,3 +40,3 @@\n line 40\n-line 41 \n+x\n line 42\n")
    with pytest.raises(PatchError) as info:
        apply_patch(FILES, patch)
    message = str(info.value)
    assert "file 'src/kernel.cu', hunk 2 of 2 (@@ -40,3 +40,3 @@)" in message
    assert "line 41: expected 'line 41 ' but the file has 'line 41'" in message
    assert "whitespace" in message and "Nothing was applied" in message
    assert isinstance(info.value, ValueError)


def test_patch_mismatch_past_end_of_file() -> None:
    patch = "--- a/src/util.h\n+++ b/src/util.h\n@@ -2,2 +2,2 @@\n int helper();\n-int other();\n+x\n"
    with pytest.raises(PatchError, match="file ends at line 2"):
        apply_patch(FILES, patch)


def test_patch_overlapping_or_out_of_order_hunks_are_refused() -> None:
    patch = ("--- a/src/kernel.cu\n+++ b/src/kernel.cu\n@@ -20,2 +20,2 @@\n line 20\n-line 21\n+X\n"
             "@@ -10,3 +10,3 @@\n line 10\n-line 11\n+LINE 11\n line 12\n")
    with pytest.raises(PatchError, match="file order"):
        apply_patch(FILES, patch)


def test_patch_no_newline_marker_on_both_sides() -> None:
    files = {"f.txt": b"a\nb"}
    out = apply_patch(files, "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n"
                      "\\ No newline at end of file\n+c\n\\ No newline at end of file\n")
    assert out == {"f.txt": b"a\nc"}
    # Adding the final newline, and removing it.
    out = apply_patch(files, "--- f.txt\n+++ f.txt\n@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+b\n")
    assert out == {"f.txt": b"a\nb\n"}
    out = apply_patch({"f.txt": b"a\nb\n"}, "--- f.txt\n+++ f.txt\n@@ -2 +2 @@\n-b\n+b\n"
                      "\\ No newline at end of file\n")
    assert out == {"f.txt": b"a\nb"}


def test_patch_appending_after_an_unterminated_last_line_keeps_lines_apart() -> None:
    out = apply_patch({"f.txt": b"a\nb"}, "--- f.txt\n+++ f.txt\n@@ -2 +2,2 @@\n b\n+c\n")
    assert out == {"f.txt": b"a\nb\nc\n"}


def test_patch_keeps_crlf_endings() -> None:
    patch = "--- w.txt\n+++ w.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    out = apply_patch({"w.txt": b"a\r\nb\r\nc\r\n"}, patch)
    assert out == {"w.txt": b"a\r\nB\r\nc\r\n"}


def test_patch_empty_lines_are_blank_context_and_trailing_ones_are_ignored() -> None:
    files = {"f.txt": b"a\n\nb\n"}
    out = apply_patch(files, "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n\n\n")
    assert out == {"f.txt": b"a\n\nc\n"}


def test_patch_pure_insertion_at_the_top() -> None:
    out = apply_patch(FILES, "--- a/src/util.h\n+++ b/src/util.h\n@@ -0,0 +1 @@\n+// header\n")
    assert out["src/util.h"] == b"// header\n#pragma once\nint helper();\n"


def test_patch_insertion_without_context_follows_the_header_count() -> None:
    files = {"f": b"a\nb\nc\n"}
    assert apply_patch(files, "--- f\n+++ f\n@@ -2,0 +3 @@\n+X\n") == {"f": b"a\nb\nX\nc\n"}
    assert apply_patch(files, "--- f\n+++ f\n@@ -2,1 +2,2 @@\n+X\n") == {"f": b"a\nX\nb\nc\n"}
    with pytest.raises(PatchError, match="only adds lines, at line 10, but the file has 3 lines"):
        apply_patch(files, "--- f\n+++ f\n@@ -9,0 +10 @@\n+X\n")


def test_patch_inside_a_markdown_fence_with_prose_around_it() -> None:
    patch = "Here is the change:\n```diff\n" + hunk_patch() + "```\nThis removes a bank conflict.\n"
    assert apply_patch(FILES, patch) == apply_patch(FILES, hunk_patch())


def test_patch_same_file_twice_applies_in_sequence() -> None:
    first = "--- a/src/util.h\n+++ b/src/util.h\n@@ -2 +2 @@\n-int helper();\n+int helper(int);\n"
    second = "--- a/src/util.h\n+++ b/src/util.h\n@@ -2 +2 @@\n-int helper(int);\n+int helper(long);\n"
    assert apply_patch(FILES, first + second)["src/util.h"].endswith(b"int helper(long);\n")


@pytest.mark.parametrize("patch, needle", [
    ("", "empty"),
    ("   \n\n", "empty"),
    ("just prose, no diff\n", "no file header"),
    ("--- /dev/null\n+++ b/new.cu\n@@ -0,0 +1 @@\n+x\n", "creating files is not supported"),
    ("--- a/src/util.h\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-#pragma once\n-int helper();\n",
     "deleting files is not supported"),
    ("diff --git a/n.cu b/n.cu\nnew file mode 100644\n", "creating files is not supported"),
    ("diff --git a/src/util.h b/src/u.h\nsimilarity index 100%\nrename from src/util.h\n", "renaming"),
    ("--- a/src/util.h\n+++ b/README.md\n@@ -1 +1 @@\n-#pragma once\n+x\n", "renaming"),
    ("diff --git a/x.bin b/x.bin\nBinary files a/x.bin and b/x.bin differ\n", "binary"),
    ("--- a/src/nope.cu\n+++ b/src/nope.cu\n@@ -1 +1 @@\n-a\n+b\n", "no file 'b/src/nope.cu'"),
    ("--- a/src/kernal.cu\n+++ b/src/kernal.cu\n@@ -1 +1 @@\n-a\n+b\n", "Did you mean 'src/kernel.cu'"),
    ("@@ -1 +1 @@\n-a\n+b\n", "before any file header"),
    ("--- a/src/util.h\n+++ b/src/util.h\n@@ bad @@\n-a\n", "malformed hunk header"),
    ("--- a/src/util.h\n+++ b/src/util.h\n@@ -1,2 +1,2 @@\n#pragma once\n-int helper();\n+x\n",
     "does not start with ' '"),
    ("--- a/src/util.h\n+++ b/src/util.h\n@@ -1,2 +1,2 @@\n #pragma once\n\t\n-int helper();\n+x\n",
     "does not start with ' '"),
    ("--- a/src/util.h\n+++ b/src/util.h\n", "no '@@ ... @@' hunk"),
    ("--- a/src/util.h\n+++ b/src/util.h\n@@ -1 +1 @@\n #pragma once\n", "changes nothing"),
])
def test_patch_refusals(patch: str, needle: str) -> None:
    with pytest.raises(PatchError) as info:
        apply_patch(FILES, patch)
    assert needle in str(info.value)


def test_patch_does_not_mutate_its_input() -> None:
    files = dict(FILES)
    apply_patch(files, hunk_patch())
    assert files == FILES


# -- tools ------------------------------------------------------------------------------------------


def planner(**kwargs) -> ToolBox:
    return ToolBox(dict(FILES), EDITABLE, "planner", **kwargs)


def editor(edit_mode: str = "file") -> ToolBox:
    return ToolBox(dict(FILES), EDITABLE, "editor", edit_mode=edit_mode)


def call(box: ToolBox, name: str, **args) -> str:
    return box.call(name, json.dumps(args))


def test_schemas_per_role_are_well_formed() -> None:
    names = {
        "planner": [t["function"]["name"] for t in planner().schemas()],
        "file": [t["function"]["name"] for t in editor("file").schemas()],
        "patch": [t["function"]["name"] for t in editor("patch").schemas()],
    }
    assert names == {"planner": ["search_repo", "read_file", "get_profile", "search_memory", "submit_plan"],
                     "file": ["read_file", "write_file"], "patch": ["read_file", "apply_patch"]}
    for box in (planner(), editor("file"), editor("patch")):
        for entry in box.schemas():
            assert entry["type"] == "function"
            fn = entry["function"]
            params = fn["parameters"]
            assert fn["description"].endswith(".") and params["type"] == "object"
            assert params["additionalProperties"] is False
            assert set(params["required"]) <= set(params["properties"])
            for prop in params["properties"].values():
                assert prop["type"] in ("string", "integer") and prop["description"]
    read = next(t for t in planner().schemas() if t["function"]["name"] == "read_file")["function"]
    assert read["parameters"]["required"] == ["path"]
    write = editor().schemas()[1]["function"]
    assert "src/kernel.cu" in write["parameters"]["properties"]["path"]["description"]


def test_bad_role_or_mode_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        ToolBox({}, (), "summarizer")
    with pytest.raises(ValueError):
        ToolBox({}, (), "editor", edit_mode="sed")


def test_search_repo_hits_skip_binaries_and_report_left_out() -> None:
    out = call(planner(), "search_repo", pattern="kernel")
    assert "README.md:2: use kernel.cu" in out and "blob.bin" not in out
    out = call(planner(), "search_repo", pattern=r"^line \d+$")
    hits = out.splitlines()
    assert len(hits) == 51 and hits[0] == "src/kernel.cu:1: line 1"
    assert hits[49] == "src/kernel.cu:50: line 50"
    assert "50 more hit(s) were left out" in hits[-1]
    assert call(planner(), "search_repo", pattern="helper").splitlines()[-1] == "[0 more hits: all 1 shown]"
    assert "no match" in call(planner(), "search_repo", pattern="zzz")


def test_search_repo_truncates_long_lines() -> None:
    box = ToolBox({"long.txt": b"x" * 500 + b"\n"}, (), "planner")
    line = call(box, "search_repo", pattern="x").splitlines()[0]
    assert line.startswith("long.txt:1: " + "x" * 200) and "x" * 201 not in line


def test_search_repo_glob() -> None:
    assert "README.md" not in call(planner(), "search_repo", pattern="kernel|helper", glob="*.h")
    assert "src/util.h:2" in call(planner(), "search_repo", pattern="helper", glob="src/*.h")
    assert "src/util.h:2" in call(planner(), "search_repo", pattern="helper", glob="util.*")
    assert "src/util.h:2" in call(planner(), "search_repo", pattern="helper", glob="**/*.h")
    assert "no text file matching glob '*.py'" in call(planner(), "search_repo", pattern="x", glob="*.py")


def test_search_repo_bad_regex() -> None:
    with pytest.raises(ToolError, match="invalid regular expression"):
        call(planner(), "search_repo", pattern="foo(")


def test_read_file_numbering_and_ranges() -> None:
    box = planner()
    out = call(box, "read_file", path="src/kernel.cu", start_line=9, end_line=12)
    assert out.splitlines() == ["    9| line 9", "   10| line 10", "   11| line 11", "   12| line 12",
                                "[lines 9-12 of 100]"]
    assert call(box, "read_file", path="src/util.h") == "    1| #pragma once\n    2| int helper();"
    assert call(box, "read_file", path="src/kernel.cu", start_line=99, end_line=500).splitlines() == [
        "   99| line 99", "  100| line 100"]
    with pytest.raises(ToolError, match="past the end"):
        call(box, "read_file", path="src/util.h", start_line=3)
    with pytest.raises(ToolError, match="before start_line"):
        call(box, "read_file", path="src/kernel.cu", start_line=5, end_line=4)
    with pytest.raises(ToolError, match="at least 1"):
        call(box, "read_file", path="src/kernel.cu", start_line=0)
    with pytest.raises(ToolError, match="binary"):
        call(box, "read_file", path="data/blob.bin")


def test_read_file_caps_at_400_lines_and_says_so() -> None:
    big = "".join(f"x{n}\n" for n in range(1, 1001)).encode()
    box = ToolBox({"big.c": big, "empty.c": b""}, (), "planner")
    lines = call(box, "read_file", path="big.c").splitlines()
    assert len(lines) == 401 and lines[399] == "  400| x400"
    assert "cut at 400 lines" in lines[-1] and "start_line=401" in lines[-1]
    lines = call(box, "read_file", path="big.c", start_line=900).splitlines()
    assert lines[0] == "  900| x900" and lines[-1] == " 1000| x1000"
    assert "empty" in call(box, "read_file", path="empty.c")


@pytest.mark.parametrize("path, rule", [
    ("/etc/passwd", "absolute"),
    ("../secrets.txt", "'..'"),
    ("src/../README.md", "'..'"),
    ("src\\kernel.cu", "backslash"),
    ("src//kernel.cu", "empty segments"),
    ("src/", "empty segments"),
    ("./src/kernel.cu", "'.'"),
    ("~/notes", "'~'"),
    ("C:/x", "absolute"),
    ("", "empty"),
])
def test_path_rules_apply_to_every_tool(path: str, rule: str) -> None:
    for box, name, extra in ((planner(), "read_file", {}), (editor(), "read_file", {}),
                             (editor(), "write_file", {"content": "x"})):
        with pytest.raises(ToolError, match="refused") as info:
            call(box, name, path=path, **extra)
        assert rule in str(info.value)


def test_missing_file_suggests_near_names() -> None:
    with pytest.raises(ToolError, match="no file 'kernel.cu'.*'src/kernel.cu'"):
        call(planner(), "read_file", path="kernel.cu")


def test_get_profile() -> None:
    profile = {"ncu": {"dram_throughput": 81.5}, "occupancy": 0.5}
    box = planner(profile=profile)
    assert json.loads(call(box, "get_profile")) == profile
    assert json.loads(call(box, "get_profile", aspect="ncu")) == {"dram_throughput": 81.5}
    with pytest.raises(ToolError, match="'ncu', 'occupancy'"):
        call(box, "get_profile", aspect="nsys")
    assert call(planner(), "get_profile") == "no profile was collected for this run"
    assert call(planner(profile={}), "get_profile", aspect="ncu") == "no profile was collected for this run"
    aspect = box.schemas()[2]["function"]["parameters"]["properties"]["aspect"]["description"]
    assert "'ncu'" in aspect


def test_search_memory() -> None:
    assert call(planner(), "search_memory", query="tiling") == "no experience recorded yet"
    seen: list[str] = []

    def memory(query: str) -> list[str]:
        seen.append(query)
        return ["tiling by 32 helped softmax", "vectorized loads were neutral"] if "tiling" in query else []

    box = planner(memory_search=memory)
    assert call(box, "search_memory", query="tiling") == ("[1] tiling by 32 helped softmax\n\n"
                                                          "[2] vectorized loads were neutral")
    assert "no recorded experience" in call(box, "search_memory", query="warp shuffle")
    assert seen == ["tiling", "warp shuffle"]
    with pytest.raises(ToolError, match="empty"):
        call(box, "search_memory", query="  ")


def test_submit_plan() -> None:
    box = planner()
    assert box.plan is None
    assert call(box, "submit_plan", plan="  tile the loop by 32 in src/kernel.cu  ") == "plan recorded"
    assert box.plan == "tile the loop by 32 in src/kernel.cu"
    with pytest.raises(ToolError, match="empty"):
        call(box, "submit_plan", plan=" \n")
    with pytest.raises(ToolError, match="4001 characters"):
        call(box, "submit_plan", plan="x" * 4001)
    assert call(box, "submit_plan", plan="x" * 4000) == "plan recorded"


def test_write_file_and_editor_sees_its_own_edits() -> None:
    box = editor()
    assert box.edits == {}
    assert "wrote src/kernel.cu (2 lines" in call(box, "write_file", path="src/kernel.cu", content="a\nb\n")
    assert box.edits == {"src/kernel.cu": b"a\nb\n"}
    assert call(box, "read_file", path="src/kernel.cu") == "    1| a\n    2| b"
    assert "unchanged" in call(box, "write_file", path="src/kernel.cu", content="a\nb\n")
    # Writing the baseline back is a revert, not an edit.
    call(box, "write_file", path="src/kernel.cu", content=KERNEL.decode())
    assert box.edits == {}


def test_write_file_refuses_non_editable_and_unknown_files() -> None:
    box = editor()
    with pytest.raises(ToolError, match="not editable; only these files may be changed: src/kernel.cu"):
        call(box, "write_file", path="src/util.h", content="x")
    with pytest.raises(ToolError, match="no file 'src/new.cu'"):
        call(box, "write_file", path="src/new.cu", content="x")
    assert box.edits == {}


def test_apply_patch_tool_edits_and_reads_back() -> None:
    box = editor("patch")
    assert "patch applied: src/kernel.cu (now 100 lines)" in call(box, "apply_patch", patch=hunk_patch())
    out = call(box, "read_file", path="src/kernel.cu", start_line=11, end_line=11)
    assert out.startswith("   11| LINE 11")
    # A second patch applies against the edited content, not the snapshot.
    second = hunk_patch().replace("-line 11\n+LINE 11", "-LINE 11\n+Line 11")
    call(box, "apply_patch", patch=second)
    assert lines_of(box.edits["src/kernel.cu"])[10] == "Line 11"
    with pytest.raises(ToolError, match="patch not applied.*expected 'line 11' but the file has 'Line 11'"):
        call(box, "apply_patch", patch=hunk_patch())


def test_apply_patch_tool_refuses_non_editable_and_bad_patches() -> None:
    box = editor("patch")
    util = "--- a/src/util.h\n+++ b/src/util.h\n@@ -2 +2 @@\n-int helper();\n+int helper(int);\n"
    with pytest.raises(ToolError, match="'src/util.h' is not editable"):
        call(box, "apply_patch", patch=hunk_patch() + util)
    with pytest.raises(ToolError, match="creating files is not supported"):
        call(box, "apply_patch", patch="--- /dev/null\n+++ b/x.cu\n@@ -0,0 +1 @@\n+x\n")
    with pytest.raises(ToolError, match="empty"):
        call(box, "apply_patch", patch="")
    assert box.edits == {}  # all or nothing: the editable half of the first patch was not kept


def test_edit_mode_decides_the_edit_tool() -> None:
    with pytest.raises(ToolError, match="use apply_patch"):
        call(editor("patch"), "write_file", path="src/kernel.cu", content="x")
    with pytest.raises(ToolError, match="use write_file"):
        call(editor("file"), "apply_patch", patch=hunk_patch())


def test_roles_keep_to_their_tools() -> None:
    with pytest.raises(ToolError, match="search_repo is a planner tool, not yours"):
        call(editor(), "search_repo", pattern="x")
    with pytest.raises(ToolError, match="write_file is an editor tool"):
        call(planner(), "write_file", path="src/kernel.cu", content="x")
    assert planner().edits == {}


def test_unknown_tool() -> None:
    with pytest.raises(ToolError, match="unknown tool 'run_shell'; your tools are: search_repo, read_file"):
        planner().call("run_shell", "{}")


@pytest.mark.parametrize("raw, needle", [
    ("{not json", "not valid JSON"),
    ('["src/kernel.cu"]', "must be a JSON object"),
    ('{"path": "src/kernel.cu", "mode": "r"}', "no argument(s) 'mode'"),
    ("{}", "missing its required argument 'path'"),
    ('{"path": null}', "missing its required argument 'path'"),
    ('{"path": 3}', "'path' of read_file must be a string, not an integer"),
    ('{"path": "src/kernel.cu", "start_line": "3"}', "must be an integer, not a string"),
    ('{"path": "src/kernel.cu", "start_line": 2.0}', "must be an integer, not a number"),
    ('{"path": "src/kernel.cu", "end_line": true}', "must be an integer, not a boolean"),
])
def test_argument_validation(raw: str, needle: str) -> None:
    with pytest.raises(ToolError) as info:
        planner().call("read_file", raw)
    assert needle in str(info.value)


def test_null_optional_argument_means_left_out() -> None:
    box = planner()
    assert box.call("read_file", '{"path": "src/util.h", "start_line": null}').startswith("    1| #pragma")
    assert "helper" in box.call("search_repo", '{"pattern": "helper", "glob": null}')


def test_tools_never_touch_the_filesystem(tmp_path, monkeypatch) -> None:
    (tmp_path / "outside.txt").write_text("secret\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ToolError, match="no file 'outside.txt'"):
        call(planner(), "read_file", path="outside.txt")
    box = editor()
    call(box, "write_file", path="src/kernel.cu", content="x\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside.txt"]


def test_docs_agents_md_lists_every_tool_and_argument_the_model_sees() -> None:
    from pathlib import Path

    from kernelopt_core.llm.tools import ToolBox

    doc = (Path(__file__).resolve().parents[1] / "docs" / "agents.md").read_text()
    for role, mode in (("planner", "file"), ("editor", "file"), ("editor", "patch")):
        for tool in ToolBox({"k.cu": b"x\n"}, ("k.cu",), role, edit_mode=mode).schemas():
            function = tool["function"]
            assert f"### `{function['name']}`" in doc
            for argument in function["parameters"]["properties"]:
                assert f"- `{argument}`" in doc, (function["name"], argument)
