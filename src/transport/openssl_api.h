// OpenSSL 3, resolved at run time on first use (dlopen of libssl.so.3 and libcrypto.so.3).
//
// Only TLS needs it: the guest libraries load into every CUDA program, in containers whose
// images may carry no OpenSSL at all, and a guest on a Unix socket must not fail to load for
// want of a library it never calls. The host resolves it the same way, so that a pvgpud without
// TLS listeners runs without OpenSSL too. The headers give the types and constants; every call
// goes through the table.
#pragma once

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "common/status.h"

namespace pvgpu::transport::internal {

// clang-format off
#define PVGPU_LIBSSL_FUNCTIONS(X)                                                           \
  X(OPENSSL_init_ssl) X(TLS_server_method) X(TLS_client_method) X(SSL_CTX_new)             \
  X(SSL_CTX_free) X(SSL_CTX_ctrl) X(SSL_CTX_set_num_tickets)                                \
  X(SSL_CTX_use_certificate_chain_file) X(SSL_CTX_use_PrivateKey_file)                      \
  X(SSL_CTX_check_private_key) X(SSL_CTX_set_verify) X(SSL_CTX_set_default_verify_paths)    \
  X(SSL_CTX_load_verify_locations) X(SSL_new) X(SSL_free) X(SSL_ctrl) X(SSL_set_fd)         \
  X(SSL_accept) X(SSL_connect) X(SSL_read) X(SSL_write) X(SSL_shutdown)                      \
  X(SSL_get_error) X(SSL_get_verify_result) X(SSL_get0_param) X(SSL_set1_host)              \
  X(SSL_CTX_set_options) X(SSL_CTX_set_ciphersuites) X(SSL_CTX_set_default_read_buffer_len) \
  X(SSL_get_current_cipher) X(SSL_CIPHER_get_name) X(SSL_get_wbio) X(SSL_get_rbio)          \
  X(SSL_set0_wbio) X(SSL_has_pending)

#define PVGPU_LIBCRYPTO_FUNCTIONS(X)                                                        \
  X(ERR_get_error) X(ERR_error_string_n) X(ERR_clear_error) X(ERR_peek_error)              \
  X(X509_verify_cert_error_string) X(X509_VERIFY_PARAM_set1_ip_asc) X(SHA256)              \
  X(CRYPTO_memcmp) X(BIO_f_buffer) X(BIO_new) X(BIO_push) X(BIO_free) X(BIO_ctrl)        \
  X(BIO_int_ctrl) X(BIO_test_flags) X(EVP_CIPHER_CTX_new) X(EVP_CIPHER_CTX_free)           \
  X(EVP_CIPHER_CTX_ctrl) X(EVP_CIPHER_fetch) X(EVP_CIPHER_free) X(EVP_EncryptInit_ex)      \
  X(EVP_EncryptUpdate) X(EVP_EncryptFinal_ex) X(BIO_meth_new) X(BIO_meth_set_write)          \
  X(BIO_meth_set_ctrl) X(BIO_get_new_index) X(BIO_set_data) X(BIO_get_data) X(BIO_set_init) \
  X(BIO_set_flags) X(BIO_clear_flags)
// clang-format on

struct OpenSslApi {
#define PVGPU_OPENSSL_MEMBER(name) decltype(&::name) name = nullptr;
  PVGPU_LIBSSL_FUNCTIONS(PVGPU_OPENSSL_MEMBER)
  PVGPU_LIBCRYPTO_FUNCTIONS(PVGPU_OPENSSL_MEMBER)
#undef PVGPU_OPENSSL_MEMBER

  // What the headers define as macros over the calls above.
  void SetMode(SSL* ssl, long mode) const { SSL_ctrl(ssl, SSL_CTRL_MODE, mode, nullptr); }
  void SetMinProtoVersion(SSL_CTX* ctx, int version) const {
    SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, version, nullptr);
  }
  void SetReadAhead(SSL_CTX* ctx) const { SSL_CTX_ctrl(ctx, SSL_CTRL_SET_READ_AHEAD, 1, nullptr); }
  void SetHostName(SSL* ssl, const char* name) const {
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(name));
  }
};

// The table, loaded once per process (thread-safe). kNotFound, saying which library or symbol
// is missing, where OpenSSL 3 is not installed.
StatusOr<const OpenSslApi*> OpenSsl();

}  // namespace pvgpu::transport::internal
