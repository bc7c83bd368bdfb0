// Throw-away certificates for the remote channel's tests, made at run time with OpenSSL (no
// private key is ever committed): a CA, a host certificate it signs, and a second, unrelated
// CA with its own host certificate (for "untrusted certificate" cases).
#pragma once

#include <string>
#include <vector>

namespace pvgpu::transport::testing {

struct TestPki {
  std::string ca_cert;    // PEM file paths inside `dir`
  std::string host_cert;  // signed by ca_cert, names `names`
  std::string host_key;
  std::string other_ca_cert;    // an unrelated CA
  std::string other_host_cert;  // signed by other_ca_cert, same names
  std::string other_host_key;
};

// Writes the files into `dir`. `names` are subjectAltNames: IP literals become IP entries,
// anything else DNS entries. Returns false (with ADD_FAILURE) on error.
bool MakeTestPki(const std::string& dir, const std::vector<std::string>& names, TestPki* pki);

}  // namespace pvgpu::transport::testing
