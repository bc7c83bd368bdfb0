#include "guest/client/client.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "common/log.h"
#include "common/paths.h"
#include "guest/client/host_list.h"

namespace pvgpu::guest {

using protocol::MessageHeader;

Client& Client::ForAddress(const std::string& address) {
  static auto* mutex = new Mutex();
  static auto* clients = new std::map<std::string, Client*>();
  MutexLock lock(mutex);
  Client*& client = (*clients)[address];
  if (client == nullptr) client = new Client(address);
  return *client;
}

std::vector<Client*> Client::FromEnvironment() {
  std::vector<Client*> out;
  for (const std::string& address :
       ExpandHostList(std::getenv("PVGPU_HOST"), "unix:" + DefaultSocketPath())) {
    out.push_back(&ForAddress(address));
  }
  return out;
}

uint64_t Client::NewHandle() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

Client::Client(std::string address) : address_(std::move(address)) {
  const char* pipeline = std::getenv("PVGPU_PIPELINE");
  pipelined_ = !(pipeline != nullptr && std::string(pipeline) == "0");
}

Status Client::Connect() {
  MutexLock lock(&mutex_);
  if (attempted_) return connect_status_;
  attempted_ = true;
  const std::string& address = address_;
  std::string path;
  const bool remote = transport::IsRemoteAddress(address);
  if (!remote && !LocalSocketPath(address, &path)) {
    connect_status_ = Error(Code::kNoDevice, "unsupported PVGPU_HOST '" + address + "'");
    PVGPU_WARN(connect_status_.message());
    return connect_status_;
  }
  StatusOr<std::unique_ptr<transport::Endpoint>> endpoint = Error(Code::kNoDevice, "not connected");
  if (remote) {
    // tcp:// and tls:// (docs/remote.md); the token and CA come from the environment.
    auto options = transport::GuestRemoteOptionsFromEnvironment();
    endpoint = options.ok() ? transport::ConnectRemote(address, *options)
                            : StatusOr<std::unique_ptr<transport::Endpoint>>(options.status());
  } else {
    endpoint = transport::ConnectUnix(path);
  }
  if (!endpoint.ok()) {
    connect_status_ =
        Error(Code::kNoDevice, "no pvgpu host at " + address + ": " + endpoint.status().message());
    // A named remote host that refuses us (token, certificate) is a configuration error the
    // user must see; a missing local daemon is routine.
    if (remote) {
      PVGPU_WARN(connect_status_.message());
    } else {
      PVGPU_INFO(connect_status_.message());
    }
    return connect_status_;
  }
  endpoint_ = std::move(endpoint).value();
  max_payload_ = endpoint_->max_message_size() - sizeof(MessageHeader) - 64;
  protocol::HelloRequest hello;
  hello.protocol_version = protocol::kProtocolVersion;
  hello.guest_pid = static_cast<uint32_t>(getpid());
  {
    char name[64] = {};
    FILE* comm = std::fopen("/proc/self/comm", "r");
    if (comm != nullptr) {
      if (std::fgets(name, sizeof(name), comm) != nullptr) {
        name[strcspn(name, "\n")] = '\0';
      }
      std::fclose(comm);
    }
    std::memcpy(hello.guest_name, name, sizeof(hello.guest_name));
  }
  uint64_t seq = 0;
  std::vector<uint8_t> bytes;
  Code code = SendLocked(static_cast<uint32_t>(protocol::Op::kHello), 0,
                         {reinterpret_cast<const uint8_t*>(&hello), sizeof(hello)}, {}, &seq);
  if (code == Code::kOk) code = AwaitReplyLocked(seq, ReplySink{nullptr, 0, &bytes});
  if (code == Code::kOk && bytes.size() >= sizeof(hello_)) {
    std::memcpy(&hello_, bytes.data(), sizeof(hello_));
    code = static_cast<Code>(hello_.result);
  } else if (code == Code::kOk) {
    code = Code::kUnknown;
  }
  if (code != Code::kOk) {
    connect_status_ =
        Error(code == Code::kNotSupported ? Code::kNotSupported : Code::kNoDevice,
              "pvgpu host at " + address + " refused the session (" + CodeName(code) + ")");
    PVGPU_WARN(connect_status_.message());
    endpoint_.reset();
    return connect_status_;
  }
  PVGPU_DEBUG("connected to " << endpoint_->Describe() << ", session " << hello_.session_id << ", "
                              << hello_.adapter_count << " adapter(s)");
  connected_.store(true, std::memory_order_release);
  return Status::Ok();
}

Code Client::Broken(const Status& status) {
  if (!broken_.exchange(true)) {
    PVGPU_ERROR("lost the pvgpu host: " << status.ToString() << "; every further call fails");
  }
  return Code::kDeviceUnavailable;
}

Code Client::SendLocked(uint32_t op, uint32_t flags, std::span<const uint8_t> fixed,
                        std::span<const uint8_t> payload, uint64_t* seq) {
  if (broken_.load()) return Code::kDeviceUnavailable;
  MessageHeader header;
  header.op = op;
  header.flags = flags;
  header.seq = last_seq_.load(std::memory_order_relaxed) + 1;
  std::span<const uint8_t> parts[] = {
      {reinterpret_cast<const uint8_t*>(&header), sizeof(header)}, fixed, payload};
  Status sent = endpoint_->Send(parts);
  if (!sent.ok()) return Broken(sent);
  last_seq_.store(header.seq, std::memory_order_release);
  if (seq != nullptr) *seq = header.seq;
  return Code::kOk;
}

Code Client::AwaitReplyViewLocked(uint64_t seq,
                                  FunctionRef<void(const transport::MessageView&)> body) {
  for (;;) {
    MessageHeader header;
    bool malformed = false;
    std::vector<uint8_t> unsolicited;
    // The message is looked at where it arrived (in the shared ring on the local channel): the
    // reply's bytes are copied once, to where the caller wants them.
    Status received = endpoint_->ReceiveView(&scratch_, [&](const transport::MessageView& m) {
      if (m.size() < sizeof(header)) {
        malformed = true;
        return;
      }
      m.CopyPrefix(&header, sizeof(header));
      const transport::MessageView rest = m.Tail(sizeof(header));
      if ((header.flags & protocol::kFlagReply) == 0) {
        unsolicited.resize(rest.size());
        rest.CopyPrefix(unsolicited.data(), rest.size());
      } else if (header.seq == seq) {
        body(rest);
      }
    });
    if (!received.ok()) return Broken(received);
    if (malformed) return Broken(Error(Code::kUnknown, "malformed message from the host"));
    if ((header.flags & protocol::kFlagReply) == 0) {
      HandleUnsolicited(header, unsolicited);
      continue;
    }
    if (header.seq != seq) {
      return Broken(Error(Code::kUnknown, "reply to message " + std::to_string(header.seq) +
                                              " while waiting for " + std::to_string(seq)));
    }
    return Code::kOk;
  }
}

Code Client::AwaitReplyLocked(uint64_t seq, const ReplySink& reply) {
  bool short_reply = false;
  const Code code = AwaitReplyViewLocked(seq, [&](const transport::MessageView& body) {
    if (body.size() < reply.fixed_size) {
      short_reply = true;
      return;
    }
    body.CopyPrefix(reply.fixed, reply.fixed_size);
    if (reply.payload != nullptr) {
      const transport::MessageView payload = body.Tail(reply.fixed_size);
      reply.payload->resize(payload.size());
      payload.CopyPrefix(reply.payload->data(), payload.size());
    }
  });
  if (code != Code::kOk) return code;
  if (short_reply) return Broken(Error(Code::kUnknown, "short reply"));
  return Code::kOk;
}

void Client::HandleUnsolicited(const MessageHeader& header, std::span<const uint8_t> body) {
  if (header.op == static_cast<uint32_t>(protocol::Op::kPrint) &&
      body.size() >= sizeof(protocol::PrintRequest)) {
    // Device printf output goes where the program's own stdout goes.
    const auto text = body.subspan(sizeof(protocol::PrintRequest));
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  PVGPU_DEBUG("ignoring host message op " << header.op);
}

Code Client::Exchange(uint32_t op, bool async, std::span<const uint8_t> fixed,
                      std::span<const uint8_t> request_payload, const ReplySink* reply,
                      uint64_t* seq) {
  if (!connected()) {
    Status status = Connect();
    if (!status.ok()) return status.code();
  }
  MutexLock lock(&mutex_);
  uint64_t sent_seq = 0;
  const uint32_t flags =
      (async && reply != nullptr) ? static_cast<uint32_t>(protocol::kFlagWantReply) : 0u;
  Code code = SendLocked(op, flags, fixed, request_payload, &sent_seq);
  if (code != Code::kOk) return code;
  if (seq != nullptr) *seq = sent_seq;
  if (reply == nullptr) return Code::kOk;
  return AwaitReplyLocked(sent_seq, *reply);
}

Code Client::ExchangeBatch(
    uint32_t op, std::span<const uint8_t> requests, size_t request_size,
    const std::function<Code(size_t, const transport::MessageView&)>& on_reply) {
  if (!connected()) {
    Status status = Connect();
    if (!status.ok()) return status.code();
  }
  const size_t count = requests.size() / request_size;
  MutexLock lock(&mutex_);
  uint64_t first = 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t seq = 0;
    Code code = SendLocked(op, 0, requests.subspan(i * request_size, request_size), {}, &seq);
    if (code != Code::kOk) return code;
    if (i == 0) first = seq;
  }
  // Every reply is read even after a failure, so that none is left for the next call.
  Code result = Code::kOk;
  for (size_t i = 0; i < count; ++i) {
    Code code = AwaitReplyViewLocked(first + i, [&](const transport::MessageView& body) {
      if (result == Code::kOk) result = on_reply(i, body);
    });
    if (code == Code::kDeviceUnavailable) return code;
  }
  return result;
}

Code Client::CreateRegion(int fd, uint64_t handle, uint64_t size, uint32_t flags) {
  if (!connected()) {
    Status status = Connect();
    if (!status.ok()) return status.code();
  }
  MutexLock fd_lock(&fd_mutex_);
  {
    MutexLock lock(&mutex_);
    if (broken_.load()) return Code::kDeviceUnavailable;
    Status sent = endpoint_->SendFd(fd);
    if (sent.code() == Code::kNotSupported) return Code::kNotSupported;
    if (!sent.ok()) return Broken(sent);
  }
  protocol::HostRegionCreateRequest request;
  request.region = handle;
  request.size = size;
  request.flags = flags;
  return Call(request);
}

bool Client::Done(uint64_t seq) const {
  return endpoint_ != nullptr && endpoint_->ReadFence() >= seq;
}

bool Client::SpinUntilDone(uint64_t seq, std::chrono::microseconds window) const {
  if (Done(seq)) return true;
  return !broken_.load() && endpoint_ != nullptr && endpoint_->SpinForFence(seq, window);
}

std::optional<uint64_t> Client::FaultCount() const {
  if (endpoint_ == nullptr) return std::nullopt;
  return endpoint_->ReadErrorCount();
}

Code Client::WaitDone(uint64_t seq) {
  if (broken_.load()) return Code::kDeviceUnavailable;
  if (Done(seq)) return Code::kOk;
  // One waiter at a time on the host's doorbell, so a reply wake-up is never taken by a
  // fence waiter (or the other way round).
  MutexLock lock(&mutex_);
  Status waited = endpoint_->WaitFence(seq, -1);
  if (!waited.ok()) return Broken(waited);
  return Code::kOk;
}

}  // namespace pvgpu::guest
