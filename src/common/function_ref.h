// A non-owning reference to a callable, for callbacks that are called only during the call
// that receives them (a ring's fill or visit, a launch to watch). Unlike std::function it never
// allocates: these run once per message on the channel's hot paths.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace pvgpu {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  // Refers to `f`, which must outlive every call through this reference (a lambda passed as an
  // argument lives until the end of the calling expression).
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f) noexcept  // NOLINT: implicit, as std::function is
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace pvgpu
