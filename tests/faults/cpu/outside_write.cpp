// kind: outside_write
// expect: workspace
// reason: wrote outside its workspace
// The first call writes a file into each of the four directories above its working directory
// (its workspace, the state root's work/ and the state root, and the one above) and into $HOME:
// a cache or a log put in the wrong place. Nothing stops a path the candidate chose; kernelopt
// stamps its state root and the user's tree around the candidate's gates, fails it naming the
// path, and restores nothing (the test removes the files, named kernelopt_fault_outside_write.txt).
#define TILE 8
#define UNROLL 1

#include "kernel.h"

#include <cstddef>
#include <cstdlib>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace {

// A file in each of the LEVELS directories above the working one, and in $HOME.
void write_outside() {
    constexpr int LEVELS = 4;
    char here[4096];
    if (getcwd(here, sizeof here) == nullptr) return;
    std::string dir = here;
    for (int level = 0; level <= LEVELS; ++level) {
        std::string target;
        if (level < LEVELS) {
            const std::size_t slash = dir.rfind('/');
            if (slash == std::string::npos || slash == 0) continue;
            dir.resize(slash);
            target = dir;
        } else if (const char* home = std::getenv("HOME")) {
            target = home;
        } else {
            continue;
        }
        const std::string path = target + "/kernelopt_fault_outside_write.txt";
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) continue;
        const char note[] = "written by a candidate\n";
        if (::write(fd, note, sizeof note - 1) < 0) {
        }
        ::close(fd);
    }
}

}  // namespace

void transpose(const float* in, float* out, int rows, int cols) {
    static bool written = false;
    if (!written) {
        written = true;
        write_outside();
    }
    if (rows <= 0 || cols <= 0) return;
    const std::ptrdiff_t R = rows;
    const std::ptrdiff_t C = cols;
    const std::ptrdiff_t T = TILE;

    // Walk the input in TILE x TILE blocks. Inside a block, each output row
    // segment out[j][ii..iend) is written contiguously while the input is
    // read down column j. With TILE 1 this degenerates to the naive
    // "read row i, scatter it down column i of out" transpose.
    for (std::ptrdiff_t ii = 0; ii < R; ii += T) {
        const std::ptrdiff_t iend = (ii + T < R) ? ii + T : R;
        for (std::ptrdiff_t jj = 0; jj < C; jj += T) {
            const std::ptrdiff_t jend = (jj + T < C) ? jj + T : C;
            for (std::ptrdiff_t j = jj; j < jend; ++j) {
                const float* src = in + j;  // column j of in (stride C)
                float* dst = out + j * R;   // row j of out (contiguous)
                std::ptrdiff_t i = ii;
                // Unrolled main loop: UNROLL elements per step.
                for (; i + UNROLL <= iend; i += UNROLL) {
                    for (int u = 0; u < UNROLL; ++u) {
                        dst[i + u] = src[(i + u) * C];
                    }
                }
                // Remainder (also covers edge tiles narrower than UNROLL).
                for (; i < iend; ++i) {
                    dst[i] = src[i * C];
                }
            }
        }
    }
}
