// The two loops every channel benchmark times (channel_benchmark.cc, tcp_channel_benchmark.cc),
// over a connected pair of endpoints: the client sends, the server's thread answers.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "transport/channel.h"

namespace pvgpu::transport::bench {

// Round trips of `size`-byte messages: the server echoes each one. An empty message stops it.
inline void PingPong(benchmark::State& state, Endpoint& client, Endpoint& server) {
  const size_t size = static_cast<size_t>(state.range(0));
  std::thread echo([&] {
    std::vector<uint8_t> message;
    while (server.Receive(&message).ok() && !message.empty()) {
      if (!server.Send(message).ok()) break;
    }
  });
  std::vector<uint8_t> ping(size, 1), pong;
  for (auto _ : state) {
    if (!client.Send(ping).ok() || !client.Receive(&pong).ok()) {
      state.SkipWithError("channel failed");
      break;
    }
  }
  (void)client.Send(std::vector<uint8_t>{});  // empty message: stop
  echo.join();
  state.SetBytesProcessed(state.iterations() * size * 2);
}

// One-way throughput of `size`-byte messages: the server drains them, and the time counted
// runs until it has drained them all, not just until they are queued.
inline void Throughput(benchmark::State& state, Endpoint& client, Endpoint& server) {
  const size_t size = static_cast<size_t>(state.range(0));
  std::thread drain([&] {
    std::vector<uint8_t> message;
    while (server.Receive(&message).ok() && !message.empty()) {
    }
    (void)server.Send(std::vector<uint8_t>{1});  // all drained
  });
  std::vector<uint8_t> payload(size, 2), done;
  for (auto _ : state) {
    if (!client.Send(payload).ok()) {
      state.SkipWithError("channel failed");
      break;
    }
  }
  (void)client.Send(std::vector<uint8_t>{});
  (void)client.Receive(&done);
  drain.join();
  state.SetBytesProcessed(state.iterations() * size);
}

}  // namespace pvgpu::transport::bench
