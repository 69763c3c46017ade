// kernel.h - blocked out-of-place float32 matrix transpose (demo kernel).
#pragma once

// Transpose a row-major `rows` x `cols` matrix `in` into the row-major
// `cols` x `rows` matrix `out`:  out[j * rows + i] = in[i * cols + j].
// `in` and `out` must not overlap. rows, cols >= 0.
void transpose(const float* in, float* out, int rows, int cols);
