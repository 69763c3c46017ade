// Device memory and error helpers shared by the library, the tests and the benches.
// CUDA path: cudaMalloc/cudaMemcpy, errors throw std::runtime_error.
// CPU path: 64-byte aligned host memory and memcpy.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "ninfer/stream.h"

namespace ninfer {

#ifdef NINFER_CPU_KERNELS
inline void* device_malloc(std::size_t bytes) {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}
inline void device_free(void* p) { std::free(p); }
inline void copy_to_device(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
inline void copy_to_host(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
inline void check_launch(const char*) {}
inline void device_synchronize() {}
#else
inline void cuda_check(cudaError_t err, const char* what) {
    if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}
inline void* device_malloc(std::size_t bytes) {
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
    return p;
}
inline void device_free(void* p) { cudaFree(p); }
inline void copy_to_device(void* dst, const void* src, std::size_t bytes) {
    cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
}
inline void copy_to_host(void* dst, const void* src, std::size_t bytes) {
    cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
}
// After a launch: configuration errors (bad grid/block, no kernel image for this GPU).
inline void check_launch(const char* what) { cuda_check(cudaGetLastError(), what); }
// Waits for all work and reports any asynchronous kernel error.
inline void device_synchronize() {
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    cuda_check(cudaGetLastError(), "kernel");
}
#endif

// Owning device array of n elements of T.
template <class T>
class DeviceArray {
public:
    explicit DeviceArray(std::size_t n) : n_(n), ptr_(static_cast<T*>(device_malloc(n * sizeof(T)))) {}
    ~DeviceArray() { device_free(ptr_); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;

    T* get() const { return ptr_; }
    std::size_t size() const { return n_; }
    void upload(const std::vector<T>& host) {
        if (host.size() != n_) throw std::invalid_argument("DeviceArray::upload: size mismatch");
        copy_to_device(ptr_, host.data(), n_ * sizeof(T));
    }
    std::vector<T> download() const {
        std::vector<T> host(n_);
        copy_to_host(host.data(), ptr_, n_ * sizeof(T));
        return host;
    }

private:
    std::size_t n_;
    T* ptr_;
};

}  // namespace ninfer
