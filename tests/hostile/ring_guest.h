// A guest that speaks the Unix channel's set-up by hand and then writes the shared ring
// directly, so that a test can put any index or length into it: what a compromised guest
// kernel or process could do to the memory it shares with pvgpud.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "protocol/wire.h"
#include "transport/channel.h"
#include "transport/fd_util.h"
#include "transport/shm_layout_unsafe.h"

namespace pvgpu::hostile {

class RingGuest {
 public:
  static constexpr size_t kRing = 64u << 10;
  static constexpr size_t kFileBytes = transport::internal::kHeaderBytes + 2 * kRing;

  explicit RingGuest(const std::string& socket_path) {
    namespace in = transport::internal;
    sock_ = in::UniqueFd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
    if (::connect(sock_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      throw std::runtime_error("connect failed");
    }
    memfd_ = in::UniqueFd(::memfd_create("hostile-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (::ftruncate(memfd_.get(), kFileBytes) != 0 ||
        ::fcntl(memfd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      throw std::runtime_error("memfd set-up failed");
    }
    to_host_ = in::UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    to_guest_ = in::UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    in::SetupRequest request{in::kSetupMagic, transport::kTransportVersion, 0, kRing, kRing};
    const int fds[3] = {memfd_.get(), to_host_.get(), to_guest_.get()};
    Status sent =
        in::SendRecord(sock_.get(), {reinterpret_cast<const uint8_t*>(&request), sizeof(request)},
                       std::span<const int>(fds, 3));
    in::SetupReply reply{};
    std::vector<in::UniqueFd> none;
    auto got = in::ReceiveRecord(sock_.get(), reinterpret_cast<uint8_t*>(&reply), sizeof(reply), 0,
                                 &none, in::Deadline(5000));
    if (!sent.ok() || !got.ok() || reply.accepted != 1) {
      throw std::runtime_error("set-up refused");
    }
    map_ = ::mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_.get(), 0);
    if (map_ == MAP_FAILED) throw std::runtime_error("mmap failed");
    header_ = static_cast<in::ShmHeader*>(map_);
    g2h_ = static_cast<uint8_t*>(map_) + in::kHeaderBytes;
  }
  ~RingGuest() { ::munmap(map_, kFileBytes); }

  // Appends one honest frame ([u32 length][bytes], padded to 8) and publishes it.
  void WriteFrame(std::span<const uint8_t> message) {
    const uint32_t length = static_cast<uint32_t>(message.size());
    std::memcpy(g2h_ + tail_ % kRing, &length, 4);
    std::memcpy(g2h_ + tail_ % kRing + 4, message.data(), message.size());
    Publish(tail_ + ((4 + message.size() + 7) & ~size_t{7}));
  }
  // Writes one request as an honest frame: the message header for `op` and `seq`, then `body`.
  void WriteRequest(uint32_t op, uint64_t seq, const void* body, size_t size) {
    const protocol::MessageHeader header{op, 0, seq};
    std::vector<uint8_t> message(sizeof(header) + size);
    std::memcpy(message.data(), &header, sizeof(header));
    if (size != 0) std::memcpy(message.data() + sizeof(header), body, size);
    WriteFrame(message);
  }
  // Writes a raw length word at the current tail (without its bytes).
  void WriteLengthWord(uint32_t length) { std::memcpy(g2h_ + tail_ % kRing, &length, 4); }
  // Stores `tail` as the producer index and rings the host's doorbell.
  void Publish(uint64_t tail) {
    tail_ = tail;
    transport::internal::Word(header_->g2h_tail).store(tail, std::memory_order_release);
    const uint64_t one = 1;
    (void)!::write(to_host_.get(), &one, sizeof(one));
  }
  uint64_t tail() const { return tail_; }
  // Overwrites the host-to-guest consumer index (the host reads it when the reply space it
  // last saw is used up).
  void CorruptReplyHead(uint64_t head) {
    transport::internal::Word(header_->h2g_head).store(head, std::memory_order_release);
  }
  // True once the host ended the session within 10 s: it marked its side of the shared
  // memory closed (what the guest library checks first) or hung up the socket.
  bool AwaitHangUp() {
    for (int waited_ms = 0; waited_ms < 10000; waited_ms += 50) {
      if (transport::internal::Flag(header_->host.closed).load() != 0) return true;
      pollfd p{sock_.get(), POLLRDHUP, 0};
      if (::poll(&p, 1, 50) == 1) return true;
    }
    return false;
  }

 private:
  transport::internal::UniqueFd sock_, memfd_, to_host_, to_guest_;
  void* map_ = nullptr;
  transport::internal::ShmHeader* header_ = nullptr;
  uint8_t* g2h_ = nullptr;
  uint64_t tail_ = 0;
};

}  // namespace pvgpu::hostile
