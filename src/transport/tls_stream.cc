#include "transport/tls_stream.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>

#include "transport/openssl_api.h"
#include "transport/tcp_socket.h"
#include "transport/tls_cipher.h"

namespace pvgpu::transport::internal {
namespace {

// Everything on OpenSSL's error queue for this thread, oldest first, and clears it.
std::string TakeOpenSslErrors(const OpenSslApi& api) {
  std::string out;
  while (unsigned long error = api.ERR_get_error()) {
    char text[256];
    api.ERR_error_string_n(error, text, sizeof(text));
    if (!out.empty()) out += "; ";
    out += text;
  }
  return out.empty() ? "unknown TLS error" : out;
}

// Encrypted records are gathered into writes of this size: OpenSSL writes each record (at
// most 16 KiB of data) with a system call of its own otherwise.
constexpr int kWriteBufferBytes = 256 << 10;
// ... and read ahead by up to this much per system call, instead of a record header and then
// its body, two calls per record.
constexpr size_t kReadBufferBytes = 256u << 10;

// The socket end of the write chain once set-up is over: writes with send(MSG_NOSIGNAL), so that
// a peer that is gone fails the write with EPIPE instead of raising SIGPIPE in whichever thread
// wrote (callers' threads write too; OpenSSL's socket BIO uses write(2)). Its data is the fd,
// which the stream owns.
const OpenSslApi* sink_api = nullptr;

int SinkWrite(BIO* bio, const char* data, int size) {
  const OpenSslApi& api = *sink_api;
  api.BIO_clear_flags(bio, BIO_FLAGS_RWS | BIO_FLAGS_SHOULD_RETRY);
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(api.BIO_get_data(bio)));
  for (;;) {
    const ssize_t n = ::send(fd, data, static_cast<size_t>(size), MSG_NOSIGNAL);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      api.BIO_set_flags(bio, BIO_FLAGS_WRITE | BIO_FLAGS_SHOULD_RETRY);
    }
    return -1;
  }
}

long SinkControl(BIO*, int command, long, void*) {
  return command == BIO_CTRL_FLUSH ? 1 : 0;  // nothing is held here; no other control applies
}

StatusOr<BIO*> NewSink(const OpenSslApi& api, int fd) {
  static std::once_flag once;
  static BIO_METHOD* method = nullptr;
  std::call_once(once, [&api] {
    sink_api = &api;
    const int index = api.BIO_get_new_index();
    if (index < 0) return;
    method = api.BIO_meth_new(index | BIO_TYPE_SOURCE_SINK, "pvgpu socket sink");
    if (method == nullptr) return;
    api.BIO_meth_set_write(method, SinkWrite);
    api.BIO_meth_set_ctrl(method, SinkControl);
  });
  BIO* bio = method != nullptr ? api.BIO_new(method) : nullptr;
  if (bio == nullptr) return Error(Code::kUnknown, "cannot make the TLS socket BIO");
  api.BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  api.BIO_set_init(bio, 1);
  return bio;
}

class TlsStream final : public ByteStream {
 public:
  TlsStream(const OpenSslApi& api, UniqueFd fd, SSL* ssl)
      : api_(api), fd_(std::move(fd)), ssl_(ssl) {}
  ~TlsStream() override { api_.SSL_free(ssl_); }

  // After the handshake: notes whether the kernel took the records over (kernel TLS, where
  // the kernel offers it and OpenSSL was built for it), and otherwise writes through a buffer
  // into the MSG_NOSIGNAL sink, so that records leave in large writes.
  Status FinishSetUp() {
    BIO* socket = api_.SSL_get_wbio(ssl_);
    kernel_send_ = api_.BIO_ctrl(socket, BIO_CTRL_GET_KTLS_SEND, 0, nullptr) > 0;
    kernel_receive_ =
        api_.BIO_ctrl(api_.SSL_get_rbio(ssl_), BIO_CTRL_GET_KTLS_RECV, 0, nullptr) > 0;
    if (kernel_send_) return Status::Ok();
    PVGPU_ASSIGN_OR_RETURN(BIO * sink, NewSink(api_, fd_.get()));
    BIO* buffer = api_.BIO_new(api_.BIO_f_buffer());
    if (buffer == nullptr) {
      api_.BIO_free(sink);
      return Error(Code::kUnknown, "BIO_new: " + TakeOpenSslErrors(api_));
    }
    api_.BIO_int_ctrl(buffer, BIO_C_SET_BUFF_SIZE, kWriteBufferBytes, 1);  // output side
    api_.BIO_push(buffer, sink);
    // Drops the SSL object's write reference to the socket BIO, which stays the read BIO.
    api_.SSL_set0_wbio(ssl_, buffer);
    return Status::Ok();
  }

  IoResult Read(uint8_t* data, size_t size) override {
    KernelWriteGuard no_sigpipe(kernel_send_);  // a read may write (alerts, key updates)
    api_.ERR_clear_error();
    const int n = api_.SSL_read(ssl_, data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) return {IoResult::kDone, static_cast<size_t>(n), {}};
    return Failure(n);
  }

  IoResult Write(const uint8_t* data, size_t size) override {
    KernelWriteGuard no_sigpipe(kernel_send_);
    api_.ERR_clear_error();
    const int n = api_.SSL_write(ssl_, data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) {
      unflushed_ = true;
      return {IoResult::kDone, static_cast<size_t>(n), {}};
    }
    return Failure(n);
  }

  IoResult Flush() override {
    if (!unflushed_) return {IoResult::kDone, 0, {}};
    KernelWriteGuard no_sigpipe(kernel_send_);
    BIO* out = api_.SSL_get_wbio(ssl_);
    errno = 0;
    if (api_.BIO_ctrl(out, BIO_CTRL_FLUSH, 0, nullptr) > 0) {
      unflushed_ = false;
      return {IoResult::kDone, 0, {}};
    }
    if (api_.BIO_test_flags(out, BIO_FLAGS_SHOULD_RETRY)) return {IoResult::kWantWrite, 0, {}};
    return {IoResult::kError, 0, errno != 0 ? std::strerror(errno) : "TLS flush failed"};
  }

  void ShutdownWrite() override {
    KernelWriteGuard no_sigpipe(kernel_send_);
    api_.ERR_clear_error();
    api_.SSL_shutdown(ssl_);  // sends close_notify; we do not wait for the peer's
    unflushed_ = true;
    (void)Flush();
  }
  int fd() const override { return fd_.get(); }

  std::string Security() const override {
    const SSL_CIPHER* cipher = api_.SSL_get_current_cipher(ssl_);
    std::string out = cipher != nullptr ? api_.SSL_CIPHER_get_name(cipher) : "TLS";
    if (kernel_send_ && kernel_receive_) return out + ", kernel TLS";
    if (kernel_send_) return out + ", kernel TLS for sending";
    return out;
  }
  bool kernel_tls() const override { return kernel_send_ || kernel_receive_; }
  bool HasBufferedInput() const override { return api_.SSL_has_pending(ssl_) != 0; }

 private:
  // Kernel TLS writes with write(2) and sendmsg(2) without MSG_NOSIGNAL: each call that may
  // write blocks SIGPIPE for its duration (user-space TLS needs none: the sink).
  class KernelWriteGuard {
   public:
    explicit KernelWriteGuard(bool kernel_send) {
      if (kernel_send) guard_.emplace();
    }

   private:
    std::optional<ScopedNoSigpipe> guard_;
  };

  IoResult Failure(int rc) {
    const int error = api_.SSL_get_error(ssl_, rc);
    switch (error) {
      case SSL_ERROR_WANT_READ:
        return {IoResult::kWantRead, 0, {}};
      case SSL_ERROR_WANT_WRITE:
        return {IoResult::kWantWrite, 0, {}};
      case SSL_ERROR_ZERO_RETURN:
        return {IoResult::kEof, 0, {}};
      case SSL_ERROR_SYSCALL:
        if (api_.ERR_peek_error() == 0) {
          // OpenSSL 3 reports an EOF without close_notify as SSL_ERROR_SSL; older ones as this.
          return errno == 0 ? IoResult{IoResult::kEof, 0, {}}
                            : IoResult{IoResult::kError, 0, std::strerror(errno)};
        }
        [[fallthrough]];
      default:
        return {IoResult::kError, 0, TakeOpenSslErrors(api_)};
    }
  }

  const OpenSslApi& api_;
  UniqueFd fd_;
  SSL* ssl_;
  bool unflushed_ = false;
  bool kernel_send_ = false;
  bool kernel_receive_ = false;
};

// Runs SSL_accept or SSL_connect to completion on a non-blocking socket.
template <typename Step>
Status Handshake(const OpenSslApi& api, SSL* ssl, int fd, const Deadline& deadline, Step step) {
  ScopedNoSigpipe no_sigpipe;  // the handshake writes too
  for (;;) {
    api.ERR_clear_error();
    const int rc = step(ssl);
    if (rc == 1) return Status::Ok();
    const int error = api.SSL_get_error(ssl, rc);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      const auto kind = error == SSL_ERROR_WANT_READ ? IoResult::kWantRead : IoResult::kWantWrite;
      if (!PollFor(fd, kind, deadline)) return Error(Code::kNotReady, "TLS handshake timed out");
      continue;
    }
    const long verify = api.SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      api.ERR_clear_error();
      return Error(Code::kNotPermitted, std::string("certificate verify failed: ") +
                                            api.X509_verify_cert_error_string(verify));
    }
    if (error == SSL_ERROR_SYSCALL && api.ERR_peek_error() == 0) {
      return Error(Code::kDeviceUnavailable, "peer closed the connection during the handshake");
    }
    return Error(Code::kNotPermitted, TakeOpenSslErrors(api));
  }
}

// A new connection's SSL object, set up for non-blocking partial writes on `fd`.
StatusOr<SSL*> NewSsl(const TlsContext& context, int fd) {
  const OpenSslApi& api = context.api();
  SSL* ssl = api.SSL_new(context.get());
  if (ssl == nullptr) return Error(Code::kUnknown, "SSL_new: " + TakeOpenSslErrors(api));
  api.SetMode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  api.SSL_set_fd(ssl, fd);
  return ssl;
}

// What both ends set: TLS 1.3 only, the cipher suites in the order this CPU runs them fastest
// (the host's order decides, unless the guest puts ChaCha20 first: then its CPU lacks AES
// instructions and the host follows), kernel TLS where there is one, and reading ahead.
Status Tune(const OpenSslApi& api, SSL_CTX* ctx, const std::string& ciphersuites, bool server) {
  api.SetMinProtoVersion(ctx, TLS1_3_VERSION);
  uint64_t options = SSL_OP_ENABLE_KTLS;
  if (server) options |= SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_PRIORITIZE_CHACHA;
  api.SSL_CTX_set_options(ctx, options);
  const std::string suites = ciphersuites.empty() ? PreferredCiphersuites() : ciphersuites;
  if (api.SSL_CTX_set_ciphersuites(ctx, suites.c_str()) != 1) {
    return Error(Code::kInvalidValue,
                 "bad TLS 1.3 cipher suites '" + suites + "': " + TakeOpenSslErrors(api));
  }
  api.SetReadAhead(ctx);
  api.SSL_CTX_set_default_read_buffer_len(ctx, kReadBufferBytes);
  return Status::Ok();
}

}  // namespace

TlsContext::~TlsContext() { api_->SSL_CTX_free(ctx_); }

StatusOr<std::shared_ptr<TlsContext>> TlsContext::ForServer(const std::string& cert_file,
                                                            const std::string& key_file,
                                                            const std::string& ciphersuites) {
  PVGPU_ASSIGN_OR_RETURN(const OpenSslApi* api, OpenSsl());
  api->ERR_clear_error();
  SSL_CTX* ctx = api->SSL_CTX_new(api->TLS_server_method());
  if (ctx == nullptr) return Error(Code::kUnknown, "SSL_CTX_new: " + TakeOpenSslErrors(*api));
  std::shared_ptr<TlsContext> context(new TlsContext(api, ctx));
  PVGPU_TRY(Tune(*api, ctx, ciphersuites, /*server=*/true));
  // Guests connect once per process; resumption tickets would only cost a round of messages.
  api->SSL_CTX_set_num_tickets(ctx, 0);
  if (api->SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return Error(Code::kInvalidValue,
                 "cannot load TLS certificate '" + cert_file + "': " + TakeOpenSslErrors(*api));
  }
  if (api->SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Error(Code::kInvalidValue,
                 "cannot load TLS key '" + key_file + "': " + TakeOpenSslErrors(*api));
  }
  if (api->SSL_CTX_check_private_key(ctx) != 1) {
    return Error(Code::kInvalidValue,
                 "TLS key '" + key_file + "' does not match certificate '" + cert_file + "'");
  }
  return context;
}

StatusOr<std::shared_ptr<TlsContext>> TlsContext::ForClient(const std::string& ca_file,
                                                            const std::string& ciphersuites) {
  PVGPU_ASSIGN_OR_RETURN(const OpenSslApi* api, OpenSsl());
  api->ERR_clear_error();
  SSL_CTX* ctx = api->SSL_CTX_new(api->TLS_client_method());
  if (ctx == nullptr) return Error(Code::kUnknown, "SSL_CTX_new: " + TakeOpenSslErrors(*api));
  std::shared_ptr<TlsContext> context(new TlsContext(api, ctx));
  PVGPU_TRY(Tune(*api, ctx, ciphersuites, /*server=*/false));
  api->SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const int loaded = ca_file.empty()
                         ? api->SSL_CTX_set_default_verify_paths(ctx)
                         : api->SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  if (loaded != 1) {
    return Error(Code::kInvalidValue, "cannot load TLS CA '" +
                                          (ca_file.empty() ? std::string("(system)") : ca_file) +
                                          "': " + TakeOpenSslErrors(*api));
  }
  return context;
}

StatusOr<std::unique_ptr<ByteStream>> TlsAccept(const TlsContext& context, UniqueFd fd,
                                                const Deadline& deadline) {
  const OpenSslApi& api = context.api();
  PVGPU_ASSIGN_OR_RETURN(SSL * ssl, NewSsl(context, fd.get()));
  auto stream = std::make_unique<TlsStream>(api, std::move(fd), ssl);
  PVGPU_TRY(
      Handshake(api, ssl, stream->fd(), deadline, [&api](SSL* s) { return api.SSL_accept(s); }));
  PVGPU_TRY(stream->FinishSetUp());
  return std::unique_ptr<ByteStream>(std::move(stream));
}

StatusOr<std::unique_ptr<ByteStream>> TlsConnect(const TlsContext& context, UniqueFd fd,
                                                 const std::string& host,
                                                 const Deadline& deadline) {
  const OpenSslApi& api = context.api();
  PVGPU_ASSIGN_OR_RETURN(SSL * ssl, NewSsl(context, fd.get()));
  auto stream = std::make_unique<TlsStream>(api, std::move(fd), ssl);
  // The certificate must name the host the guest asked for, not merely chain to the CA.
  if (IsIpLiteral(host)) {
    if (api.X509_VERIFY_PARAM_set1_ip_asc(api.SSL_get0_param(ssl), host.c_str()) != 1) {
      return Error(Code::kInvalidValue, "bad IP address '" + host + "'");
    }
  } else {
    api.SetHostName(ssl, host.c_str());
    if (api.SSL_set1_host(ssl, host.c_str()) != 1) {
      return Error(Code::kInvalidValue, "bad host name '" + host + "'");
    }
  }
  PVGPU_TRY(
      Handshake(api, ssl, stream->fd(), deadline, [&api](SSL* s) { return api.SSL_connect(s); }));
  PVGPU_TRY(stream->FinishSetUp());
  return std::unique_ptr<ByteStream>(std::move(stream));
}

}  // namespace pvgpu::transport::internal
