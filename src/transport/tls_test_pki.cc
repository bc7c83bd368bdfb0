#include "transport/tls_test_pki.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>

#include "transport/tcp_socket.h"

namespace pvgpu::transport::testing {
namespace {

using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using CertPtr = std::unique_ptr<X509, decltype(&X509_free)>;

bool AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named `common_name`, signed by issuer_key (self-signed when
// issuer is null).
CertPtr MakeCert(EVP_PKEY* key, const std::string& common_name, X509* issuer, EVP_PKEY* issuer_key,
                 bool ca, const std::vector<std::string>& names) {
  CertPtr cert(X509_new(), X509_free);
  static long serial = 1;
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 7 * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  bool ok = true;
  if (ca) {
    ok &= AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    ok &= AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    ok &= AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash");
  } else {
    std::string san;
    for (const std::string& entry : names) {
      if (!san.empty()) san += ",";
      san += (internal::IsIpLiteral(entry) ? "IP:" : "DNS:") + entry;
    }
    ok &= AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    ok &= AddExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth");
    ok &= AddExtension(cert.get(), signer, NID_subject_alt_name, san);
    ok &= AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid");
  }
  if (!ok || X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return {nullptr, X509_free};
  return cert;
}

bool WritePem(const std::string& path, X509* cert, EVP_PKEY* key) {
  FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) return false;
  const bool ok = cert != nullptr
                      ? PEM_write_X509(file, cert) == 1
                      : PEM_write_PrivateKey(file, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  return std::fclose(file) == 0 && ok;
}

bool MakeChain(const std::string& dir, const std::string& prefix,
               const std::vector<std::string>& names, std::string* ca_path, std::string* cert_path,
               std::string* key_path) {
  KeyPtr ca_key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  KeyPtr host_key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  if (!ca_key || !host_key) return false;
  CertPtr ca = MakeCert(ca_key.get(), prefix + " test CA", nullptr, ca_key.get(), true, {});
  if (!ca) return false;
  CertPtr host =
      MakeCert(host_key.get(), prefix + " test host", ca.get(), ca_key.get(), false, names);
  if (!host) return false;
  *ca_path = dir + "/" + prefix + "-ca.pem";
  *cert_path = dir + "/" + prefix + "-host.pem";
  *key_path = dir + "/" + prefix + "-host.key";
  return WritePem(*ca_path, ca.get(), nullptr) && WritePem(*cert_path, host.get(), nullptr) &&
         WritePem(*key_path, nullptr, host_key.get());
}

}  // namespace

bool MakeTestPki(const std::string& dir, const std::vector<std::string>& names, TestPki* pki) {
  const bool ok =
      MakeChain(dir, "trusted", names, &pki->ca_cert, &pki->host_cert, &pki->host_key) &&
      MakeChain(dir, "other", names, &pki->other_ca_cert, &pki->other_host_cert,
                &pki->other_host_key);
  if (!ok) ADD_FAILURE() << "could not make test certificates in " << dir;
  return ok;
}

}  // namespace pvgpu::transport::testing
