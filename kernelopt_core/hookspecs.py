"""The hooks: the contract a kernelopt plugin author reads.

A plugin is a module (or object) with functions marked ``@hookimpl`` whose names match the
specs below. Installed packages expose it through the entry-point group ``kernelopt``::

    [project.entry-points.kernelopt]
    mybackend = "kernelopt_mybackend.plugin"

The core registers its own gates, planners, profilers, providers and doc lookup through these
same hooks (as pytest does), so any of them can be replaced or extended by a third party.

Rules (from pluggy): a hook may gain arguments in later versions but never renames one, and an
implementation may accept fewer arguments than the spec. Registration hooks return *named
records*; the core picks by configured name, and two plugins offering one name is an error that
names both. Nothing here decides *which backend* with ``firstresult`` (that would depend on
install order): every backend's ``detect`` returns a confidence and the core chooses.

A plugin's entry-point module imports only the core and the standard library; heavy imports
(torch, triton) happen inside methods so ``kernelopt --help`` stays fast.

Objects returned by registration hooks follow the protocols in this module. Backends *describe*
commands (:class:`~kernelopt_core.target.Command`); only the core spawns them, so the GPU lock,
timeouts and profiler wrapping stay in one place.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
import pluggy

if TYPE_CHECKING:
    import click

    from kernelopt_core.gates.base import GateContext, GateResult
    from kernelopt_core.planners.base import Outcome, PlanContext, Proposal
    from kernelopt_core.search import Node
    from kernelopt_core.settings import Settings
    from kernelopt_core.target import Command, Target, Tree

PROJECT = "kernelopt"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# --------------------------------------------------------------------------- protocols


@runtime_checkable
class Backend(Protocol):
    """Knows one kind of kernel project. It never owns a loop.

    ``name``: unique, used by ``--backend NAME`` and ``backend = "NAME"`` in kernelopt.toml.

    Optional methods, one capability each (leave them out when they do not apply; one set to
    None counts as absent): the core tests each with ``isinstance`` against the protocol named
    in brackets, defined in kernelopt_core/capabilities.py (public in kernelopt_core.api).

    * ``shape_check(target, tree, seed) -> Command | None`` (``ChecksShape``): a check of
      exactly the shape and launch path the bench times (the ``shape`` final gate); without it
      the gate compares the bench's ``checksum`` with the baseline's.
    * ``check_seeds(target, tree, seeds) -> Command | None`` (``ChecksSeeds``): one command that
      checks every seed (in one process, or in processes of its own at once), each seed with
      its own fresh inputs, exiting non-zero when any fails. For backends whose process
      start-up dominates a check (Python, CUDA) or whose one check leaves most CPUs idle; None:
      ``check`` per seed.
    * ``bench(target, tree, work=F)`` (``BenchesWork``): accepting ``work`` lets
      ``gate-selftest`` plant a truly faster candidate (the bench does the fraction F of its
      timed work).
    * ``engine_pair(target, baseline, candidate) -> Command | None`` (``PairsEngine``): one
      whole-program run holding both versions, compared and timed in interleaved rounds by the
      program itself, printing ``{"baseline_ms": [...], "candidate_ms": [...], "match",
      "detail"}`` or ``{"engine_error", "side"}`` (docs/plugins.md, the engine contract); the
      engine gate then runs it once instead of ``engine`` six times.
    * ``model_compare(targets, winners, out_dir) -> Command | None`` (``ComparesModel``): after
      the runs of one program's kernels, the program in one process every way (``winners``:
      target name → a directory with its editable files as the winner has them), printing
      ``{"kernelopt_model": 1, "modes": {label: {"ms", "spread_pct", "match", "windows"}},
      "baseline", "kernelopt"}`` (docs/plugins.md, the model check contract;
      kernelopt_core/model_check.py).
    * ``profile_phases(target, tree) -> dict[str, Command] | None`` (``SplitsPhases``): the
      whole program split into phases that ``kernelopt profile --engine`` profiles and ranks
      apart (llama.cpp: ``prefill`` and ``decode``, whose kernels differ); absent or empty:
      ``engine`` as one.
    * ``kernel_labels(target, tree, kernels) -> dict[str, str]`` (``LabelsKernels``): for
      profiled kernel names, what each belongs to in the backend's terms (llama.cpp:
      ``RMS_NORM``, ``cuBLAS (library)``), a column of ``kernelopt profile``'s ranking.
    * ``compile_probe(target, tree, probe_dir) -> Command | None`` (``ProbesCompile``):
      compiles, without writing the tree or its build, what each knob value's edited files
      (``probe_dir/<id>/``, listed in ``probe_dir/variants.json``) affect and prints
      ``{"kernelopt_probe": 1, "results": {id: {"ok", "error"}}}``; values that fail are
      dropped before the search (knob_probe.py).
    * ``kernel_names(target, files) -> dict[str, str]`` (``DefinesKernels``): the kernels the
      given files (path -> bytes) define, name -> file, so a profile tells the target's kernels
      from the rest (the kit's ``cuda_kernel_names`` for CUDA/HIP); without it no profiled
      kernel is called the target's.
    * ``bench_worker(target, tree) -> Command | None`` (``ServesBenchWorker``): a persistent
      worker that serves this tree's check, bench and sweep requests over a private pipe pair
      (docs/plugins.md, "Bench workers"; the child's side: ``kernelopt_core.bench_worker``);
      None: fresh ``check`` and ``bench`` processes for this tree.
    """

    name: str

    def detect(self, path: Path) -> float:
        """Confidence in [0, 1] that ``path`` (a file or directory) is this backend's, on the
        scale of docs/plugins.md: 1.0 unmistakably (a descriptor naming it, a file only it
        reads), 0.9 its own marker files, 0.5 a plausible layout, 0.1 it could run the path
        generically, 0 "not mine". The core picks ``--backend``, then ``backend =`` in kernelopt.toml,
        then the highest confidence; a tie exits 2 listing the candidates.
        """

    def discover(self, path: Path, settings: Settings) -> list[Target]:
        """The targets (kernels) found at ``path``. Raise UsageError on a bad descriptor."""

    def build(self, target: Target, tree: Tree) -> list[Command]:
        """Commands that build ``tree`` into ``tree.build`` (incremental; run in order)."""

    def check(self, target: Target, tree: Tree, seed: int) -> Command:
        """A command that exits 0 when ``tree`` is correct on fresh inputs from ``seed``.

        It must also check the exact shape and launch path the bench times.
        """

    def bench(self, target: Target, tree: Tree) -> Command | None:
        """A command printing one time per invocation (format: ``target.bench``), or None
        when no bench exists (the verdict is then at best ``unverified``)."""

    def engine(self, target: Target, tree: Tree) -> Command | None:
        """Optional whole-program command (model, app) for the engine gate; None if absent."""


@runtime_checkable
class Gate(Protocol):
    """One check in the gate pipeline.

    ``phase`` is ``"candidate"`` (run on every proposal during the search, in the configured
    order, stopping at the first failure) or ``"final"`` (run on the best candidate; any failure
    withholds the ``optimized`` verdict). Which gates run, and in what order, is configuration
    (``[gates]`` in kernelopt.toml), never code.

    Two optional attributes say what a gate needs and what it can back, one capability protocol
    each (kernelopt_core/capabilities.py; the core reads them through ``isinstance``, so a gate
    without them is valid and gets the default): ``requires`` (``RequiresGates``, default
    ``()``) — names of gates that must come before it in the same phase (the roofline bounds the
    time the confirm gate measured: ``("confirm",)``), and ``claims_speedup``
    (``ClaimsSpeedup``, default False) — True when its pass can back an ``optimized`` verdict
    (the confirm gate); with none configured a benched run claims no speedup.
    """

    name: str
    phase: str

    def evaluate(self, ctx: GateContext) -> GateResult:
        """Decide on ``ctx.candidate``. Use ``ctx.runner`` to build/check/bench; never spawn."""


@runtime_checkable
class Planner(Protocol):
    """Proposes edits. The built-in ``tuner`` searches knobs; ``agents`` asks an LLM.

    An optional class attribute ``exhaustive = True`` (``Exhaustive``, default False) says every
    proposal must be evaluated (patience does not stop the search), as for the ``replay``
    planner.

    Optional methods, one capability each, tested with ``isinstance`` like a backend's
    (protocols in kernelopt_core/capabilities.py):

    * ``select(settings, target) -> (chosen, why)`` with a class attribute ``selection_rank``
      (``SelectsItself``): how the planner is chosen when no ``--planner`` names one. The core
      asks the planners that have it, highest rank first, and takes the first that says
      chosen; the ``why`` of those that declined is said with the choice (built-ins: replay
      100, chosen by ``--candidate``; agents 50, when an LLM is configured; tuner 0, always).
    * ``use_plugins(host)`` (``UsesPlugins``): the plugin host, handed over before any other
      call, for a planner that uses other plugins (LLM providers, doc lookup, prompt
      fragments).
    * ``check_inputs(settings, target, knobs)`` (``ChecksInputs``): its inputs checked once the
      baseline's knobs are known, before any candidate: raise UsageError (exit 2) naming what
      is wrong.
    * ``check_provider(settings) -> str | None`` (``ChecksProvider``): one cheap request to the
      service it calls, before any build (``kernelopt init`` too); what answered, or None when
      nothing is configured to ask.
    """

    name: str

    def unavailable_reason(self, settings: Settings, target: Target) -> str | None:
        """None if this planner can run for ``target``; else a sentence saying why not."""

    def propose(self, ctx: PlanContext, parent: Node, count: int) -> list[Proposal]:
        """Up to ``count`` new proposals derived from ``parent``. An empty list means the
        planner has nothing more to offer from this parent."""

    def observe(self, ctx: PlanContext, proposal: Proposal, outcome: Outcome) -> None:
        """Learn from a measured outcome (``Outcome``: accepted, the screen's speedup, the gate
        that rejected it and why, its diff)."""


@runtime_checkable
class Profiler(Protocol):
    """Wraps a bench command to collect metrics (ncu, nsys, rocprof, Graphsignal)."""

    name: str

    def unavailable_reason(self) -> str | None:
        """None when the tool is installed and usable here."""

    def wrap(self, command: Command, out_dir: Path) -> Command:
        """The command run under the profiler, writing its raw output under ``out_dir``."""

    def parse(self, out_dir: Path) -> dict[str, Any]:
        """The raw output read back: ``{"tool": NAME, "kernels": [KernelProfile.to_json(),
        ...]}`` and, optionally, ``"columns"``: the table columns of its own metrics
        (MetricColumn or its JSON; docs/plugins.md, "Profilers"), or ``{"error": ...}``."""


@attrs.frozen
class LLMProvider:
    """An OpenAI-compatible chat-completions endpoint, described as data."""

    name: str
    base_url: str
    api_key_env: str | None  # None: no key needed (local servers)
    default_model: str
    docs_url: str = ""
    # Extra request headers. The value "{session}" is replaced by a per-run id (OpenCode Go
    # wants an x-opencode-session header per conversation).
    headers: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class DocHit:
    """One documentation snippet for a symbol (a header line, a manual paragraph)."""

    source: str  # a path or URL
    line: int
    text: str


@runtime_checkable
class Executor(Protocol):
    """Runs a campaign's jobs (kernelopt_core.executors: ``Job``, ``JobResult``).

    ``name``: unique, used by ``kernelopt campaign --executor NAME``.

    ``run(jobs, gpus, on_result, log_dir)``: run every job to its end, starting them in the
    order given (the campaign's priority, highest first), at most one job per GPU slot at a
    time (``gpus``: the slots of this host, for an executor that uses them; a cluster executor
    has its own), the job's process seeing only its GPU (``CUDA_VISIBLE_DEVICES``), and call
    ``on_result`` once per job, from any thread. A job whose worker is lost is run again,
    whole: its command resumes its run from the journal.

    Optional: ``configure(settings) -> Executor``, called once before ``run`` with the first
    PATH's resolved settings (the executor's own option table: ``settings.section(...)``).
    """

    name: str

    def run(self, jobs: Any, gpus: Any, on_result: Any, log_dir: Path) -> None: ...


# --------------------------------------------------------------------------- hook specs


@hookspec
def kernelopt_register_backends() -> list[Backend]:
    """Return the backends this plugin provides."""


@hookspec
def kernelopt_register_gates() -> list[Gate]:
    """Return gates. Built-ins: build, correctness, screen (candidate); confirm (final)."""


@hookspec
def kernelopt_register_planners() -> list[Planner | type[Planner]]:
    """Return planners. Return the class (a zero-argument constructor with a ``name`` class
    attribute) and the core makes a fresh planner for each run, so history, budgets and
    clients never leak from one target's run into the next; an object returned instead serves
    every run as it is (key its per-run state by ``ctx.run_id``). Built-ins: tuner, replay,
    agents."""


@hookspec
def kernelopt_register_profilers() -> list[Profiler]:
    """Return profilers. Built-ins: ncu, nsys, rocprof, graphsignal."""


@hookspec
def kernelopt_register_llm_providers() -> list[LLMProvider]:
    """Return LLM provider records (OpenAI-compatible endpoints)."""


@hookspec
def kernelopt_doc_lookup(symbol: str, language: str) -> list[DocHit]:
    """Documentation for ``symbol`` (``language``: "cuda", "hip", "triton", "cpp").

    Every implementation is called and the hits are concatenated; return [] if you know nothing.
    """


@hookspec
def kernelopt_prompt_fragments(backend: str, role: str) -> list[str]:
    """Extra prompt text for LLM agents (``role``: planner | editor;
    the editor was called executor before 2026-12-04) when
    optimizing a target of ``backend``; e.g. a strategy list for CUDA or Triton."""


@hookspec
def kernelopt_register_executors() -> list[Executor]:
    """Return campaign executors (``kernelopt campaign --executor NAME``). Built-in: local."""


@hookspec
def kernelopt_register_commands(cli: click.Group) -> None:
    """Add click commands to the ``kernelopt`` CLI (e.g. ``run-llamacpp``)."""


@hookspec
def kernelopt_option_tables() -> list[type]:
    """This plugin's options: attrs classes under ``@option_table(NAME)`` whose fields are made
    with ``option(default, help, ...)`` (kernelopt_core.api). Each field becomes a flag of
    ``kernelopt run`` and ``gate-selftest`` (``--top``), a key of the plugin's own table in
    kernelopt.toml or the user's config (``[NAME] top = 2``; an unknown key is an error naming
    file and line), the variable ``KERNELOPT_TOP`` and ``-o top=2``, coerced to the field's
    type and checked by its validator (a bad value exits 2 naming where it came from). Read
    them with ``settings.section(TheClass)``. A field named like a core setting, or like
    another plugin's option of another type or default, is namespaced by its table
    (``--NAME-top``) in every table that declares it, whatever the load order, and ``kernelopt
    plugins`` notes it."""

