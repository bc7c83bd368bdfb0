#include "transport/openssl_api.h"

#include <dlfcn.h>

#include <mutex>

namespace pvgpu::transport::internal {

namespace {

StatusOr<const OpenSslApi*> Load() {
  // libcrypto first: libssl depends on it, and the error then names the library missing.
  void* crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
  if (crypto == nullptr) {
    return Error(Code::kNotFound, std::string("TLS needs OpenSSL 3: ") + dlerror());
  }
  void* ssl = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
  if (ssl == nullptr) {
    return Error(Code::kNotFound, std::string("TLS needs OpenSSL 3: ") + dlerror());
  }
  auto* api = new OpenSslApi();  // kept for the life of the process, as are the libraries
  std::string missing;
#define PVGPU_OPENSSL_RESOLVE(handle, name)                                           \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(handle, #name));            \
  if (api->name == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #name;
#define PVGPU_FROM_SSL(name) PVGPU_OPENSSL_RESOLVE(ssl, name)
#define PVGPU_FROM_CRYPTO(name) PVGPU_OPENSSL_RESOLVE(crypto, name)
  PVGPU_LIBSSL_FUNCTIONS(PVGPU_FROM_SSL)
  PVGPU_LIBCRYPTO_FUNCTIONS(PVGPU_FROM_CRYPTO)
#undef PVGPU_FROM_CRYPTO
#undef PVGPU_FROM_SSL
#undef PVGPU_OPENSSL_RESOLVE
  if (!missing.empty()) {
    delete api;
    return Error(Code::kNotFound, "TLS needs OpenSSL 3; the installed one lacks " + missing);
  }
  // The guest library's I/O threads may still be inside SSL_read when the program calls
  // exit(); OpenSSL's own atexit clean-up would free state under them. Without it the OS
  // reclaims everything at exit anyway. (No effect when the program initialized OpenSSL first.)
  api->OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, nullptr);
  return static_cast<const OpenSslApi*>(api);
}

}  // namespace

StatusOr<const OpenSslApi*> OpenSsl() {
  static std::once_flag once;
  static StatusOr<const OpenSslApi*>* loaded = nullptr;
  std::call_once(once, [] { loaded = new StatusOr<const OpenSslApi*>(Load()); });
  return *loaded;
}

}  // namespace pvgpu::transport::internal
