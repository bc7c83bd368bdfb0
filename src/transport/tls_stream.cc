#include "transport/tls_stream.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>

#include "transport/tcp_socket.h"

namespace pvgpu::transport::internal {
namespace {

// Everything on OpenSSL's error queue for this thread, oldest first, and clears it.
std::string TakeOpenSslErrors() {
  std::string out;
  while (unsigned long error = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(error, text, sizeof(text));
    if (!out.empty()) out += "; ";
    out += text;
  }
  return out.empty() ? "unknown TLS error" : out;
}

class TlsStream final : public ByteStream {
 public:
  TlsStream(UniqueFd fd, SSL* ssl) : fd_(std::move(fd)), ssl_(ssl) {}
  ~TlsStream() override { SSL_free(ssl_); }

  IoResult Read(uint8_t* data, size_t size) override {
    ERR_clear_error();
    const int n = SSL_read(ssl_, data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) return {IoResult::kDone, static_cast<size_t>(n), {}};
    return Failure(n);
  }

  IoResult Write(const uint8_t* data, size_t size) override {
    ERR_clear_error();
    const int n = SSL_write(ssl_, data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) return {IoResult::kDone, static_cast<size_t>(n), {}};
    return Failure(n);
  }

  void ShutdownWrite() override {
    ERR_clear_error();
    SSL_shutdown(ssl_);  // sends close_notify; we do not wait for the peer's
  }
  int fd() const override { return fd_.get(); }

 private:
  IoResult Failure(int rc) {
    const int error = SSL_get_error(ssl_, rc);
    switch (error) {
      case SSL_ERROR_WANT_READ:
        return {IoResult::kWantRead, 0, {}};
      case SSL_ERROR_WANT_WRITE:
        return {IoResult::kWantWrite, 0, {}};
      case SSL_ERROR_ZERO_RETURN:
        return {IoResult::kEof, 0, {}};
      case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() == 0) {
          // OpenSSL 3 reports an EOF without close_notify as SSL_ERROR_SSL; older ones as this.
          return errno == 0 ? IoResult{IoResult::kEof, 0, {}}
                            : IoResult{IoResult::kError, 0, std::strerror(errno)};
        }
        [[fallthrough]];
      default:
        return {IoResult::kError, 0, TakeOpenSslErrors()};
    }
  }

  UniqueFd fd_;
  SSL* ssl_;
};

// Runs SSL_accept or SSL_connect to completion on a non-blocking socket.
template <typename Step>
Status Handshake(SSL* ssl, int fd, const Deadline& deadline, Step step) {
  for (;;) {
    ERR_clear_error();
    const int rc = step(ssl);
    if (rc == 1) return Status::Ok();
    const int error = SSL_get_error(ssl, rc);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      const auto kind = error == SSL_ERROR_WANT_READ ? IoResult::kWantRead : IoResult::kWantWrite;
      if (!PollFor(fd, kind, deadline)) return Error(Code::kNotReady, "TLS handshake timed out");
      continue;
    }
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      ERR_clear_error();
      return Error(Code::kNotPermitted, std::string("certificate verify failed: ") +
                                            X509_verify_cert_error_string(verify));
    }
    if (error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
      return Error(Code::kDeviceUnavailable, "peer closed the connection during the handshake");
    }
    return Error(Code::kNotPermitted, TakeOpenSslErrors());
  }
}

// The guest library's I/O threads may still be inside SSL_read when the program calls exit();
// OpenSSL's own atexit clean-up would free state under them. Without it the OS reclaims
// everything at exit anyway. (No effect when the program initialized OpenSSL first.)
void InitOpenSsl() { OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, nullptr); }

}  // namespace

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

StatusOr<std::shared_ptr<TlsContext>> TlsContext::ForServer(const std::string& cert_file,
                                                            const std::string& key_file) {
  InitOpenSsl();
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Error(Code::kUnknown, "SSL_CTX_new: " + TakeOpenSslErrors());
  std::shared_ptr<TlsContext> context(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  // Guests connect once per process; resumption tickets would only cost a round of messages.
  SSL_CTX_set_num_tickets(ctx, 0);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return Error(Code::kInvalidValue,
                 "cannot load TLS certificate '" + cert_file + "': " + TakeOpenSslErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Error(Code::kInvalidValue,
                 "cannot load TLS key '" + key_file + "': " + TakeOpenSslErrors());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return Error(Code::kInvalidValue,
                 "TLS key '" + key_file + "' does not match certificate '" + cert_file + "'");
  }
  return context;
}

StatusOr<std::shared_ptr<TlsContext>> TlsContext::ForClient(const std::string& ca_file) {
  InitOpenSsl();
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Error(Code::kUnknown, "SSL_CTX_new: " + TakeOpenSslErrors());
  std::shared_ptr<TlsContext> context(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const int loaded = ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                                     : SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  if (loaded != 1) {
    return Error(Code::kInvalidValue, "cannot load TLS CA '" +
                                          (ca_file.empty() ? std::string("(system)") : ca_file) +
                                          "': " + TakeOpenSslErrors());
  }
  return context;
}

StatusOr<std::unique_ptr<ByteStream>> TlsAccept(const TlsContext& context, UniqueFd fd,
                                                const Deadline& deadline) {
  SSL* ssl = SSL_new(context.get());
  if (ssl == nullptr) return Error(Code::kUnknown, "SSL_new: " + TakeOpenSslErrors());
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_set_fd(ssl, fd.get());
  auto stream = std::make_unique<TlsStream>(std::move(fd), ssl);
  PVGPU_TRY(Handshake(ssl, stream->fd(), deadline, [](SSL* s) { return SSL_accept(s); }));
  return std::unique_ptr<ByteStream>(std::move(stream));
}

StatusOr<std::unique_ptr<ByteStream>> TlsConnect(const TlsContext& context, UniqueFd fd,
                                                 const std::string& host,
                                                 const Deadline& deadline) {
  SSL* ssl = SSL_new(context.get());
  if (ssl == nullptr) return Error(Code::kUnknown, "SSL_new: " + TakeOpenSslErrors());
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_set_fd(ssl, fd.get());
  auto stream = std::make_unique<TlsStream>(std::move(fd), ssl);
  // The certificate must name the host the guest asked for, not merely chain to the CA.
  if (IsIpLiteral(host)) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) != 1) {
      return Error(Code::kInvalidValue, "bad IP address '" + host + "'");
    }
  } else {
    SSL_set_tlsext_host_name(ssl, host.c_str());
    if (SSL_set1_host(ssl, host.c_str()) != 1) {
      return Error(Code::kInvalidValue, "bad host name '" + host + "'");
    }
  }
  PVGPU_TRY(Handshake(ssl, stream->fd(), deadline, [](SSL* s) { return SSL_connect(s); }));
  return std::unique_ptr<ByteStream>(std::move(stream));
}

}  // namespace pvgpu::transport::internal
