// The remote channel's cipher: which TLS 1.3 suite this machine runs fastest, and how fast one
// core runs it (the limit a TLS channel can reach on a link faster than that).
#pragma once

#include <string>

#include "common/status.h"

namespace pvgpu::transport::internal {

// Whether the CPU has instructions for AES-GCM (AES-NI and carry-less multiplication on x86,
// the AES and PMULL extensions on ARM).
bool CpuAcceleratesAesGcm();

// TLS 1.3 cipher suites, fastest first: AES-128-GCM, then AES-256-GCM, where the CPU
// accelerates AES-GCM; ChaCha20-Poly1305 first where it does not. OpenSSL's list syntax.
std::string PreferredCiphersuites();

// One core's encryption rate for TLS 1.3 suite `suite` ("TLS_AES_128_GCM_SHA256", ...), in
// bytes per second, sealing 16 KiB records (TLS's largest) for about `seconds`.
StatusOr<double> MeasureCipherBytesPerSecond(const std::string& suite, double seconds);

}  // namespace pvgpu::transport::internal
