// Runs a program with extra environment and a deadline, capturing its
// output: how the integration tests drive CUDA programs and model_host.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace qgpu::test {

struct Result {
  int status = -1;  // exit code, or 128 + signal
  bool timed_out = false;
  std::string out, err;
  double seconds = 0;
};

// Starts a program; its stdout and stderr go to the returned pipe ends, or
// to /dev/null when none are asked for.
inline pid_t start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                   int* out_fd = nullptr, int* err_fd = nullptr) {
  int out[2], err[2];
  if (pipe(out) || pipe(err)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    int null = open("/dev/null", O_WRONLY);
    dup2(out_fd ? out[1] : null, 1);
    dup2(err_fd ? err[1] : null, 2);
    close(out[0]), close(err[0]), close(out[1]), close(err[1]), close(null);
    for (auto& [k, v] : env) {
      if (v.empty()) unsetenv(k.c_str());
      else setenv(k.c_str(), v.c_str(), 1);
    }
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  if (out_fd) *out_fd = out[0]; else close(out[0]);
  if (err_fd) *err_fd = err[0]; else close(err[0]);
  return pid;
}

// Runs to completion or kills the process group after `timeout_s`.
inline Result run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                  double timeout_s = 60) {
  Result r;
  int out, err;
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = start(argv, env, &out, &err);
  pollfd fds[2] = {{out, POLLIN, 0}, {err, POLLIN, 0}};
  int open = 2;
  while (open) {
    double left = timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, int(left * 1000) + 1) <= 0) continue;
    for (int i = 0; i < 2; ++i)
      if (fds[i].fd >= 0 && fds[i].revents) {
        char buf[4096];
        ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n <= 0) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open;
        } else {
          (i ? r.err : r.out).append(buf, size_t(n));
        }
      }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  r.status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace qgpu::test
