// TLS 1.3 over a TCP connection (OpenSSL 3, loaded on first use: openssl_api.h): contexts for the
// host (certificate and key) and the guest (trust anchors), and handshakes bounded by a deadline
// that yield a ByteStream.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "transport/fd_util.h"
#include "transport/tcp_stream.h"

struct ssl_ctx_st;

namespace pvgpu::transport::internal {

struct OpenSslApi;

class TlsContext {
 public:
  // The host's context: its certificate chain (PEM, leaf first) and private key.
  // `ciphersuites` (OpenSSL's TLS 1.3 list syntax) overrides PreferredCiphersuites().
  static StatusOr<std::shared_ptr<TlsContext>> ForServer(const std::string& cert_file,
                                                         const std::string& key_file,
                                                         const std::string& ciphersuites = "");
  // The guest's context: trusts the CA certificates in `ca_file` (PEM), or the system's
  // default store when it is empty.
  static StatusOr<std::shared_ptr<TlsContext>> ForClient(const std::string& ca_file,
                                                         const std::string& ciphersuites = "");
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  ssl_ctx_st* get() const { return ctx_; }
  const OpenSslApi& api() const { return *api_; }

 private:
  TlsContext(const OpenSslApi* api, ssl_ctx_st* ctx) : api_(api), ctx_(ctx) {}
  const OpenSslApi* api_;
  ssl_ctx_st* ctx_;
};

// Host side: runs the TLS handshake on an accepted connection.
StatusOr<std::unique_ptr<ByteStream>> TlsAccept(const TlsContext& context, UniqueFd fd,
                                                const Deadline& deadline);
// Guest side: runs the handshake and checks that the host's certificate chains to a trusted CA
// and names `host` (a DNS name, or an IP address matched against the certificate's IP SANs).
StatusOr<std::unique_ptr<ByteStream>> TlsConnect(const TlsContext& context, UniqueFd fd,
                                                 const std::string& host, const Deadline& deadline);

}  // namespace pvgpu::transport::internal
