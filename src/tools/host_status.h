// What `pvgpu adapters` and `pvgpu smi` share: choosing the host, asking it for its status
// over a real session (the HostStatus message, answered as JSON by src/host/status.cc), and
// formatting sizes.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"

namespace pvgpu::tools {

// The host to ask, as the guest library spells addresses: --host ADDR if given, else the first
// host in PVGPU_HOST, else the default socket (common/paths.h). A malformed --host is an error.
StatusOr<std::string> ChooseStatusHost(const std::optional<std::string>& host_option);

// Connects to `address` and returns its HostStatus document. kNoDevice (with a message that
// says what to do) when no host answers there.
StatusOr<nlohmann::json> FetchHostStatusJson(const std::string& address);

// ChooseStatusHost, then FetchHostStatusJson: the chosen host's address and status, or the
// error printed and the exit code to return (2 for a bad --host, 1 when the host cannot be
// asked).
struct ChosenHostStatus {
  std::string address;
  nlohmann::json status;
  int exit_code = 0;  // nonzero: failed
};
ChosenHostStatus FetchChosenHostStatus(const std::optional<std::string>& host_option);

// The options `pvgpu adapters` and `pvgpu smi` share: --host ADDR and --json. Returns --host,
// whose count() tells whether it was given.
CLI::Option* AddStatusOptions(CLI::App* command, std::string* host, bool* json);

// The "host" object of the tools' JSON output: the address asked, pvgpud's version and the
// CUDA driver version it reports.
nlohmann::json HostSummary(const std::string& address, const nlohmann::json& status);

// The sessions of the status minus this process's own (the one the query itself opened),
// merged per pid: a program using libcuda and libnvidia-ml has a session for each.
nlohmann::json GuestProcesses(const nlohmann::json& status, int own_pid);

// "512 B", "3.0 MiB", "2.0 GiB".
std::string FormatBytes(uint64_t bytes);

}  // namespace pvgpu::tools
