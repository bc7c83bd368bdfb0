// Compiled by the common.thread_safety_analysis test (src/common/CMakeLists.txt) with clang's
// -Wthread-safety -Werror=thread-safety: it must compile as it stands, and must fail with
// PVGPU_VIOLATE defined, which reads guarded data without its lock. That shows the build's
// check of the guest libraries really catches a missing lock (a misspelt attribute would
// silently check nothing).
#include "common/mutex.h"

namespace {

class Account {
 public:
  void Deposit(int amount) EXCLUDES(mutex_) {
    pvgpu::MutexLock lock(&mutex_);
    balance_ += amount;
  }
  int balance() EXCLUDES(mutex_) {
#ifdef PVGPU_VIOLATE
    return balance_;
#else
    pvgpu::MutexLock lock(&mutex_);
    return balance_;
#endif
  }

 private:
  pvgpu::Mutex mutex_;
  int balance_ GUARDED_BY(mutex_) = 0;
};

}  // namespace

int main() {
  Account account;
  account.Deposit(1);
  return account.balance() == 1 ? 0 : 1;
}
