#include "guest/client/host_list.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace pvgpu::guest {

namespace {

std::string Trim(std::string text) {
  text.erase(0, text.find_first_not_of(" \t"));
  text.erase(text.find_last_not_of(" \t") + 1);
  return text;
}

}  // namespace

bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i_end = i, j_end = j;
      while (i_end < a.size() && std::isdigit(static_cast<unsigned char>(a[i_end]))) ++i_end;
      while (j_end < b.size() && std::isdigit(static_cast<unsigned char>(b[j_end]))) ++j_end;
      // Leading zeros do not change the number; then the longer run is the larger number.
      const size_t i_first = std::min(a.find_first_not_of('0', i), i_end);
      const size_t j_first = std::min(b.find_first_not_of('0', j), j_end);
      const std::string_view x(a.data() + i_first, i_end - i_first);
      const std::string_view y(b.data() + j_first, j_end - j_first);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i_end;
      j = j_end;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;  // equal by the rules above ("01" and "1"): any fixed order will do
}

std::vector<std::string> SocketsInDirectory(const std::string& dir) {
  std::vector<std::string> names;
  DIR* stream = opendir(dir.c_str());
  if (stream == nullptr) return {};
  while (dirent* entry = readdir(stream)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (stat((dir + "/" + name).c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      names.push_back(name);
    }
  }
  closedir(stream);
  std::sort(names.begin(), names.end(), NaturalLess);
  std::vector<std::string> out;
  for (const std::string& name : names) out.push_back("unix:" + dir + "/" + name);
  return out;
}

std::vector<std::string> ExpandHostList(const char* value, const std::string& default_address,
                                        const std::string& device_dir) {
  if (value == nullptr || *value == '\0') {
    // A host with --device-sockets may have the device directory too; its own tools keep
    // using the default socket there. Only where that is missing (a container) do the
    // directory's sockets stand in for it.
    struct stat st;
    const std::string default_path = default_address.substr(default_address.find(':') + 1);
    if (stat(default_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return {default_address};
    std::vector<std::string> devices = SocketsInDirectory(device_dir);
    if (!devices.empty()) return devices;
    return {default_address};
  }
  std::vector<std::string> out;
  std::stringstream list(value);
  std::string entry;
  while (std::getline(list, entry, ',')) {
    entry = Trim(entry);
    if (entry.rfind("dir:", 0) == 0) {
      for (std::string& address : SocketsInDirectory(entry.substr(4))) {
        out.push_back(std::move(address));
      }
    } else if (!entry.empty()) {
      out.push_back(entry);
    }
  }
  return out;
}

}  // namespace pvgpu::guest
