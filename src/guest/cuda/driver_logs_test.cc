#include "guest/cuda/driver_logs.h"

#include <gtest/gtest.h>

#include <string>

namespace pvgpu::guest {
namespace {

const std::string kNote = std::string(DriverLogs::kDroppedNote) + "\n";

TEST(DriverLogsTest, IteratorsReadWhatCameAfterThemAndAdvance) {
  DriverLogs logs(1000);
  logs.Append(CU_LOG_LEVEL_WARNING, "one");
  CUlogIterator it = logs.Current();
  logs.Append(CU_LOG_LEVEL_ERROR, "two");
  logs.Append(CU_LOG_LEVEL_WARNING, "three");
  EXPECT_EQ(logs.DumpForFile(&it), "two\nthree\n");
  EXPECT_EQ(it, logs.Current());
  EXPECT_EQ(logs.DumpForFile(&it), "");
  EXPECT_EQ(logs.DumpForFile(nullptr), "one\ntwo\nthree\n");
}

TEST(DriverLogsTest, OldMessagesAreDroppedAndTheDumpSaysSo) {
  DriverLogs logs(12);  // "aaaa\n" + "bbbb\n" fit, a third does not
  CUlogIterator start = logs.Current();
  logs.Append(CU_LOG_LEVEL_WARNING, "aaaa");
  logs.Append(CU_LOG_LEVEL_WARNING, "bbbb");
  logs.Append(CU_LOG_LEVEL_WARNING, "cccc");
  CUlogIterator it = start;
  EXPECT_EQ(logs.DumpForFile(&it), kNote + "bbbb\ncccc\n");
  EXPECT_EQ(logs.DumpForFile(nullptr), kNote + "bbbb\ncccc\n");
  it = logs.Current() - 1;  // only the newest: nothing of it was dropped
  EXPECT_EQ(logs.DumpForFile(&it), "cccc\n");
}

TEST(DriverLogsTest, MemoryDumpsKeepTheNewestThatFit) {
  DriverLogs logs(DriverLogs::kBytes);
  const CUlogIterator start = logs.Current();
  const std::string first(100, 'x');
  logs.Append(CU_LOG_LEVEL_WARNING, first);
  logs.Append(CU_LOG_LEVEL_WARNING, "second message");
  logs.Append(CU_LOG_LEVEL_WARNING, "third");
  const size_t newest_two = 21;  // "second message\nthird\n"
  std::string text;
  CUlogIterator it = start;
  ASSERT_TRUE(logs.DumpForMemory(&it, 4096, &text));
  EXPECT_EQ(text, first + "\nsecond message\nthird\n");
  // Room for the note and the newest two, with the NUL.
  it = start;
  ASSERT_TRUE(logs.DumpForMemory(&it, kNote.size() + newest_two + 1, &text));
  EXPECT_EQ(text, kNote + "second message\nthird\n");
  // Room for the note and the newest only: the older one makes room for the note.
  it = start;
  ASSERT_TRUE(logs.DumpForMemory(&it, kNote.size() + newest_two, &text));
  EXPECT_EQ(text, kNote + "third\n");
  // Room for the newest two but the note not even beside the newest: the messages alone.
  it = start;
  ASSERT_TRUE(logs.DumpForMemory(&it, newest_two + 1, &text));
  EXPECT_EQ(text, "second message\nthird\n");
  // Not even the newest.
  it = start;
  EXPECT_FALSE(logs.DumpForMemory(&it, 6, &text));
  EXPECT_EQ(it, logs.Current());  // advanced anyway
  ASSERT_TRUE(logs.DumpForMemory(&it, 4096, &text));
  EXPECT_EQ(text, "");
}

TEST(DriverLogsTest, CallbacksGetEachMessageUntilUnregistered) {
  DriverLogs logs(1000);
  struct Heard {
    int count = 0;
    CUlogLevel level = CU_LOG_LEVEL_WARNING;
    std::string text;
  } heard;
  auto fn = [](void* data, CUlogLevel level, char* message, size_t length) {
    auto* h = static_cast<Heard*>(data);
    ++h->count;
    h->level = level;
    h->text.assign(message, length);
  };
  CUlogsCallbackHandle handle = logs.Register(fn, &heard);
  logs.Append(CU_LOG_LEVEL_ERROR, "lost the host");
  EXPECT_EQ(heard.count, 1);
  EXPECT_EQ(heard.level, CU_LOG_LEVEL_ERROR);
  EXPECT_EQ(heard.text, "lost the host");
  EXPECT_TRUE(logs.Unregister(handle));
  EXPECT_FALSE(logs.Unregister(handle));
  logs.Append(CU_LOG_LEVEL_WARNING, "unheard");
  EXPECT_EQ(heard.count, 1);
}

}  // namespace
}  // namespace pvgpu::guest
