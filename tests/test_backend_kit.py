"""The backend kit: CUDA knob sites (launch bounds, unroll) and the nvcc / GPU probes, through
the public API only, as a plugin uses them."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from kernelopt_core import api

# a ggml-cuda-like file: two literal launch bounds, one computed (not a knob), three literal
# unroll factors of which two are on lines alike (told apart by the line after), a bare one
SOFTMAX = """\
template <bool use_shared, int ncols_template, int block_size_template>
static __global__ void __launch_bounds__(1024, 1) soft_max_f32(const float * x, float * dst) {
    const int tid = threadIdx.x;
#pragma unroll 4
    for (int col0 = 0; col0 < ncols; col0 += block_size) {
        vals[col0] = x[col0];
    }
#pragma unroll 4
    for (int col0 = 0; col0 < ncols; col0 += 2*block_size) {
        dst[col0] = vals[col0];
    }
}

static __global__ void __launch_bounds__(8*WARP_SIZE, 1) soft_max_back_f32(const float * grad) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {}
}

static __global__ void __launch_bounds__( 256 ) scale_f32(const float * x, float * dst) {
  #  pragma unroll 2
    for (int i = 0; i < 2; ++i) dst[i] = x[i];
}
"""

NVCC_12_6 = """\
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2024 NVIDIA Corporation
Built on Tue_Oct_29_23:50:19_PDT_2024
Cuda compilation tools, release 12.6, V12.6.85
Build cuda_12.6.r12.6/compiler.35059454_0
"""

SMI_LIST = """\
GPU 0: NVIDIA H200 (UUID: GPU-6a1f3c1e-95d1-2b8f-1a52-6f0e2f7c8d11)
  MIG 1g.18gb     Device  0: (UUID: MIG-1d2e3f40-5a6b-5c7d-8e9f-0a1b2c3d4e5f)
GPU 1: NVIDIA H200 (UUID: GPU-0b7e2d4a-13c5-4e6f-8a9b-c0d1e2f3a4b5)
"""


def test_every_literal_launch_bound_and_unroll_is_a_knob_of_its_own() -> None:
    files = {"softmax.cu": SOFTMAX.encode()}
    bounds = api.launch_bounds_knobs("softmax.cu", SOFTMAX)
    unrolls = api.unroll_knobs("softmax.cu", SOFTMAX)
    assert [k.name for k in bounds] == ["launch_bounds#0@softmax.cu", "launch_bounds#1@softmax.cu"]
    assert [k.name for k in unrolls] == ["unroll#0@softmax.cu", "unroll#1@softmax.cu",
                                        "unroll#2@softmax.cu"]
    assert bounds[0].values == ("64", "128", "256", "512", "1024")  # 32..1024, within 16x
    assert unrolls[0].values == ("1", "2", "4", "8", "16", "32")
    knobs = (*bounds, *unrolls)
    assert api.current_values(knobs, files) == {
        "launch_bounds#0@softmax.cu": "1024", "launch_bounds#1@softmax.cu": "256",
        "unroll#0@softmax.cu": "4", "unroll#1@softmax.cu": "4", "unroll#2@softmax.cu": "2"}
    edited = api.apply_knobs(knobs, files, {"launch_bounds#0@softmax.cu": "512",
                                            "unroll#1@softmax.cu": "8"})["softmax.cu"].decode()
    assert "__launch_bounds__(512, 1) soft_max_f32" in edited
    assert "#pragma unroll 4\n    for (int col0 = 0; col0 < ncols; col0 += block_size)" in edited
    assert "#pragma unroll 8\n    for (int col0 = 0; col0 < ncols; col0 += 2*block_size)" in edited
    assert "__launch_bounds__(8*WARP_SIZE, 1)" in edited and "__launch_bounds__( 256 )" in edited


def test_a_site_no_anchor_makes_unique_is_no_knob() -> None:
    twice = "#pragma unroll 4\nfor (;;) {}\n#pragma unroll 4\nfor (;;) {}\n#pragma unroll 2\nx();\n"
    assert [k.name for k in api.unroll_knobs("a.cu", twice)] == ["unroll#2@a.cu"]


def test_one_knob_a_file_where_asked_and_the_file_has_one_site() -> None:
    one = "__global__ void __launch_bounds__(256) k() {\n#pragma unroll 4\n  for (;;) {}\n}\n"
    (bounds,) = api.launch_bounds_knobs("k.cu", one, each=False)
    (unroll,) = api.unroll_knobs("k.cu", one, each=False)
    assert (bounds.name, unroll.name) == ("launch_bounds@k.cu", "unroll@k.cu")
    assert api.current_values((bounds, unroll), {"k.cu": one.encode()}) == {
        "launch_bounds@k.cu": "256", "unroll@k.cu": "4"}
    assert api.launch_bounds_knobs("softmax.cu", SOFTMAX, each=False) == []  # two sites
    assert api.unroll_knobs("softmax.cu", SOFTMAX, each=False) == []


def _prints(text: str) -> str:
    """A shell line printing ``text`` with the shell's own printf (PATH holds only fakes)."""
    return "printf '%s\\n' " + " ".join(f"'{line}'" for line in text.splitlines()) + "\n"


def _tools(folder: Path, scripts: dict[str, str]) -> Path:
    folder.mkdir()
    for name, body in scripts.items():
        path = folder / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


def test_nvcc_found_on_path_and_its_release_read(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _tools(tmp_path / "bin", {"nvcc": _prints(NVCC_12_6),
                                       "broken-nvcc": "exit 1\n"})
    monkeypatch.setenv("PATH", str(folder))
    path = api.find_nvcc()
    assert path == str(folder / "nvcc")
    assert api.nvcc_version(path) == api.Nvcc(path, "12.6",
                                              "release 12.6, V12.6.85")
    assert api.nvcc_version(str(folder / "broken-nvcc")) is None
    assert api.nvcc_version(str(tmp_path / "missing")) is None


def test_gpus_from_nvidia_smi_and_none_without_it(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    smi = ('case "$1" in\n'
           f"  -L) {_prints(SMI_LIST)} ;;\n"
           "  --query-gpu=name,compute_cap) echo 'NVIDIA H200, 9.0'; echo 'NVIDIA H200, 9.0' ;;\n"
           "  *) exit 2 ;;\nesac\n")
    monkeypatch.setenv("PATH", str(_tools(tmp_path / "bin", {"nvidia-smi": smi})))
    assert api.cuda_gpus() == [api.CudaGpu("NVIDIA H200", "9.0")] * 2
    assert api.gpu_arch() == "90"
    assert [line.split(":")[0] for line in api.listed_gpus()] == ["GPU 0", "GPU 1"]  # not MIG
    assert api.visible_gpus({}) == ["0", "1"]
    assert api.visible_gpus({"CUDA_VISIBLE_DEVICES": "3, 5"}) == ["3", "5"]

    monkeypatch.setenv("PATH", str(_tools(tmp_path / "empty", {})))
    assert api.cuda_gpus() == [] and api.listed_gpus() == []
    assert api.gpu_arch() == "native"
    assert api.visible_gpus({}) == ["0"]  # one slot, so a CPU campaign still runs


def test_a_pin_is_read_back_only_for_its_own_op(tmp_path: Path) -> None:
    path = tmp_path / "pins" / "rmsnorm.json"
    assert api.read_pin(path, "rmsnorm") is None  # nothing pinned yet: the baseline pins
    pin = {"op": "rmsnorm", "case": "rmsnorm 4096 x 512", "median_us": 11.2,
           "chosen_by": "the largest median of the bench's cases"}
    api.write_pin(path, pin)
    assert api.read_pin(path, "rmsnorm") == pin
    assert api.read_pin(path, "softmax") is None  # another op's pin is none of this one's
    path.write_text('["not", "a pin"]')
    assert api.read_pin(path, "rmsnorm") is None
    path.write_text('{"op": "rmsnorm", ')  # cut short by a killed run
    assert api.read_pin(path, "rmsnorm") is None


def test_the_engine_environment_names_are_the_gates() -> None:
    from kernelopt_core.gates import engine

    assert (api.ENGINE_OUT_ENV, api.ENGINE_REFERENCE_ENV) == (engine.OUT_ENV, engine.REFERENCE_ENV)
    assert api.ENGINE_OUT_ENV == "KERNELOPT_ENGINE_OUT"  # engine programs of other packages read it
