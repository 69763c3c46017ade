/* kernelopt's CUDA device-memory ledger (kernelopt_core/cuda_ledger.py builds and uses it).

   Loaded by the CUDA driver at cuInit through CUDA_INJECTION64_PATH (the mechanism Nsight and
   the Compute Sanitizer use), it subscribes to CUPTI's driver-API callbacks and keeps every
   device allocation the process makes (cuMemAlloc*, cuMemAllocManaged, cuMemAlloc*Async) until
   it is freed, and counts kernel launches. At exit it appends one line to $KERNELOPT_CUDA_LEDGER:

     kernelopt-cuda-ledger 1 launches=N allocations=N unfreed_bytes=B unfreed_allocations=N
       late_unfreed_bytes=B late_unfreed_allocations=N peak_bytes=B

   "late": made after the process's first kernel launch and still held at exit. A leak per call
   (a scratch buffer allocated on every call and never freed) is one late allocation per call;
   a test's own buffers, made before its first launch or freed, are not. With
   $KERNELOPT_CUDA_LEDGER_BASELINE naming the baseline's ledger of the same test, a process
   that exits 0 holding at least LEAK_MIN_ALLOCATIONS more late allocations, and more bytes,
   than the baseline's held prints why and exits 1: the test fails, with words that name the
   fault. A test that already failed is left its own words (a test that stops at a wrong
   result may well leave its buffers unfreed).

   No CUDA or CUPTI header is needed to build it (`cc -shared -fPIC`): the few types and
   constants it uses are declared below as the CUDA 13 headers define them (stable since CUDA
   4-11: cupti_callbacks.h, cupti_driver_cbid.h, generated_cuda_meta.h); libcupti is opened
   at run time ($KERNELOPT_CUPTI, else the path given when it was built, else the loader's). */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef KO_CUPTI_PATH
#define KO_CUPTI_PATH "libcupti.so"
#endif
#define LEAK_MIN_ALLOCATIONS 4 /* a lazily made workspace or two is not a leak per call */

typedef unsigned long long CUdeviceptr;
typedef int CUresult;
typedef int CUptiResult;
typedef void *CUpti_SubscriberHandle;
typedef uint32_t CUpti_CallbackId;
typedef enum { CUPTI_CB_DOMAIN_DRIVER_API = 1 } CUpti_CallbackDomain;
typedef enum { CUPTI_API_ENTER = 0, CUPTI_API_EXIT = 1 } CUpti_ApiCallbackSite;
typedef struct {
    CUpti_ApiCallbackSite callbackSite;
    const char *functionName;
    const void *functionParams;
    void *functionReturnValue;
    const char *symbolName;
    void *context;
    uint32_t contextUid;
    uint64_t *correlationData;
    uint32_t correlationId;
} CUpti_CallbackData;
typedef void (*CUpti_CallbackFunc)(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *);

/* cupti_driver_cbid.h */
enum {
    CBID_cuMemAlloc_v2 = 243, CBID_cuMemAllocPitch_v2 = 244, CBID_cuMemFree_v2 = 245,
    CBID_cuLaunchKernel = 307, CBID_cuMemAllocManaged = 371, CBID_cuLaunchKernel_ptsz = 442,
    CBID_cuLaunchCooperativeKernel = 477, CBID_cuLaunchCooperativeKernel_ptsz = 478,
    CBID_cuMemAllocAsync = 598, CBID_cuMemAllocAsync_ptsz = 599, CBID_cuMemFreeAsync = 600,
    CBID_cuMemFreeAsync_ptsz = 601, CBID_cuMemAllocFromPoolAsync = 611,
    CBID_cuMemAllocFromPoolAsync_ptsz = 612, CBID_cuLaunchKernelEx = 652,
    CBID_cuLaunchKernelEx_ptsz = 653, CBID_cuGraphLaunch = 514, CBID_cuGraphLaunch_ptsz = 515,
};
/* generated_cuda_meta.h: every allocation's parameters start with the pointer it fills, and
   all but the pitched one continue with the size; every free's start with the pointer */
typedef struct { CUdeviceptr *dptr; size_t bytesize; } alloc_params;
typedef struct { CUdeviceptr *dptr; size_t *pPitch; size_t WidthInBytes; size_t Height;
                 unsigned int ElementSizeBytes; } alloc_pitch_params;
typedef struct { CUdeviceptr dptr; } free_params;

/* ------------------------------------------------------------------ the ledger itself */
typedef struct { CUdeviceptr ptr; size_t bytes; int late; } Slot; /* ptr 0: empty, 1: gone */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Slot *slots;
static size_t capacity, used; /* used: live and gone slots (probing stops only at empty) */
static unsigned bits;         /* capacity == 1 << bits */
static int broken;            /* out of host memory: the ledger stops judging */
static unsigned long long launches, allocations, live_bytes, live_count, peak_bytes;
static unsigned long long late_bytes, late_count;

/* Fibonacci hashing: the product's high bits (device pointers share their low bits) */
static size_t slot_of(CUdeviceptr ptr) {
    return (size_t)((ptr * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* A table twice the live entries' need (at least 1024 slots), without the gone ones. */
static int rehash(void) {
    size_t want = 1024;
    unsigned want_bits = 10;
    while (want < 4 * (live_count + 1)) { want *= 2; ++want_bits; }
    Slot *fresh = calloc(want, sizeof(Slot));
    if (!fresh) return 0;
    Slot *old = slots;
    size_t old_capacity = capacity;
    slots = fresh;
    capacity = want;
    bits = want_bits;
    used = 0;
    for (size_t i = 0; i < old_capacity; ++i) {
        if (old[i].ptr > 1) {
            size_t j = slot_of(old[i].ptr);
            while (slots[j].ptr) j = (j + 1) & (capacity - 1);
            slots[j] = old[i];
            ++used;
        }
    }
    free(old);
    return 1;
}

void ko_ledger_alloc(CUdeviceptr ptr, size_t bytes) {
    if (ptr <= 1) return;
    pthread_mutex_lock(&lock);
    if (!broken && 2 * (used + 1) > capacity && !rehash()) broken = 1;
    if (broken) {
        pthread_mutex_unlock(&lock);
        return;
    }
    size_t j = slot_of(ptr);
    while (slots[j].ptr > 1) j = (j + 1) & (capacity - 1);
    if (slots[j].ptr == 0) ++used;
    slots[j] = (Slot){ptr, bytes, launches > 0};
    ++allocations;
    ++live_count;
    live_bytes += bytes;
    if (live_bytes > peak_bytes) peak_bytes = live_bytes;
    if (launches > 0) { late_bytes += bytes; ++late_count; }
    pthread_mutex_unlock(&lock);
}

void ko_ledger_free(CUdeviceptr ptr) {
    pthread_mutex_lock(&lock);
    if (capacity && ptr > 1 && !broken) {
        size_t j = slot_of(ptr);
        while (slots[j].ptr && slots[j].ptr != ptr) j = (j + 1) & (capacity - 1);
        if (slots[j].ptr == ptr) {
            --live_count;
            live_bytes -= slots[j].bytes;
            if (slots[j].late) { late_bytes -= slots[j].bytes; --late_count; }
            slots[j].ptr = 1;
        }
    }
    pthread_mutex_unlock(&lock);
}

void ko_ledger_launch(void) {
    pthread_mutex_lock(&lock);
    ++launches;
    pthread_mutex_unlock(&lock);
}

#define LINE_FORMAT "kernelopt-cuda-ledger 1 launches=%llu allocations=%llu unfreed_bytes=%llu " \
    "unfreed_allocations=%llu late_unfreed_bytes=%llu late_unfreed_allocations=%llu " \
    "peak_bytes=%llu\n"

/* The baseline's most late-held allocations (and their bytes) over its ledger's lines (a test
   may run CUDA in more than one process); 0 when it has none. */
static int read_baseline(const char *path, unsigned long long *count, unsigned long long *bytes) {
    FILE *fh = fopen(path, "r");
    if (!fh) return 0;
    char line[1024];
    int found = 0;
    *count = *bytes = 0;
    while (fgets(line, sizeof line, fh)) {
        unsigned long long v[7];
        if (sscanf(line, LINE_FORMAT, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]) == 7) {
            found = 1;
            if (v[5] > *count) { *count = v[5]; *bytes = v[4]; }
        }
    }
    fclose(fh);
    return found;
}

/* Appends this process's line; with a baseline and an exit status of 0, returns 1 (after
   printing why) when the process leaked beyond it. Exported for the CPU test
   (tests/test_cuda_ledger.py). */
int ko_ledger_finish(const char *record, const char *baseline, int status) {
    pthread_mutex_lock(&lock);
    unsigned long long n = launches, a = allocations, ub = live_bytes, uc = live_count;
    unsigned long long lb = late_bytes, lc = late_count, pb = peak_bytes;
    pthread_mutex_unlock(&lock);
    if (record && *record) {
        FILE *fh = fopen(record, "a");
        if (fh) {
            fprintf(fh, LINE_FORMAT, n, a, ub, uc, lb, lc, pb);
            fclose(fh);
        }
    }
    unsigned long long base_count, base_bytes;
    if (status != 0 || broken || !baseline || !*baseline ||
        !read_baseline(baseline, &base_count, &base_bytes))
        return 0;
    if (lc < base_count + LEAK_MIN_ALLOCATIONS || lb <= base_bytes) return 0;
    const double mib = 1024.0 * 1024.0;
    fflush(stdout);
    fprintf(stderr,
            "error: device memory leak: %llu device allocations (%.1f MiB) made after the first "
            "kernel launch were still held at exit, the baseline's test held %llu (%.1f MiB); "
            "%llu kernel launches, about %.1f MiB per launch. Memory allocated on every call and "
            "never freed grows without bound in a long-running program: free it, or allocate it "
            "once.\n",
            lc, lb / mib, base_count, base_bytes / mib, n,
            n ? (double)(lb - base_bytes) / mib / (double)n : 0.0);
    fflush(stderr);
    return 1;
}

/* ------------------------------------------------------------------ CUPTI's side */
static void on_exit_write(int status, void *unused) {
    (void)unused;
    if (ko_ledger_finish(getenv("KERNELOPT_CUDA_LEDGER"), getenv("KERNELOPT_CUDA_LEDGER_BASELINE"),
                         status))
        _exit(1);
}

static void on_driver_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                           const void *data) {
    (void)userdata;
    const CUpti_CallbackData *cb = data;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
    switch (cbid) {
    case CBID_cuLaunchKernel: case CBID_cuLaunchKernel_ptsz: case CBID_cuLaunchKernelEx:
    case CBID_cuLaunchKernelEx_ptsz: case CBID_cuLaunchCooperativeKernel:
    case CBID_cuLaunchCooperativeKernel_ptsz: case CBID_cuGraphLaunch: case CBID_cuGraphLaunch_ptsz:
        if (cb->callbackSite == CUPTI_API_ENTER) ko_ledger_launch();
        return;
    default:
        break;
    }
    if (cb->callbackSite != CUPTI_API_EXIT || !cb->functionReturnValue ||
        *(const CUresult *)cb->functionReturnValue != 0)
        return; /* only what succeeded */
    switch (cbid) {
    case CBID_cuMemAlloc_v2: case CBID_cuMemAllocManaged: case CBID_cuMemAllocAsync:
    case CBID_cuMemAllocAsync_ptsz: case CBID_cuMemAllocFromPoolAsync:
    case CBID_cuMemAllocFromPoolAsync_ptsz: {
        const alloc_params *p = cb->functionParams;
        if (p->dptr) ko_ledger_alloc(*p->dptr, p->bytesize);
        return;
    }
    case CBID_cuMemAllocPitch_v2: {
        const alloc_pitch_params *p = cb->functionParams;
        if (p->dptr && p->pPitch) ko_ledger_alloc(*p->dptr, *p->pPitch * p->Height);
        return;
    }
    case CBID_cuMemFree_v2: case CBID_cuMemFreeAsync: case CBID_cuMemFreeAsync_ptsz:
        ko_ledger_free(((const free_params *)cb->functionParams)->dptr);
        return;
    default:
        return;
    }
}

static const CUpti_CallbackId WATCHED[] = {
    CBID_cuMemAlloc_v2, CBID_cuMemAllocPitch_v2, CBID_cuMemFree_v2, CBID_cuLaunchKernel,
    CBID_cuMemAllocManaged, CBID_cuLaunchKernel_ptsz, CBID_cuLaunchCooperativeKernel,
    CBID_cuLaunchCooperativeKernel_ptsz, CBID_cuMemAllocAsync, CBID_cuMemAllocAsync_ptsz,
    CBID_cuMemFreeAsync, CBID_cuMemFreeAsync_ptsz, CBID_cuMemAllocFromPoolAsync,
    CBID_cuMemAllocFromPoolAsync_ptsz, CBID_cuLaunchKernelEx, CBID_cuLaunchKernelEx_ptsz,
    CBID_cuGraphLaunch, CBID_cuGraphLaunch_ptsz,
};

/* Called by the CUDA driver once, from cuInit. A ledger that cannot start says so and lets
   the program run unwatched (its test then passes or fails on its own). */
int InitializeInjection(void) {
    const char *path = getenv("KERNELOPT_CUPTI");
    void *cupti = dlopen(path && *path ? path : KO_CUPTI_PATH, RTLD_NOW | RTLD_GLOBAL);
    if (!cupti) cupti = dlopen("libcupti.so", RTLD_NOW | RTLD_GLOBAL);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *) =
        cupti ? (CUptiResult(*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))
                    dlsym(cupti, "cuptiSubscribe") : NULL;
    CUptiResult (*enable)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                          CUpti_CallbackId) =
        cupti ? (CUptiResult(*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                CUpti_CallbackId))dlsym(cupti, "cuptiEnableCallback") : NULL;
    CUpti_SubscriberHandle subscriber;
    if (!subscribe || !enable || subscribe(&subscriber, on_driver_call, NULL) != 0) {
        fprintf(stderr, "kernelopt-cuda-ledger: not watching device memory (%s)\n",
                !cupti ? dlerror() : !subscribe || !enable ? "libcupti lacks cuptiSubscribe"
                                                           : "CUPTI's subscriber is taken");
        return 1;
    }
    for (size_t i = 0; i < sizeof WATCHED / sizeof WATCHED[0]; ++i)
        enable(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, WATCHED[i]);
    on_exit(on_exit_write, NULL); /* glibc: the exit status, unlike atexit */
    return 1;
}
