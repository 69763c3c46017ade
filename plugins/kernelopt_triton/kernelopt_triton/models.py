"""The ``inductor`` backend: a torch.compile'd model's own Triton kernels (docs/triton-models.md).

``kernelopt run model.py`` captures the kernels Inductor generates for the model on the GPU
(a child process: ``python -m kernelopt_triton.inductor capture``), ranks them by share of GPU
time (``ranking.txt`` beside the capture, also printed), writes a standalone kernel file for
each of the top K (``--top``, default 1) or the one named (``--kernel``), and hands those to
the same harness as any user kernel file. The engine gate swaps the edited kernel back into the
compiled model (``python -m kernelopt_triton.engine``) and compares whole-model outputs and time.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core.api import (
    Command,
    PrerequisiteError,
    Settings,
    Target,
    Tree,
    UsageError,
    current_values,
    gpu_lock,
    run_process,
)
from kernelopt_triton import inductor_rules
from kernelopt_triton.backend import TritonBackend, require_prerequisites
from kernelopt_triton.capture_depthwise import depthwise_line
from kernelopt_triton.capture_record import RACE_FILE
from kernelopt_triton.compile_mode import describe
from kernelopt_triton.inductor_forms import PENDING, SWITCH, form_knobs, forms_line
from kernelopt_triton.inductor_parse import parse_kernel_source
from kernelopt_triton.inductor_template import parse_template
from kernelopt_triton.options import TritonOptions

MODEL_CONFIDENCE = 0.95  # above a standalone kernel file's: a model file has no @triton.jit
CAPTURE_TIMEOUT_S = 1800.0
DEPTHWISE_HINT = ("the capture ran the depthwise convolutions it chose as kernelopt's kernel "
                  "(depthwise.json beside it); if that is what failed, `[triton] depthwise = "
                  "false` in kernelopt.toml captures with the library's")


def _captured(capture_dir: Path, forms: bool, depthwise: bool) -> bool:
    """A capture is there, with its reduction forms and its depthwise choice made where they
    are wanted (a capture of before them has no ``forms`` / ``depthwise``: captured again)."""
    path = capture_dir / "kernels.json"
    if not path.is_file():
        return False
    record = json.loads(path.read_text())
    return (not forms or "forms" in record) and (not depthwise or "depthwise" in record)


def _profiled(kernel: dict[str, Any]) -> dict[str, Any]:
    """A captured kernel's time per call in its model's step (the profile's time per step over
    its calls), where kernels.json has it: with the file's BYTES, the profiled fraction of
    peak a campaign's plan shows."""
    try:
        per_call_ms = float(kernel["time_us"]) / int(kernel["calls"]) / 1000.0
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return {}
    return {"profiled_ms": per_call_ms} if per_call_ms > 0 else {}


def _forms_error(capture_dir: Path) -> str | None:
    path = capture_dir / "kernels.json"
    return (json.loads(path.read_text()).get("forms") or {}).get("error") if path.is_file() else None


def race_argv(model: Path, capture_dir: Path) -> tuple[str, ...]:
    """model_compare's arguments for the capture's race: the default compile as the model's
    own, reduce-overhead beside it, 8 paired rounds on the capture's cache (the sign test at
    SIGN_ALPHA reads 7 of 7 as faster, not 6 of 6; with 8, every round: fastest()). Where the
    capture chose kernelopt's depthwise kernel, both sides are compiled with it, as the runs
    will compile the model: the race is between candidates for the model kernelopt returns
    (its opaque op, a Python dispatch a call without CUDA graphs, would otherwise be judged
    by the library's times)."""
    depthwise = _depthwise_args(capture_dir)
    return ("--compile-mode", "default", "--modes", "eager,reduce-overhead", "--rounds", "8",
            "--windows", "3", "--cache-dir", str(capture_dir / "cache"),
            *depthwise, *(("--depthwise-everywhere",) if depthwise else ()),
            "--out", str(capture_dir / RACE_FILE), str(model))


def raced_mode(race: dict[str, Any]) -> tuple[str | None, str]:
    """The compile mode a race (model_compare's line, default against reduce-overhead) chose
    for the runs: None for the default; and the words that say which and why."""
    if race.get("error"):
        return None, f"the default compile: the race against reduce-overhead failed: {race['error']}"
    chosen = race.get("kernelopt")
    why = str((race.get("choice") or {}).get("why", ""))
    modes = race.get("modes") or {}
    times = ", ".join(f"{m} {modes[m]['ms']:.4f} ms" for m in ("default", "reduce-overhead")
                      if m in modes)
    depthwise = race.get("depthwise") or {}
    if depthwise.get("as"):
        times += f"; both with {depthwise['as']}"
        none = [m for m, ops in (depthwise.get("ops") or {}).items() if not ops]
        if none:  # the decomposition kept the library there: said, not hidden
            times += f" (traced into no call of the op: {', '.join(none)})"
    if chosen == "reduce-overhead":
        return chosen, f"reduce-overhead, the faster measured ({times}): {why}"
    return None, f"the default compile ({times}): {why}" if why else "the default compile"


def _with_hint(exc: Exception, hint: str) -> Exception:
    """``exc`` again with ``hint`` added: a UsageError's hint, a RuntimeError's text."""
    if isinstance(exc, UsageError):
        return UsageError(exc.args[0], hint="; ".join(filter(None, (getattr(exc, "hint", None),
                                                                    hint))))
    return RuntimeError(f"{exc}\n{hint}")


def _raced_with_depthwise(race: dict[str, Any]) -> bool:
    """A race that ran both sides with the capture's depthwise choice, or failed (said once,
    not run again)."""
    return bool(race.get("error")) or (race.get("depthwise") or {}).get("sides") == "every compile"


def _depthwise_args(capture_dir: Path) -> tuple[str, ...]:
    """``--depthwise FILE`` where the capture chose kernelopt's kernel for a depthwise shape:
    the engine and the model check then build the model the capture compiled."""
    from kernelopt_triton.capture_depthwise import DEPTHWISE_FILE

    record = capture_dir / DEPTHWISE_FILE  # read as JSON: this process never imports torch
    if record.is_file() and json.loads(record.read_text()).get("launches"):
        return ("--depthwise", str(record))
    return ()


def _is_model_file(path: Path) -> bool:
    from kernelopt_triton.inductor import is_model_file  # AST only: cheap, no torch

    return is_model_file(path)


class InductorBackend(TritonBackend):
    name = "inductor"

    def detect(self, path: Path) -> float:
        return MODEL_CONFIDENCE if path.is_file() and _is_model_file(path) else 0.0

    def discover(self, path: Path, settings: Settings) -> list[Target]:
        from kernelopt_triton import inductor

        if not _is_model_file(path):
            raise UsageError(f"{path} is not a model file",
                             hint="a model file defines model() (or MODEL) and inputs(seed, device) "
                             "(docs/triton-models.md)")
        options = settings.section(TritonOptions)
        top = options.top
        require_prerequisites()
        why = inductor.model_prerequisite_error()
        if why:
            raise PrerequisiteError(f"{path.name}: {why}",
                                    hint="run it on a machine with a CUDA GPU and a CUDA build of "
                                    "torch; `kernelopt run examples/triton/` checks kernels here")
        model = path.resolve()
        digest = hashlib.sha256(model.read_bytes()).hexdigest()[:12]
        mode = options.compile_mode
        forms = "" if options.reduction_forms else "-noforms"
        forms += "" if options.depthwise else "-nodepthwise"
        capture_dir = settings.state_root / "work" / f"inductor-{model.stem}-{digest}-{mode or 'file'}{forms}"
        # the capture runs the model on the GPU: under the GPU lock, the cache checked inside it
        # (two runs of one model capture once)
        with gpu_lock(settings.state_root):
            if not _captured(capture_dir, options.reduction_forms, options.depthwise):
                try:
                    self._child(("capture", str(model), "--out", str(capture_dir),
                                 *(("--compile-mode", mode) if mode else ()),
                                 *(() if options.reduction_forms else ("--no-forms",)),
                                 *(() if options.depthwise else ("--no-depthwise",))),
                                capture_dir, "capture")
                except (RuntimeError, UsageError) as exc:
                    # the capture was written before its second compile (the reduction forms)
                    # ended: it stands without them, as kernels.json says
                    if _forms_error(capture_dir) != PENDING:
                        if not _depthwise_args(capture_dir):
                            raise
                        # it compiled with kernelopt's kernel: say how to capture without
                        raise _with_hint(exc, DEPTHWISE_HINT) from exc
        record = inductor.load_record(capture_dir)
        compile_record = record.get("compile") or {}
        named = compile_record.get("named", bool(compile_record.get("kwargs")))  # older records
        if mode is None and not named and str(record.get("device", "")).startswith("cuda"):
            mode, raced = self._race(model, capture_dir, settings)  # nothing said: the faster
        else:
            raced = ""
        name = options.kernel
        try:
            chosen = inductor.select_kernels(record, top, name)
        except KeyError as exc:
            raise UsageError(str(exc.args[0]), hint="--kernel takes a name from ranking.txt") from exc
        targets_dir = capture_dir / "targets"
        args: tuple[str, ...] = ("generate", str(capture_dir), "--targets", str(targets_dir))
        args += ("--kernel", name) if name else ("--top", str(top))
        skipped_file = targets_dir / inductor.SKIPPED_FILE
        skipped_file.unlink(missing_ok=True)
        self._child(args, capture_dir, "generate")
        skipped = json.loads(skipped_file.read_text()) if skipped_file.is_file() else {}
        self._own_repository(targets_dir)
        ranking = capture_dir / "ranking.txt"
        compiled = {"mode": mode} if raced and mode else compile_record.get("kwargs", {})
        preface = (f"{model.name}, compiled as {describe(compiled)}: Triton kernels by share of "
                   f"GPU time ({ranking})\n" + ranking.read_text()) if ranking.is_file() else ""
        preface = (f"compile mode: {raced}\n" if raced else "") + preface
        preface += "".join(f"skipped {k}: {why}\n" for k, why in skipped.items())
        preface += forms_line(record.get("forms"))
        if line := depthwise_line(record.get("depthwise")):
            preface += line + "\n"
        if not name:  # the top K that stand alone (generate skips the others, in rank order)
            chosen = [k for k in record["kernels"] if k["name"] not in skipped
                      and (targets_dir / f"{k['name']}.py").is_file()][:top]
        return [attrs.evolve(self._model_target(targets_dir / f"{k['name']}.py", model, k, mode),
                             preface=preface) for k in chosen if k["name"] not in skipped]

    def _race(self, model: Path, capture_dir: Path, settings: Settings) -> tuple[str | None, str]:
        """A model whose user names no compile: the default compile against reduce-overhead
        (the same kernels under CUDA graphs), in one process on the capture's cache
        (model_compare, once per capture: race.json); the mode the runs then compile, None for
        the default, and why. max-autotune is not raced: its autotuning costs minutes (the
        model check times it)."""
        race = capture_dir / RACE_FILE
        with gpu_lock(settings.state_root):
            if race.is_file() and _depthwise_args(capture_dir) and not _raced_with_depthwise(
                    json.loads(race.read_text())):
                race.unlink()  # raced before the race took the capture's depthwise choice
            if not race.is_file():
                try:
                    self._child(race_argv(model, capture_dir), capture_dir, "race",
                                module="kernelopt_triton.model_compare")
                except (RuntimeError, UsageError, PrerequisiteError) as exc:
                    # the default compile works (the capture ran it): the race is an extra,
                    # so its failure is said and kept (not run again), and the default stays
                    first = str(exc).splitlines()[0][:300]
                    race.write_text(json.dumps({"kernelopt_model": 1, "error": (
                        f"{first} (the whole log is {capture_dir / 'race.log'}); "
                        "--compile-mode default skips the race")}) + "\n")
        return raced_mode(json.loads(race.read_text()))

    def _child(self, args: tuple[str, ...], capture_dir: Path, step: str,
               module: str = "kernelopt_triton.inductor") -> None:
        """One inductor step in a child (the caller holds the GPU lock for GPU steps)."""
        capture_dir.mkdir(parents=True, exist_ok=True)
        command = Command((sys.executable, "-m", module, *args), capture_dir,
                          timeout_s=CAPTURE_TIMEOUT_S, label=step)
        log = capture_dir / f"{step}.log"
        result = run_process(command, log)
        if result.ok:
            return
        what = f"the model's {step} step failed: {result.describe()}\n{result.tail(1500)}"
        if result.returncode == 3:  # the child's word for a missing prerequisite
            raise PrerequisiteError(what, hint=f"the whole log is {log}")
        if result.returncode == 2 or result.timed_out:  # the model raised, nothing stands alone
            raise UsageError(what, hint=f"the whole log is {log}" + (
                "; a smaller model or fewer inputs captures faster" if result.timed_out else ""))
        raise RuntimeError(f"{what}\n(the whole log is {log})")  # ours: exit 4, a bug to report

    @staticmethod
    def _own_repository(targets_dir: Path) -> None:
        # The generated files live under the state root, which git ignores; as their own
        # repository the workspace snapshots them as files of a project, not ignored ones.
        if not (targets_dir / ".git").exists():
            from dulwich.repo import Repo

            Repo.init(str(targets_dir))

    def _model_target(self, file: Path, model: Path, kernel: dict[str, Any],
                      compile_mode: str | None = None) -> Target:
        target = self._target(file)
        meta_path = file.with_suffix(".json")
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        context = tuple(c for c in meta.get("context", [f"{file.stem}_orig.py"])
                        if (file.parent / c).is_file())
        data = {**(target.data or {}), "model": model, "kernel": kernel["name"],
                "capture_dir": str(file.parent.parent), "compile_mode": compile_mode}
        source = file.parent.parent / kernel.get("file", "")
        if source.is_file():  # Inductor's own limits on the launch knobs (inductor_rules.py)
            ks = parse_kernel_source(source.read_text(encoding="utf-8"), kernel["name"])
            baseline = current_values(target.knobs, {file.name: file.read_bytes()})
            hints = (parse_template(ks.jit_source, ks.name).sizes if ks.heuristic == "template"
                     else ks.size_hints)
            form = file.parent.parent / str((kernel.get("form") or {}).get("file", ""))
            text = file.read_text(encoding="utf-8")
            if kernel.get("form") and form.is_file() and SWITCH.search(text):  # two forms
                other = parse_kernel_source(form.read_text(encoding="utf-8"), kernel["form"]["name"])
                knobs = form_knobs(file.name, target.knobs, ks, other, baseline)
            else:
                knobs = inductor_rules.constrain(target.knobs, ks.heuristic, hints, baseline)
            target = attrs.evolve(target, knobs=knobs)
        return attrs.evolve(target, context=context,
                            time_share=kernel.get("share"), data=data,
                            name=f"{model.stem}-{kernel['name']}", **_profiled(kernel))

    def engine(self, target: Target, tree: Tree) -> Command | None:
        data = target.data or {}
        if "model" not in data:
            return None
        return Command((sys.executable, "-m", "kernelopt_triton.engine", str(data["model"]),
                        "--kernel", data["kernel"], "--source", str(tree.src / target.editable[0]),
                        *self._compile_args(target)),
                       tree.src, env=self._env(target), timeout_s=600.0, label="engine")

    @staticmethod
    def _compile_args(target: Target) -> tuple[str, ...]:
        """The engine's and the model check's view of the capture: its compile mode, the
        kernel's captured source (found by its code) and its Inductor cache (the configs the
        capture's autotuning chose, its GEMM choices under max-autotune)."""
        data = target.data or {}
        args: tuple[str, ...] = ()
        if data.get("compile_mode"):
            args += ("--compile-mode", str(data["compile_mode"]))
        capture = Path(str(data.get("capture_dir", "")))
        if data.get("capture_dir") and capture.is_dir():
            source = capture / "kernels" / f"{data['kernel']}.py"
            if source.is_file():
                args += ("--capture-source", str(source))
            args += ("--cache-dir", str(capture / "cache"))
            args += _depthwise_args(capture)
        return args

    def engine_pair(self, target: Target, baseline: Tree, candidate: Tree) -> Command | None:
        """Both versions of the kernel in one engine process (engine.py, pair mode: the model
        compiled once, or once per version under CUDA graphs), compiled as the capture was,
        with the capture's own Inductor
        cache, so every kernel not swapped runs the config the capture timed and Triton
        binaries and autotuning are reused between runs."""
        command = self.engine(target, candidate)
        if command is None:
            return None
        extra: tuple[str, ...] = ("--baseline-source", str(baseline.src / target.editable[0]))
        return attrs.evolve(command, argv=(*command.argv, *extra))

    def model_compare(self, targets: list[Target], winners: dict[str, Path],
                      out_dir: Path) -> Command | None:
        """The model in every mode in one process (model_compare.py): eager, torch.compile
        default, max-autotune-no-cudagraphs, max-autotune, the model's own compile, and that
        compile with every winner in place; with the capture's Inductor cache, so the winners'
        compile runs the captured configs elsewhere and max-autotune's choices are reused."""
        models = {str((t.data or {}).get("model")) for t in targets}
        if len(models) != 1 or "None" in models:
            return None  # not one model's kernels
        from kernelopt_triton.model_compare import DEFAULT_MODES

        first = targets[0].data or {}
        argv: list[str] = [sys.executable, "-m", "kernelopt_triton.model_compare", models.pop(),
                           "--out", str(out_dir / "model_compare.json")]
        modes = DEFAULT_MODES
        for target in targets:
            if target.name in winners:
                data = target.data or {}
                argv += ["--swap", f"{data['kernel']}={winners[target.name] / target.editable[0]}"]
                source = Path(str(data.get("capture_dir", ""))) / "kernels" / f"{data['kernel']}.py"
                if data.get("capture_dir") and source.is_file():
                    argv += ["--capture-source", f"{data['kernel']}={source}"]
                modes = DEFAULT_MODES + ",kernelopt"
        capture = Path(str(first.get("capture_dir", "")))
        if first.get("capture_dir") and capture.is_dir() and (lowering := _depthwise_args(capture)):
            argv += lowering  # the kernelopt side: the swapped convolutions, winners or none
            modes = DEFAULT_MODES + ",kernelopt"
        argv += ["--modes", modes]
        if first.get("compile_mode"):
            argv += ["--compile-mode", str(first["compile_mode"])]
        if first.get("device") == "cpu":
            argv += ["--device", "cpu"]
        capture_dir = first.get("capture_dir")
        if capture_dir and Path(capture_dir).is_dir():
            argv += ["--cache-dir", str(Path(capture_dir) / "cache")]
        return Command(tuple(argv), out_dir, env=self._env(targets[0]), timeout_s=1200.0,
                       label="model check")


def backends() -> list[object]:
    return [InductorBackend()]
