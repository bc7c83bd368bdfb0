// Clang's thread-safety annotations (-Wthread-safety): which lock guards which data, and which
// functions take, need or must not hold it. Under other compilers they expand to nothing; the
// guest libraries are built with clang in CI (scripts/fuzz.sh), where a violation is an error.
//
// The usual vocabulary (as in Clang's documentation, abseil and Chromium):
//   Mutex mu_;  int value_ GUARDED_BY(mu_);       reads and writes need mu_ held
//   void Flush() REQUIRES(mu_);                   callers hold mu_
//   void Add() EXCLUDES(mu_);                     callers must not hold mu_ (Add takes it)
//   void Lock() ACQUIRE(); void Unlock() RELEASE();   on the lock type itself (common/mutex.h)
#pragma once

#if defined(__clang__)
#define PVGPU_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define PVGPU_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) PVGPU_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY PVGPU_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) PVGPU_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) PVGPU_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) PVGPU_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) PVGPU_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) PVGPU_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) PVGPU_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) PVGPU_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) PVGPU_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) PVGPU_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) PVGPU_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) PVGPU_THREAD_ANNOTATION(lock_returned(x))
// For the rare function the analysis cannot follow; say why beside each use.
#define NO_THREAD_SAFETY_ANALYSIS PVGPU_THREAD_ANNOTATION(no_thread_safety_analysis)
