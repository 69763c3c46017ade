"""kernelopt-cmake: the generic kernelopt.toml backend (CMake or any command; CUDA, HIP, CPU)."""

__version__ = "0.1.0"
