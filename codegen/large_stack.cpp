#include "codegen/large_stack.hpp"

#include <pthread.h>

namespace cujit::detail {
namespace {

struct Job {
  const std::function<void()>* fn;
  std::exception_ptr error;
};

void* run_job(void* arg) {
  auto* job = static_cast<Job*>(arg);
  try {
    (*job->fn)();
  } catch (...) {
    job->error = std::current_exception();
  }
  return nullptr;
}

}  // namespace

void run_on_large_stack(const std::function<void()>& fn) {
  Job job{&fn, nullptr};
  pthread_attr_t attr;
  bool started = false;
  pthread_t thread{};
  if (pthread_attr_init(&attr) == 0) {
    started = pthread_attr_setstacksize(&attr, kCompilerStackBytes) == 0 &&
              pthread_create(&thread, &attr, run_job, &job) == 0;
    pthread_attr_destroy(&attr);
  }
  if (!started) {
    fn();  // no thread to be had: as before, on this one
    return;
  }
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace cujit::detail
