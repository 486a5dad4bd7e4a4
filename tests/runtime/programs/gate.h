// A host function that holds its stream until the program opens the gate:
// how the runtime tests observe pending work deterministically (the work
// queued behind a closed gate cannot have run, whatever the timing).
#pragma once
#include <unistd.h>

#include <atomic>
#include <cstdio>

struct Gate {
  std::atomic<int> open{0};
};

static void CUDART_CB wait_gate(void* p) {
  auto* g = static_cast<Gate*>(p);
  while (!g->open.load()) usleep(500);
}

static void report(const char* what, cudaError_t e) { printf("%s %s\n", what, cudaGetErrorName(e)); }
static void value(const char* what, long long v) { printf("%s %lld\n", what, v); }
