// The few CUDA declarations the clang-compiled test kernels need, so that
// clang-19 can compile them with -nocudainc (it does not accept the CUDA 13
// headers).  Builtin variables come from clang's own header; __syncthreads
// is a clang builtin.
#pragma once

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __noinline__ __attribute__((noinline))

#include <__clang_cuda_builtin_vars.h>

