// CUDA's runtime semantics under libcudart.so.13, observed by real
// nvcc-built programs against a model_host of their own.  Pending work is
// observed deterministically: the programs hold a stream with a host
// function waiting on a gate they open later (programs/gate.h), so what
// must be "not ready" cannot have run yet, whatever the timing.
#include "build_paths.h"  // qgpu_paths() in CMakeLists.txt

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include "process.h"

namespace fs = std::filesystem;
using qgpu::test::run;

namespace {

class Daemon {
 public:
  Daemon() {
    std::string t = (fs::temp_directory_path() / "qgpu-runtime-test-XXXXXX").string();
    dir = mkdtemp(t.data());
    endpoint = "ipc://" + (dir / "model_host.sock").string();
    pid = qgpu::test::start({QGPU_MODEL_HOST_BIN, "--endpoint", endpoint, "--log", (dir / "model_host.log").string(),
                             "--client-timeout-ms", "3000"},
                            {});
    for (int i = 0; i < 200 && !fs::exists(dir / "model_host.sock"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~Daemon() {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    fs::remove_all(dir);
  }
  std::map<std::string, std::string> env() const { return {{"LD_PRELOAD", QGPU_CUDART_LIB}, {"QGPU_DAEMON", endpoint}}; }
  fs::path dir;
  std::string endpoint;
  pid_t pid = -1;
};

// The program's "<case> <rest of line>" lines.
std::map<std::string, std::string> cases(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    size_t sp = line.find(' ');
    if (sp != std::string::npos) m[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return m;
}

std::map<std::string, std::string> run_program(const std::string& name, qgpu::test::Result* result = nullptr,
                                               std::vector<std::string> args = {},
                                               const std::map<std::string, std::string>& extra_env = {}) {
  Daemon d;
  std::vector<std::string> argv{std::string(QGPU_TEST_PROGRAMS) + "/" + name};
  argv.insert(argv.end(), args.begin(), args.end());
  auto env = d.env();
  for (const auto& [k, v] : extra_env) env[k] = v;
  // qgpu's libcuda.so.1 (beside the runtime) for programs that use the driver API too.
  env["LD_LIBRARY_PATH"] = fs::path(QGPU_CUDART_LIB).parent_path().string();
  auto r = run(argv, env, 120);
  EXPECT_FALSE(r.timed_out) << name << " hung\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.status, 0) << name << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
  if (result) *result = r;
  return cases(r.out);
}

// Cooperative launches on the interpreter: grid-wide sync over the grid the
// occupancy calls and the multiprocessor count report resident (a block on
// each of the daemon's three host threads here, all at once), and the
// refusals (one block too many; a kernel whose printf keeps its blocks in
// order, beyond one block; an ordinary launch's grid.sync() traps, as on a
// GPU).
TEST(Runtime, CooperativeLaunchWithGridSync) {
  qgpu::test::Result r;
  setenv("QGPU_CTA_THREADS", "3", 1);  // the daemon's (its environment is this process's)
  auto m = run_program("coop", &r);
  unsetenv("QGPU_CTA_THREADS");
  SCOPED_TRACE(r.out + r.err);
  EXPECT_EQ(m["attribute"], "1 prop 1");
  EXPECT_EQ(m["blocks"], "3");
  EXPECT_EQ(m["launch"], "cudaSuccess");
  EXPECT_EQ(m["sync"], "cudaSuccess");
  EXPECT_EQ(m["wrong"], "0");
  EXPECT_EQ(m["sum"], std::to_string(3 * 999 * 1000 / 2 + 1000) + " matches");
  EXPECT_EQ(m["size"], "768");
  EXPECT_EQ(m["launch_ex"], "cudaSuccess sum matches");  // cudaLaunchKernelEx with cudaLaunchAttributeCooperative
  EXPECT_EQ(m["too_large"], "cudaErrorCooperativeLaunchTooLarge");
  EXPECT_NE(r.err.find("keeps at most 3 resident at once"), std::string::npos);
  EXPECT_EQ(m["in_order"], "cudaSuccess cudaErrorCooperativeLaunchTooLarge");
  EXPECT_NE(r.err.find("run its blocks one at a time"), std::string::npos);
  EXPECT_EQ(m["in_order_one"], "cudaSuccess cudaSuccess");
  EXPECT_EQ(m["ordinary"], "cudaErrorLaunchFailure");
}

}  // namespace

TEST(Runtime, StreamsEventsAndCallbacks) {
  qgpu::test::Result r;
  auto m = run_program("streams", &r);
  SCOPED_TRACE(r.out + r.err);
  // A launch behind a closed gate returned, and its work is pending.
  EXPECT_EQ(m["gated_launch"], "cudaSuccess");
  EXPECT_EQ(m["gated_stream_query"], "cudaErrorNotReady");
  EXPECT_EQ(m["gated_event_query"], "cudaErrorNotReady");
  EXPECT_EQ(m["gated_elapsed"], "cudaErrorNotReady");
  EXPECT_EQ(m["not_ready_is_not_an_error"], "cudaSuccess");
  EXPECT_EQ(m["event_sync"], "cudaSuccess");
  EXPECT_EQ(m["event_query_after"], "cudaSuccess");
  EXPECT_EQ(m["stream_query_after"], "cudaSuccess");
  EXPECT_EQ(m["gated_value"], "7");
  EXPECT_EQ(m["stream_order"], "1");
  // The legacy default stream and blocking streams wait for each other...
  EXPECT_EQ(m["legacy_waits_for_blocking"], "cudaErrorNotReady");
  EXPECT_EQ(m["legacy_sync"], "cudaSuccess");
  EXPECT_EQ(m["legacy_value"], "5");
  EXPECT_EQ(m["blocking_waits_for_legacy"], "cudaErrorNotReady");
  EXPECT_EQ(m["blocking_sync"], "cudaSuccess");
  EXPECT_EQ(m["blocking_value"], "6");
  // ... a non-blocking stream does not.
  EXPECT_EQ(m["legacy_ignores_nonblocking"], "cudaSuccess");
  EXPECT_EQ(m["legacy_value_beside_nonblocking"], "8");
  EXPECT_EQ(m["nonblocking_still_gated"], "cudaErrorNotReady");
  EXPECT_EQ(m["nonblocking_sync"], "cudaSuccess");
  EXPECT_EQ(m["nonblocking_flags"], std::to_string(1));  // cudaStreamNonBlocking
  // cudaStreamWaitEvent orders one stream after a point of another.
  EXPECT_EQ(m["wait_event_pending"], "cudaErrorNotReady");
  EXPECT_EQ(m["wait_event_sync"], "cudaSuccess");
  EXPECT_EQ(m["wait_event_value"], "11");
  EXPECT_EQ(m["elapsed_without_timing"], "cudaErrorInvalidResourceHandle");
  // Callbacks: on a runtime thread, after the work before them.
  EXPECT_EQ(m["callback_on_caller_thread"], "0");
  EXPECT_EQ(m["callback_status"], "cudaSuccess");
  EXPECT_EQ(m["callback_saw"], "42");
  // Events time the device's work, not the host's waiting.
  EXPECT_EQ(m["elapsed_positive"], "1");
  EXPECT_EQ(m["elapsed_adds_up"], "1");
  EXPECT_EQ(m["elapsed_host_wait_status"], "cudaSuccess");
  EXPECT_EQ(m["elapsed_host_wait_ms"], "0");
  EXPECT_EQ(m["poll_sequence_legal"], "1");
  EXPECT_EQ(m["final_sync"], "cudaSuccess");
  EXPECT_EQ(m.count("done"), 0u);  // "done" has no value
  EXPECT_NE(r.out.find("\ndone\n"), std::string::npos);
}

TEST(Runtime, CallbacksFromEightThreads) {
  auto m = run_program("threads");
  EXPECT_EQ(m["threads_failed"], "0");
  EXPECT_EQ(m["callbacks_good"], "80");  // 8 threads x 10 iterations
  EXPECT_EQ(m["callbacks_wrong_order"], "0");
  EXPECT_EQ(m["callbacks_wrong_values"], "0");
  EXPECT_EQ(m["callbacks_on_caller_thread"], "0");
  EXPECT_EQ(m["callbacks_bad_status"], "0");
  EXPECT_EQ(m["final_sync"], "cudaSuccess");
}

TEST(Runtime, ErrorsOfAsynchronousWork) {
  qgpu::test::Result r;
  auto m = run_program("errors_async", &r);
  SCOPED_TRACE(r.out + r.err);
  EXPECT_EQ(m["config_launch"], "cudaErrorInvalidConfiguration");
  EXPECT_EQ(m["config_cleared"], "cudaSuccess");
  EXPECT_EQ(m["config_sync"], "cudaSuccess");
  EXPECT_EQ(m["async_copy_call"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["async_copy_last_error"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["async_copy_sync"], "cudaSuccess");
  EXPECT_EQ(m["memset_async_past_end"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["memset_unallocated"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["memset"], "cudaSuccess");
  EXPECT_EQ(m["memset_value"], "abababab");
  EXPECT_EQ(m["after_async_copy"], "cudaSuccess");
  EXPECT_EQ(m["assert_launch"], "cudaSuccess");
  EXPECT_EQ(m["assert_query_gated"], "cudaErrorNotReady");
  EXPECT_EQ(m["callback_status_after_assert"], "cudaErrorAssert");
  EXPECT_EQ(m["host_func_after_assert_called"], "0");
  for (const char* k : {"assert_sync", "assert_query", "assert_malloc", "assert_last", "assert_last_again",
                        "assert_device_sync"})
    EXPECT_EQ(m[k], "cudaErrorAssert") << k;
  EXPECT_NE(r.err.find("runs past the end of the allocation"), std::string::npos);
  EXPECT_NE(r.err.find("not inside any live allocation"), std::string::npos);
}

TEST(Runtime, PerThreadDefaultStreams) {
  auto m = run_program("per_thread");
  EXPECT_EQ(m["other_thread_sync"], "cudaSuccess");
  EXPECT_EQ(m["held_thread_pending"], "cudaErrorNotReady");
  EXPECT_EQ(m["main_stream_idle"], "cudaSuccess");
  EXPECT_EQ(m["held_thread_sync"], "cudaSuccess");
  EXPECT_EQ(m["values"], "12");
}

// Both ways managed and mapped memory reach the device: live (the daemon
// shares its device memory with the program over the shared-memory channel)
// and mirrored (QGPU_SHM=0: copies at launches and synchronization).
TEST(Runtime, ManagedAndMappedMemory) {
  for (bool live : {true, false}) {
    qgpu::test::Result r;
    auto m = run_program("managed", &r, {}, live ? std::map<std::string, std::string>{}
                                                 : std::map<std::string, std::string>{{"QGPU_SHM", "0"}});
    SCOPED_TRACE(std::string(live ? "live" : "mirrored") + "\n" + r.out + r.err);
    EXPECT_EQ(m["managed_memory"], "1");
    EXPECT_EQ(m["concurrent_managed_access"], live ? "1" : "0");
    EXPECT_EQ(m["pageable_memory_access"], "0");
    EXPECT_EQ(m["can_map_host_memory"], "1");
    EXPECT_EQ(m["malloc_managed"], "cudaSuccess");
    EXPECT_EQ(m["managed_after_kernel"], "1");
    EXPECT_EQ(m["managed_two_kernels"], "1");
    EXPECT_EQ(m["managed_copies"], "1");
    EXPECT_EQ(m["managed_pages"], "1");
    EXPECT_EQ(m["prefetch_managed"], "cudaSuccess");
    EXPECT_EQ(m["prefetch_unmanaged"], "cudaErrorInvalidValue");
    EXPECT_EQ(m["managed_var_initial"], "5");
    EXPECT_EQ(m["managed_var_after_kernel"], "15");
    EXPECT_EQ(m["managed_var_after_host_write"], "30");
    EXPECT_EQ(m["host_alloc_mapped"], "cudaSuccess");
    EXPECT_EQ(m["mapped_device_pointer"], "cudaSuccess");
    EXPECT_EQ(m["mapped_same_pointer"], "1");
    EXPECT_EQ(m["mapped_after_kernel"], "1");
    EXPECT_EQ(m["host_register"], "cudaSuccess");
    EXPECT_EQ(m["registered_device_pointer"], "cudaSuccess");
    EXPECT_EQ(m["registered_after_kernel"], "1");
    EXPECT_EQ(m["register_pages"], "cudaSuccess");
    EXPECT_EQ(m["register_pages_shared"], live ? "1" : "0");
    EXPECT_EQ(m["pages_after_kernel"], "1");
    EXPECT_EQ(m["pages_copy_write_kernel"], "1");
    EXPECT_EQ(m["pages_self_copy"], "1");
    EXPECT_EQ(m["unregister_pages"], "cudaSuccess");
    EXPECT_EQ(m["unregistered_pages_shared"], "0");
    EXPECT_EQ(m["unregistered_pages_kept"], "1");
    // cudaMallocHost memory: in the device memory when it is shared (the
    // device reaches it at its host address, as under unified addressing),
    // else host memory the device does not reach.
    EXPECT_EQ(m["unmapped_device_pointer"], live ? "cudaSuccess" : "cudaErrorInvalidValue");
    // cudaMemoryType: 0 unregistered, 1 host, 2 device, 3 managed; device -2: none.
    EXPECT_EQ(m["attr_device"], "cudaSuccess type=2 device=0 dev=same host=null");
    EXPECT_EQ(m["attr_device_interior"], "cudaSuccess type=2 device=0 dev=same host=null");
    EXPECT_EQ(m["attr_managed"], "cudaSuccess type=3 device=0 dev=same host=same");
    EXPECT_EQ(m["attr_managed_var"], "cudaSuccess type=3 device=0 dev=same host=same");
    EXPECT_EQ(m["attr_pinned"], std::string("cudaSuccess type=1 device=0 dev=") + (live ? "same" : "null") + " host=same");
    EXPECT_EQ(m["attr_mapped"], "cudaSuccess type=1 device=0 dev=same host=same");
    EXPECT_EQ(m["attr_registered"], "cudaSuccess type=1 device=0 dev=other host=same");
    EXPECT_EQ(m["attr_registered_device"], "cudaSuccess type=1 device=0 dev=same host=other");
    EXPECT_EQ(m["attr_unregistered"], "cudaSuccess type=0 device=-2 dev=null host=same");
    for (const char* k : {"host_unregister", "free_host_mapped", "free_host", "free_managed", "final_sync"})
      EXPECT_EQ(m[k], "cudaSuccess") << k;
  }
}

// Live memory: while a kernel runs, the host sees what it writes and it
// sees what the host writes; host and device atomics on one counter add up
// exactly; the device reads cudaMallocHost memory at its host address.
// Mirrored (QGPU_SHM=0), the program is told concurrentManagedAccess 0 and
// pinned memory is host memory only.
TEST(Runtime, LiveManagedMemoryWhileAKernelRuns) {
  {
    qgpu::test::Result r;
    auto m = run_program("live", &r);
    SCOPED_TRACE(r.out + r.err);
    EXPECT_EQ(m["concurrent_managed_access"], "1");
    EXPECT_EQ(m["host_native_atomics"], "1");
    EXPECT_EQ(m["malloc_host"], "cudaSuccess");
    EXPECT_EQ(m["pinned_device_pointer"], "cudaSuccess");
    EXPECT_EQ(m["read_pinned_sync"], "cudaSuccess");
    EXPECT_EQ(m["pinned_read_by_device"], "1");
    EXPECT_EQ(m["host_saw_kernel_running"], "1");
    EXPECT_EQ(m["answer_before_go"], "0");
    EXPECT_EQ(m["wait_sync"], "cudaSuccess");
    EXPECT_EQ(m["answer"], "1007");
    EXPECT_EQ(m["atomics_sync"], "cudaSuccess");
    EXPECT_EQ(m["host_added_while_kernel_ran"], "1");
    EXPECT_EQ(m["counter_exact"], "1");
  }
  {
    qgpu::test::Result r;
    auto m = run_program("live", &r, {}, {{"QGPU_SHM", "0"}});
    SCOPED_TRACE(r.out + r.err);
    EXPECT_EQ(m["concurrent_managed_access"], "0");
    EXPECT_EQ(m["host_native_atomics"], "0");
    EXPECT_EQ(m["malloc_host"], "cudaSuccess");
    EXPECT_EQ(m["pinned_device_pointer"], "cudaErrorInvalidValue");
    EXPECT_EQ(m.count("host_saw_kernel_running"), 0u);
  }
}

// The runtime and the driver API share one session (the primary context),
// whichever library opens it.
TEST(Runtime, DriverApiSharesTheRuntimesSession) {
  for (const char* order : {"runtime-first", "driver-first", "no-cuinit"}) {
    qgpu::test::Result r;
    auto m = run_program("driver_mix", &r, {order});
    SCOPED_TRACE(std::string(order) + "\n" + r.out + r.err);
    EXPECT_EQ(m["cuInit"], std::string(order) == "no-cuinit" ? "" : "0");
    EXPECT_EQ(m["cuCtxGetDevice"], "0");  // without cuInit too: the runtime initialised the driver
    EXPECT_EQ(m["device"], "0");
    EXPECT_EQ(m["cudaMalloc"], "cudaSuccess");
    EXPECT_EQ(m["cuCtxGetCurrent"], "0");
    EXPECT_EQ(m["has_context"], "1");  // the runtime's primary context, current without cuCtxCreate
    EXPECT_EQ(m["cuModuleLoadData"], "0");
    EXPECT_EQ(m["cuModuleGetFunction"], "0");
    EXPECT_EQ(m["cuLaunchKernel"], "0");
    EXPECT_EQ(m["cudaMemcpy"], "cudaSuccess");
    EXPECT_EQ(m["wrong"], "0");  // runtime kernel (3i), then the driver's (+1000), in that order
    EXPECT_EQ(m["cuMemAlloc"], "0");
    EXPECT_EQ(m["cudaMemcpy_to_driver_memory"], "cudaSuccess");
    EXPECT_EQ(m["cuMemcpyDtoH"], "0");
    EXPECT_EQ(m["same"], "1");
    EXPECT_EQ(m["cuModuleUnload"], "0");
    EXPECT_NE(r.out.find("\ndone\n"), std::string::npos);
  }
}

// Conditional graph nodes: the condition set by a kernel's
// cudaGraphSetConditional (or a handle's default) chooses the bodies each
// launch runs (programs/conditional.cu).
TEST(Runtime, ConditionalGraphNodesRunTheBodiesTheConditionChooses) {
  qgpu::test::Result r;
  auto m = run_program("conditional", &r);
  SCOPED_TRACE(r.out + r.err);
  for (const char* k : {"handle_create", "add_if_else", "instantiate_if", "if_sync", "instantiate_while", "while_sync",
                        "instantiate_switch", "switch_sync", "final_sync"})
    EXPECT_EQ(m[k], "cudaSuccess") << k;
  // Launched with conditions 0, 1, 5, 0, 0: "then" twice, "else" three times.
  EXPECT_EQ(m["if_then"], "2");
  EXPECT_EQ(m["if_else"], "3");
  // A count-down from 5 runs its body 5 times; the second launch starts from
  // the default value again (cudaGraphCondAssignDefault) and counts down from 3.
  EXPECT_EQ(m["while_runs_first"], "5");
  EXPECT_EQ(m["while_counter"], "0");
  EXPECT_EQ(m["while_runs_total"], "8");
  EXPECT_EQ(m["destroy_pending"], "cudaSuccess");
  EXPECT_EQ(m["while_runs_after_destroy"], "10");  // and 2 more
  // Conditions 2, 0, 7, 2: body 2 twice (+100 each), body 0 once, none for 7.
  EXPECT_EQ(m["switch_0"], "1");
  EXPECT_EQ(m["switch_1"], "0");
  EXPECT_EQ(m["switch_2"], "200");
  EXPECT_EQ(m["if_default"], "10");
  EXPECT_EQ(m["while_size_2"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["instantiate_host_in_body"], "cudaErrorInvalidValue");
  EXPECT_NE(r.err.find("a conditional node's body holds a node of type 3"), std::string::npos);
}

// Graphs built node by node and by stream capture, memory pools and graph
// memory nodes (programs/graphs.cu computes each expected value itself).
TEST(Runtime, GraphsCaptureAndStreamOrderedMemory) {
  qgpu::test::Result r;
  auto m = run_program("graphs", &r);
  SCOPED_TRACE(r.out + r.err);
  for (const char* k : {"graph_create", "add_memset", "add_kernel", "add_copy", "add_host", "instantiate", "launch",
                        "launch_sync", "exec_set_params", "exec_update", "exec_destroy", "add_child", "begin_capture",
                        "capture_info", "end_capture", "captured_sync", "exchange_mode", "malloc_async", "free_async",
                        "set_threshold", "trim", "pool_create", "malloc_from_pool", "pool_destroy", "add_alloc",
                        "add_free", "instantiate_mem", "mem_graph_sync", "mem_graph_again", "final_sync"})
    EXPECT_EQ(m[k], "cudaSuccess") << k;
  // Structure: memset, 4 kernels, copy, host node; the diamond's edges.
  EXPECT_EQ(m["nodes"], "7");
  EXPECT_EQ(m["roots"], "2");
  EXPECT_EQ(m["edges"], "7");
  EXPECT_EQ(m["d_deps"], "3");
  EXPECT_EQ(m["a_dependents"], "2");
  EXPECT_EQ(m["type_memset"], "1");
  EXPECT_EQ(m["type_memcpy"], "1");
  EXPECT_EQ(m["kernel_params_func"], "1");
  EXPECT_EQ(m["kernel_params_k"], "2");  // copied when the node was added
  EXPECT_EQ(m["node_window"], "cudaSuccess");
  EXPECT_EQ(m["node_window_bytes"], "4096");
  EXPECT_EQ(m["node_window_over"], "cudaErrorInvalidValue");
  // Results, each against the program's own formula.
  EXPECT_EQ(m["diamond_wrong"], "0");
  EXPECT_EQ(m["host_calls"], "1");
  EXPECT_EQ(m["updated_wrong"], "0");
  EXPECT_EQ(m["exec_update_wrong"], "0");
  EXPECT_EQ(m["after_graph_destroy_wrong"], "0");
  EXPECT_EQ(m["host_calls_after"], "4");
  EXPECT_EQ(m["child_wrong"], "0");
  // Capture: two streams joined by events, nothing run until launched.
  EXPECT_EQ(m["capturing"], "1");
  EXPECT_EQ(m["joined"], "1");
  EXPECT_EQ(m["capture_deps"], "1");
  EXPECT_EQ(m["end_is_graph"], "1");
  EXPECT_EQ(m["s2_released"], "1");
  EXPECT_EQ(m["nothing_ran"], "1");
  EXPECT_EQ(m["captured_nodes"], "5");
  EXPECT_EQ(m["captured_kernels"], "4");
  EXPECT_EQ(m["captured_copies"], "1");
  EXPECT_EQ(m["captured_wrong"], "0");
  EXPECT_EQ(m["launch_in_capture_is_child"], "1");
  EXPECT_EQ(m["sync_while_capturing"], "cudaErrorStreamCaptureUnsupported");
  EXPECT_EQ(m["end_invalidated"], "cudaErrorStreamCaptureInvalidated");
  EXPECT_EQ(m["invalidated_graph_null"], "1");
  EXPECT_EQ(m["previous_mode_global"], "1");
  // Pools: release threshold, reuse, trim, a pool of the program's own.
  EXPECT_EQ(m["pools_supported"], "1");
  EXPECT_EQ(m["async_memory_wrong"], "0");
  EXPECT_EQ(m["threshold0_reserved"], "0");
  EXPECT_EQ(m["threshold0_used"], "0");
  EXPECT_EQ(m["used_high"], std::to_string(1 << 20));
  EXPECT_EQ(m["kept_reserved"], std::to_string(1 << 20));
  EXPECT_EQ(m["kept_used"], "0");
  EXPECT_EQ(m["reused_block"], "1");
  EXPECT_EQ(m["trimmed_reserved"], "0");
  EXPECT_EQ(m["own_pool_used"], "4096");
  EXPECT_EQ(m["own_pool_byte"], "1");
  // Graph memory: an address at once, a footprint from the launch until trimmed.
  EXPECT_EQ(m["alloc_has_address"], "1");
  EXPECT_EQ(m["footprint_before_launch"], "0");
  EXPECT_EQ(m["footprint_launched"], std::to_string(300 * 4));
  EXPECT_EQ(m["mem_graph_wrong"], "0");
  EXPECT_EQ(m["footprint_trimmed"], "0");
  EXPECT_EQ(m["footprint_high"], std::to_string(300 * 4));
  EXPECT_EQ(m["captured_alloc_free"], "1");
  EXPECT_NE(r.out.find("\ndone\n"), std::string::npos);
}

TEST(Runtime, PitchedMemoryArraysTexturesAndSurfaces) {
  qgpu::test::Result r;
  auto m = run_program("textures", &r);
  SCOPED_TRACE(r.out + r.err);
  for (const char* k : {"malloc_pitch", "copy2d_in", "memset2d", "copy2d_out", "malloc_array", "copy_to_array",
                        "copy_from_array", "array_info", "create_texture", "fetch_point", "get_resource",
                        "destroy_texture", "malloc_array_u8", "copy_u8", "create_texture_u8", "fetch_linear",
                        "create_texture_linear", "fetch_linear_memory", "malloc_array_surface", "create_surface",
                        "surface_kernel", "surface_back", "malloc_layered", "copy3d_layered", "create_texture_layered",
                        "fetch_layered", "malloc_cube", "copy3d_cube", "create_texture_cube", "fetch_cube", "graph_create", "graph_array_node",
                        "graph_instantiate", "graph_launch", "graph_sync", "graph_copy_back", "free_arrays",
                        "final_sync"})
    EXPECT_EQ(m[k], "cudaSuccess") << k;
  for (const char* k : {"pitch_ok", "array_info_ok", "get_resource_ok", "tex_linear_ok"}) EXPECT_EQ(m[k], "1") << k;
  for (const char* k : {"copy2d_wrong", "array_wrong", "tex_point_wrong", "fetch_wrong", "surf_wrong", "layered_wrong",
                        "cube_wrong", "graph_array_wrong"})
    EXPECT_EQ(m[k], "0") << k;
}
