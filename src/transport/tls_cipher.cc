#include "transport/tls_cipher.h"

#include <chrono>
#include <memory>
#include <vector>

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "transport/openssl_api.h"

namespace pvgpu::transport::internal {

bool CpuAcceleratesAesGcm() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
#elif defined(__aarch64__)
  const unsigned long caps = getauxval(AT_HWCAP);
  return (caps & HWCAP_AES) != 0 && (caps & HWCAP_PMULL) != 0;
#else
  return false;
#endif
}

std::string PreferredCiphersuites() {
  // AES-128 before AES-256: the same instructions, fewer rounds, and 128-bit keys are what
  // TLS 1.3 itself requires every implementation to offer.
  if (CpuAcceleratesAesGcm()) {
    return "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
  }
  return "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384";
}

StatusOr<double> MeasureCipherBytesPerSecond(const std::string& suite, double seconds) {
  const char* algorithm = nullptr;
  if (suite == "TLS_AES_128_GCM_SHA256") {
    algorithm = "AES-128-GCM";
  } else if (suite == "TLS_AES_256_GCM_SHA384") {
    algorithm = "AES-256-GCM";
  } else if (suite == "TLS_CHACHA20_POLY1305_SHA256") {
    algorithm = "ChaCha20-Poly1305";
  } else {
    return Error(Code::kInvalidValue, "no AEAD known for cipher suite '" + suite + "'");
  }
  PVGPU_ASSIGN_OR_RETURN(const OpenSslApi* api, OpenSsl());
  EVP_CIPHER* cipher = api->EVP_CIPHER_fetch(nullptr, algorithm, nullptr);
  if (cipher == nullptr) return Error(Code::kNotSupported, std::string("no ") + algorithm);
  std::unique_ptr<EVP_CIPHER, void (*)(EVP_CIPHER*)> cipher_owner(cipher, api->EVP_CIPHER_free);
  EVP_CIPHER_CTX* ctx = api->EVP_CIPHER_CTX_new();
  if (ctx == nullptr) return Error(Code::kUnknown, "EVP_CIPHER_CTX_new failed");
  std::unique_ptr<EVP_CIPHER_CTX, void (*)(EVP_CIPHER_CTX*)> ctx_owner(ctx,
                                                                       api->EVP_CIPHER_CTX_free);
  // As TLS 1.3 seals a record: a fresh 12-byte nonce, the record as input, a 16-byte tag.
  const unsigned char key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  unsigned char nonce[12] = {};
  constexpr int kRecord = 16384;
  std::vector<unsigned char> plain(kRecord, 0x5a), sealed(kRecord + 64);
  unsigned char tag[16];
  if (api->EVP_EncryptInit_ex(ctx, cipher, nullptr, key, nonce) != 1) {
    return Error(Code::kUnknown, std::string("cannot set up ") + algorithm);
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  uint64_t records = 0;
  for (;; ++records) {
    if ((records & 15) == 0 && Clock::now() >= end) break;
    nonce[11] = static_cast<unsigned char>(records);
    nonce[10] = static_cast<unsigned char>(records >> 8);
    int out = 0;
    int last = 0;
    if (api->EVP_EncryptInit_ex(ctx, nullptr, nullptr, nullptr, nonce) != 1 ||
        api->EVP_EncryptUpdate(ctx, sealed.data(), &out, plain.data(), kRecord) != 1 ||
        api->EVP_EncryptFinal_ex(ctx, sealed.data() + out, &last) != 1 ||
        api->EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, sizeof(tag), tag) != 1) {
      return Error(Code::kUnknown, std::string(algorithm) + " failed");
    }
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(records) * kRecord / elapsed;
}

}  // namespace pvgpu::transport::internal
