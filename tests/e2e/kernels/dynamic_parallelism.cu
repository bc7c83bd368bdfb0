// Dynamic parallelism (compiled with -rdc=true): a quicksort whose every partition launches a
// grid per side into its own device-side stream, down to an insertion sort of short ranges,
// and a kernel that launches itself ever deeper until the device runtime refuses.

// Sorts data[left..right] in place (one thread).
__device__ void InsertionSort(unsigned int* data, int left, int right) {
  for (int i = left + 1; i <= right; ++i) {
    const unsigned int v = data[i];
    int j = i - 1;
    while (j >= left && data[j] > v) {
      data[j + 1] = data[j];
      --j;
    }
    data[j + 1] = v;
  }
}

extern "C" __global__ void quicksort(unsigned int* data, int left, int right, int depth) {
  if (depth >= 12 || right - left <= 16) {
    InsertionSort(data, left, right);
    return;
  }
  const unsigned int pivot = data[left + (right - left) / 2];
  int i = left, j = right;
  while (i <= j) {
    while (data[i] < pivot) ++i;
    while (data[j] > pivot) --j;
    if (i <= j) {
      const unsigned int t = data[i];
      data[i] = data[j];
      data[j] = t;
      ++i;
      --j;
    }
  }
  if (left < j) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    quicksort<<<1, 1, 0, s>>>(data, left, j, depth + 1);
    cudaStreamDestroy(s);
  }
  if (i < right) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    quicksort<<<1, 1, 0, s>>>(data, i, right, depth + 1);
    cudaStreamDestroy(s);
  }
}

// Each level writes its depth and launches the next, up to 40 levels: the device runtime
// refuses the launches below its nesting limit, so the deepest levels never run.
extern "C" __global__ void deeper(int* depths, int depth) {
  depths[depth] = depth;
  if (depth + 1 < 40) deeper<<<1, 1>>>(depths, depth + 1);
}

// Several blocks, each launching a grid that writes its block's part.
extern "C" __global__ void fill_child(int* out, int base, int value) {
  out[base + threadIdx.x] = value + threadIdx.x;
}
extern "C" __global__ void fill_parent(int* out, int value) {
  if (threadIdx.x == 0) fill_child<<<1, 64>>>(out, blockIdx.x * 64, value + blockIdx.x * 64);
}
