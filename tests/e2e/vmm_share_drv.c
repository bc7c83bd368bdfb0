/* Physical memory shared between two processes as a POSIX file descriptor, as CUDA IPC over
 * virtual memory management does it: the parent makes exportable memory, fills it and exports
 * it; the descriptor crosses a Unix socket (SCM_RIGHTS) to a child, a second guest of the same
 * host, which imports it, maps it into a reservation of its own, runs saxpy on it and writes
 * the result there; the parent reads the child's result through its own mapping. Then the
 * errors: an allocation made without the handle type, handle types pvgpu has not, descriptors
 * that are not exported memory (a pipe, an unsealed memfd), and memory that outlives its
 * exporter's release while the importer holds it. */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "common.h"

enum { N = 1 << 16 };

static void SendFd(int sock, int fd) {
  char byte = 'f';
  struct iovec iov = {&byte, 1};
  char control[CMSG_SPACE(sizeof(int))];
  memset(control, 0, sizeof(control));
  struct msghdr msg;
  memset(&msg, 0, sizeof(msg));
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof(int));
  EXPECT_TRUE(sendmsg(sock, &msg, 0) == 1);
}

static int ReceiveFd(int sock) {
  char byte = 0;
  struct iovec iov = {&byte, 1};
  char control[CMSG_SPACE(sizeof(int))];
  struct msghdr msg;
  memset(&msg, 0, sizeof(msg));
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  EXPECT_TRUE(recvmsg(sock, &msg, 0) == 1);
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  EXPECT_TRUE(c != NULL && c->cmsg_type == SCM_RIGHTS);
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

static CUmemAllocationProp Pinned(CUdevice device, int exportable) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  if (exportable) prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

/* Maps `handle` (`size` bytes) read-write at a new reservation; returns its address. */
static CUdeviceptr MapAll(CUmemGenericAllocationHandle handle, size_t size, CUdevice device) {
  CUdeviceptr va;
  CHECK(cuMemAddressReserve(&va, size, 0, 0, 0));
  CHECK(cuMemMap(va, size, 0, handle, 0));
  CUmemAccessDesc access;
  memset(&access, 0, sizeof(access));
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK(cuMemSetAccess(va, size, &access, 1));
  return va;
}

static void Unmap(CUdeviceptr va, size_t size) {
  CHECK(cuMemUnmap(va, size));
  CHECK(cuMemAddressFree(va, size));
}

/* The child: imports the descriptor, computes y = 2 x + y over the shared memory (x is the
 * first half, y the second), reports through `sock`. */
static int Child(int sock) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  int fd = ReceiveFd(sock);
  CUmemGenericAllocationHandle handle;
  CHECK(cuMemImportFromShareableHandle(&handle, (void*)(intptr_t)fd,
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(fd); /* the import holds the memory, not the descriptor */
  CUmemAllocationProp prop;
  CHECK(cuMemGetAllocationPropertiesFromHandle(&prop, handle));
  EXPECT_TRUE(prop.requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EXPECT_TRUE(prop.location.id == device);
  size_t granularity;
  CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t size = 2 * granularity;
  CUdeviceptr va = MapAll(handle, size, device);
  CHECK(cuMemRelease(handle)); /* the mapping keeps it */
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ReadPtx("saxpy")));
  CUfunction saxpy;
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  int n = N;
  float a = 2.0f;
  CUdeviceptr x = va, y = va + granularity;
  void* args[] = {&n, &a, &x, &y};
  CHECK(cuLaunchKernel(saxpy, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
  CHECK(cuCtxSynchronize());
  Unmap(va, size);
  char done = 'd';
  EXPECT_TRUE(write(sock, &done, 1) == 1);
  CHECK(cuCtxDestroy(ctx));
  return 0;
}

int main(void) {
  int socks[2];
  EXPECT_TRUE(socketpair(AF_UNIX, SOCK_STREAM, 0, socks) == 0);
  /* Fork before the driver starts, as CUDA asks of multi-process programs. */
  pid_t pid = fork();
  EXPECT_TRUE(pid >= 0);
  if (pid == 0) {
    close(socks[0]);
    return Child(socks[1]);
  }
  close(socks[1]);

  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  int posix_fd = 0;
  CHECK(cuDeviceGetAttribute(&posix_fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                             device));
  EXPECT_TRUE(posix_fd == 1);  /* a local host passes descriptors */
  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  CUmemAllocationProp prop = Pinned(device, 1);
  size_t granularity;
  CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t size = 2 * granularity;
  CUmemGenericAllocationHandle handle;
  CHECK(cuMemCreate(&handle, size, &prop, 0));
  CUdeviceptr va = MapAll(handle, size, device);
  static float x[N], y[N], got[N];
  for (int i = 0; i < N; ++i) {
    x[i] = (float)i;
    y[i] = 0.5f * (float)(i % 97);
  }
  CHECK(cuMemcpyHtoD(va, x, sizeof(x)));
  CHECK(cuMemcpyHtoD(va + granularity, y, sizeof(y)));

  int fd = -1;
  CHECK(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  EXPECT_TRUE(fd >= 0);
  SendFd(socks[0], fd);
  close(fd);
  char done = 0;
  EXPECT_TRUE(read(socks[0], &done, 1) == 1 && done == 'd');
  int status = 0;
  EXPECT_TRUE(waitpid(pid, &status, 0) == pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  /* The child's result, through this process's own mapping of the same memory. */
  CHECK(cuMemcpyDtoH(got, va + granularity, sizeof(got)));
  for (int i = 0; i < N; ++i) EXPECT_TRUE(got[i] == 2.0f * x[i] + y[i]);

  /* Exported memory outlives its release here while an import in this process holds it. */
  CHECK(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  Unmap(va, size);
  CHECK(cuMemRelease(handle));
  CUmemGenericAllocationHandle again;
  CHECK(cuMemImportFromShareableHandle(&again, (void*)(intptr_t)fd,
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(fd);
  va = MapAll(again, size, device);
  CHECK(cuMemcpyDtoH(got, va + granularity, sizeof(got)));
  EXPECT_TRUE(got[N - 1] == 2.0f * x[N - 1] + y[N - 1]);
  Unmap(va, size);
  CHECK(cuMemRelease(again));

  /* Errors. */
  CUmemAllocationProp plain = Pinned(device, 0);
  CUmemGenericAllocationHandle private_handle;
  CHECK(cuMemCreate(&private_handle, granularity, &plain, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuMemExportToShareableHandle(&fd, private_handle,
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED,
                cuMemExportToShareableHandle(&fd, private_handle, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  CHECK(cuMemRelease(private_handle));
  CUmemAllocationProp fabric = Pinned(device, 0);
  fabric.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&private_handle, granularity, &fabric, 0));
  int pipe_fds[2];
  EXPECT_TRUE(pipe(pipe_fds) == 0);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuMemImportFromShareableHandle(&again, (void*)(intptr_t)pipe_fds[0],
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  /* A memfd of the right size that could still shrink under the kernels: refused. */
  int unsealed = memfd_create("not-exported", MFD_CLOEXEC);
  EXPECT_TRUE(unsealed >= 0 && ftruncate(unsealed, (off_t)granularity) == 0);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuMemImportFromShareableHandle(&again, (void*)(intptr_t)unsealed,
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(unsealed);
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED,
                cuMemImportFromShareableHandle(&again, (void*)(intptr_t)0,
                                               CU_MEM_HANDLE_TYPE_FABRIC));
  /* The session goes on. */
  CUdeviceptr ok;
  CHECK(cuMemAlloc(&ok, 64));
  CHECK(cuMemFree(ok));
  CHECK(cuCtxDestroy(ctx));
  printf("vmm_share_drv: ok\n");
  return 0;
}
