#!/usr/bin/env python3
"""Load and faults against one model_host: N clients run a mix of CUDA
programs under libcudart.so.13 for a while, some killed at random moments.

Checks, and prints with the numbers behind them:
  - every run that was not killed passed (exit status 0 and its own checks);
  - the daemon's resident memory stays bounded (its growth from the end of the
    first fifth of the run to the end is below --rss-growth-mb);
  - every client that said Hello had its session released by the end (killed
    ones included: the daemon's log names the session and the allocations it
    freed), and the daemon still serves a fresh program afterwards.

Usage (from the repository root, after building model_host, libcudart.so.13
and the test programs: cmake --build build --target model_host cudart
runtime_test_programs shim_test_programs):
  tools/load_fault/load_fault.py [--clients 8] [--duration 600] [--kill-fraction 0.3]
      [--backend interpreter] [--build build] [--seed N]
Exit status 0 when every check holds.
"""
import argparse
import collections
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

# Program (relative to the build directory), arguments, and what its output
# must hold for a run to pass.
PROGRAMS = [
    ("tests/runtime/programs/streams", [], ["stream_order 1", "wait_event_value 11", "elapsed_adds_up 1", "final_sync cudaSuccess"]),
    ("tests/runtime/programs/threads", [], ["callbacks_good 80", "threads_failed 0", "final_sync cudaSuccess"]),
    ("tests/runtime/programs/managed", [], ["managed_two_kernels 1", "managed_var_after_host_write 30", "registered_after_kernel 1", "final_sync cudaSuccess"]),
    ("tests/runtime/programs/errors_async", [], ["async_copy_call cudaErrorInvalidValue", "memset_value abababab", "assert_sync cudaErrorAssert", "done"]),
    ("tests/runtime/programs/per_thread", [], ["values 12"]),
    ("tests/shim/programs/basic", [], ["PASSED"]),
    ("tests/shim/programs/spin", ["2000000"], ["sync cudaSuccess"]),
]


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class Totals:
    def __init__(self):
        self.lock = threading.Lock()
        self.runs = collections.Counter()     # program -> completed runs
        self.passed = collections.Counter()
        self.killed = collections.Counter()
        self.killed_pids = []
        self.failures = []                    # (program, reason, output tail)
        self.seconds = collections.defaultdict(float)


def client(index, args, build, env, deadline, totals, rng):
    while time.monotonic() < deadline:
        prog, pargs, expect = rng.choice(PROGRAMS)
        name = os.path.basename(prog)
        kill = rng.random() < args.kill_fraction
        start = time.monotonic()
        p = subprocess.Popen([os.path.join(build, prog)] + pargs, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        if kill:
            time.sleep(rng.uniform(0.0, args.kill_within))
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.communicate()  # reaps it: the daemon sees the pid vanish
            with totals.lock:
                totals.killed[name] += 1
                totals.killed_pids.append(p.pid)
            continue
        try:
            out, err = p.communicate(timeout=args.run_timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            with totals.lock:
                totals.runs[name] += 1
                totals.failures.append((name, f"timed out after {args.run_timeout} s", (out + err)[-2000:]))
            continue
        took = time.monotonic() - start
        missing = [e for e in expect if e not in out]
        with totals.lock:
            totals.runs[name] += 1
            totals.seconds[name] += took
            if p.returncode == 0 and not missing:
                totals.passed[name] += 1
            else:
                totals.failures.append((name, f"exit {p.returncode}, missing {missing}", (out + err)[-2000:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=float, default=600, help="seconds")
    ap.add_argument("--kill-fraction", type=float, default=0.3, help="share of runs killed")
    ap.add_argument("--kill-within", type=float, default=1.5, help="a killed run dies within this many seconds")
    ap.add_argument("--run-timeout", type=float, default=300)
    ap.add_argument("--rss-growth-mb", type=float, default=64)
    ap.add_argument("--backend", default="interpreter")
    ap.add_argument("--build", default="build")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    for prog, _, _ in PROGRAMS:
        if not os.path.exists(os.path.join(build, prog)):
            sys.exit(f"missing {prog} in {build}: build model_host, cudart, runtime_test_programs, shim_test_programs")
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    tmp = tempfile.mkdtemp(prefix="qgpu-load-fault-")
    sock = os.path.join(tmp, "model_host.sock")
    log = os.path.join(tmp, "model_host.log")
    endpoint = "ipc://" + sock
    daemon = subprocess.Popen([os.path.join(build, "bin/model_host"), "--backend", args.backend, "--endpoint", endpoint,
                               "--log", log, "--client-timeout-ms", "3000"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "lib/libcudart.so.13"), QGPU_DAEMON=endpoint)
    print(f"load_fault: {args.clients} clients for {args.duration:.0f} s, {args.kill_fraction:.0%} of runs killed, "
          f"backend {args.backend}, seed {seed}; daemon pid {daemon.pid}, log {log}", flush=True)

    totals = Totals()
    t0 = time.monotonic()
    deadline = t0 + args.duration
    rss = []  # (seconds since start, kB)
    threads = [threading.Thread(target=client, args=(i, args, build, env, deadline, totals, random.Random(seed + i)))
               for i in range(args.clients)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        r = rss_kb(daemon.pid)
        if r is not None:
            rss.append((time.monotonic() - t0, r))
        time.sleep(1)
    for t in threads:
        t.join()

    # Sessions of killed clients are freed when the daemon notices the pid is
    # gone (within a second) or after the client timeout.
    time.sleep(4)
    final = subprocess.run([os.path.join(build, "tests/shim/programs/basic")], env=env, capture_output=True, text=True,
                           timeout=120)
    time.sleep(1)
    rss_end = rss_kb(daemon.pid)
    daemon_alive = daemon.poll() is None
    daemon.send_signal(signal.SIGTERM)
    try:
        daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        daemon.kill()

    text = open(log).read()
    connected = {int(m.group(1)): m.group(2) for m in re.finditer(r"client connected: .*?pid (\d+) \(session (0x[0-9a-f]+)\)", text)}
    released = {}
    for m in re.finditer(r"session (0x[0-9a-f]+) \(.*?pid (\d+)\) released(?:: freed (\d+) allocations)?", text):
        released[m.group(1)] = int(m.group(3) or 0)
    killed_with_session = [pid for pid in totals.killed_pids if pid in connected]
    killed_freed = [pid for pid in killed_with_session if connected[pid] in released]
    freed_allocs = sum(released.get(connected[pid], 0) for pid in killed_freed)
    unreleased = [s for s in connected.values() if s not in released]
    launches = len(re.findall(r"threads: (?:ok|error)", text))

    runs, passed, killed = sum(totals.runs.values()), sum(totals.passed.values()), sum(totals.killed.values())
    print(f"runs: {runs} completed, {passed} passed, {len(totals.failures)} failed; {killed} killed "
          f"({len(killed_with_session)} after their Hello); {launches} launches in {time.monotonic() - t0:.0f} s")
    for name in sorted(set(totals.runs) | set(totals.killed)):
        n = totals.runs[name]
        mean = totals.seconds[name] / max(1, totals.passed[name])
        print(f"  {name:14s} {totals.passed[name]:5d}/{n:<5d} passed, {totals.killed[name]:4d} killed, {mean:6.2f} s a run")
    for name, why, tail in totals.failures[:10]:
        print(f"FAILED {name}: {why}\n{tail}")
    print(f"sessions: {len(connected)} opened, {len(released)} released, {len(unreleased)} still open; killed clients: "
          f"{len(killed_freed)}/{len(killed_with_session)} sessions freed, {freed_allocs} allocations freed with them")
    early = [kb for t, kb in rss if t <= args.duration / 5] or [rss[0][1] if rss else 0]
    base = max(early)
    peak = max([kb for _, kb in rss] or [0])
    print(f"daemon RSS: {rss[0][1] / 1024 if rss else 0:.1f} MiB at start, {base / 1024:.1f} MiB by the end of the first "
          f"fifth, {peak / 1024:.1f} MiB peak, {(rss_end or 0) / 1024:.1f} MiB at the end ({len(rss)} samples)")
    final_ok = final.returncode == 0 and "PASSED" in final.stdout

    ok = True
    checks = [
        (not totals.failures, "every run that was not killed passed"),
        (runs > 0, "some runs completed"),
        (daemon_alive and final_ok, "the daemon survived and serves a fresh program"),
        (len(killed_freed) == len(killed_with_session), "every killed client's session was freed"),
        (not unreleased, "every session was released"),
        (rss_end is not None and (rss_end - base) / 1024 < args.rss_growth_mb,
         f"RSS grew less than {args.rss_growth_mb:.0f} MiB after the first fifth"),
    ]
    for good, what in checks:
        print(("ok:   " if good else "FAIL: ") + what)
        ok &= good
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
