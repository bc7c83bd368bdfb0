/* Conditional graph nodes: a while loop whose body counts down on the device and sets its own
 * condition (the default reassigned at every launch), an if/else selected by a kernel before
 * it (changed between launches through the executable graph), a switch, and the errors for
 * sizes and handles CUDA refuses. Results against counts computed on the CPU. */
#include "common.h"

static void AddKernelNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n,
                          CUfunction f, void** args, unsigned threads) {
  CUDA_KERNEL_NODE_PARAMS k;
  memset(&k, 0, sizeof(k));
  k.func = f;
  k.gridDimX = k.gridDimY = k.gridDimZ = 1;
  k.blockDimX = threads;
  k.blockDimY = k.blockDimZ = 1;
  k.kernelParams = args;
  CHECK(cuGraphAddKernelNode(out, graph, deps, n, &k));
}

static CUgraph* AddConditional(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps,
                               size_t n, CUgraphConditionalHandle handle,
                               CUgraphConditionalNodeType type, unsigned size, CUresult* result) {
  CUgraphNodeParams p;
  memset(&p, 0, sizeof(p));
  p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  p.conditional.handle = handle;
  p.conditional.type = type;
  p.conditional.size = size;
  *result = cuGraphAddNode(out, graph, deps, NULL, n, &p);
  return p.conditional.phGraph_out;
}

static void ExpectAll(CUdeviceptr x, int want, const char* what) {
  int host[32];
  CHECK(cuMemcpyDtoH(host, x, sizeof(host)));
  for (int i = 0; i < 32; ++i) {
    if (host[i] != want) {
      fprintf(stderr, "%s: x[%d] = %d, expected %d\n", what, i, host[i], want);
      exit(1);
    }
  }
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  char* ptx = ReadPtx("conditional");
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CUfunction count_down, set_condition, add;
  CHECK(cuModuleGetFunction(&count_down, module, "count_down"));
  CHECK(cuModuleGetFunction(&set_condition, module, "set_condition"));
  CHECK(cuModuleGetFunction(&add, module, "add"));
  CUdeviceptr x, counter;
  CHECK(cuMemAlloc(&x, 32 * sizeof(int)));
  CHECK(cuMemAlloc(&counter, sizeof(int)));
  CHECK(cuMemsetD32(x, 0, 32));
  CUresult result;

  /* while (condition) { x += 1; condition = --counter > 0; } with the condition 1 at launch. */
  CUgraph loop;
  CHECK(cuGraphCreate(&loop, 0));
  CUgraphConditionalHandle go;
  CHECK(cuGraphConditionalHandleCreate(&go, loop, context, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
  CUgraphNode while_node, n1, n2;
  CUgraph* body = AddConditional(&while_node, loop, NULL, 0, go, CU_GRAPH_COND_TYPE_WHILE, 1,
                                 &result);
  CHECK(result);
  EXPECT_TRUE(body != NULL);
  int one = 1;
  void* add_args[] = {&x, &one};
  void* count_args[] = {&go, &counter};
  AddKernelNode(&n1, body[0], NULL, 0, add, add_args, 32);
  AddKernelNode(&n2, body[0], &n1, 1, count_down, count_args, 32);
  CUgraphNodeType type;
  CHECK(cuGraphNodeGetType(while_node, &type));
  EXPECT_TRUE(type == CU_GRAPH_NODE_TYPE_CONDITIONAL);
  CUgraphExec loop_exec;
  CHECK(cuGraphInstantiate(&loop_exec, loop, 0));
  int total = 0;
  for (int launch = 0; launch < 3; ++launch) {
    const int iterations = 3 + 2 * launch;
    CHECK(cuMemcpyHtoD(counter, &iterations, sizeof(int)));
    CHECK(cuGraphLaunch(loop_exec, NULL));
    CHECK(cuCtxSynchronize());
    total += iterations;
    ExpectAll(x, total, "while");
  }
  /* A clone keeps working after the original goes, with the same handle. */
  CUgraph clone;
  CHECK(cuGraphClone(&clone, loop));
  CHECK(cuGraphExecDestroy(loop_exec));
  CHECK(cuGraphDestroy(loop));
  CHECK(cuGraphInstantiate(&loop_exec, clone, 0));
  const int two = 2;
  CHECK(cuMemcpyHtoD(counter, &two, sizeof(int)));
  CHECK(cuGraphLaunch(loop_exec, NULL));
  CHECK(cuCtxSynchronize());
  total += 2;
  ExpectAll(x, total, "cloned while");
  CHECK(cuGraphExecDestroy(loop_exec));
  CHECK(cuGraphDestroy(clone));

  /* set_condition(v) -> if (v) x += 100 else x += 1000 */
  CUgraph branch;
  CHECK(cuGraphCreate(&branch, 0));
  CUgraphConditionalHandle choice;
  CHECK(cuGraphConditionalHandleCreate(&choice, branch, context, 0, 0));
  unsigned int value = 1;
  void* set_args[] = {&choice, &value};
  CUgraphNode setter, if_node, then_node, else_node;
  AddKernelNode(&setter, branch, NULL, 0, set_condition, set_args, 32);
  body = AddConditional(&if_node, branch, &setter, 1, choice, CU_GRAPH_COND_TYPE_IF, 2, &result);
  CHECK(result);
  int hundred = 100, thousand = 1000;
  void* then_args[] = {&x, &hundred};
  void* else_args[] = {&x, &thousand};
  AddKernelNode(&then_node, body[0], NULL, 0, add, then_args, 32);
  AddKernelNode(&else_node, body[1], NULL, 0, add, else_args, 32);
  CUgraphExec branch_exec;
  CHECK(cuGraphInstantiate(&branch_exec, branch, 0));
  CHECK(cuGraphLaunch(branch_exec, NULL));
  CHECK(cuCtxSynchronize());
  total += 100;
  ExpectAll(x, total, "if");
  value = 0;
  CUDA_KERNEL_NODE_PARAMS k;
  memset(&k, 0, sizeof(k));
  k.func = set_condition;
  k.gridDimX = k.gridDimY = k.gridDimZ = 1;
  k.blockDimX = 32;
  k.blockDimY = k.blockDimZ = 1;
  k.kernelParams = set_args;
  CHECK(cuGraphExecKernelNodeSetParams(branch_exec, setter, &k));
  CHECK(cuGraphLaunch(branch_exec, NULL));
  CHECK(cuCtxSynchronize());
  total += 1000;
  ExpectAll(x, total, "else");
  CHECK(cuGraphExecDestroy(branch_exec));

  /* switch (v) over three bodies adding 1, 10 and 7; a value past them runs none. */
  CUgraph choose;
  CHECK(cuGraphCreate(&choose, 0));
  CUgraphConditionalHandle which;
  CHECK(cuGraphConditionalHandleCreate(&which, choose, context, 0, 0));
  void* which_args[] = {&which, &value};
  CUgraphNode switch_setter, switch_node, cases[3];
  AddKernelNode(&switch_setter, choose, NULL, 0, set_condition, which_args, 1);
  body = AddConditional(&switch_node, choose, &switch_setter, 1, which, CU_GRAPH_COND_TYPE_SWITCH,
                        3, &result);
  CHECK(result);
  int amounts[3] = {1, 10, 7};
  void* case_args[3][2] = {{&x, &amounts[0]}, {&x, &amounts[1]}, {&x, &amounts[2]}};
  for (int i = 0; i < 3; ++i) AddKernelNode(&cases[i], body[i], NULL, 0, add, case_args[i], 32);
  for (unsigned v = 0; v < 5; ++v) {
    value = v;  /* the setter node's parameters were packed when it was made: set them again */
    k.kernelParams = which_args;
    k.blockDimX = 1;
    CHECK(cuGraphKernelNodeSetParams(switch_setter, &k));
    CUgraphExec exec;
    CHECK(cuGraphInstantiate(&exec, choose, 0));
    CHECK(cuGraphLaunch(exec, NULL));
    CHECK(cuCtxSynchronize());
    if (v < 3) total += amounts[v];
    ExpectAll(x, total, "switch");
    CHECK(cuGraphExecDestroy(exec));
  }

  /* Errors: sizes CUDA refuses, a handle of another graph, unknown flags. */
  CUgraphNode bad;
  (void)AddConditional(&bad, choose, NULL, 0, which, CU_GRAPH_COND_TYPE_WHILE, 2, &result);
  EXPECT_TRUE(result == CUDA_ERROR_INVALID_VALUE);
  (void)AddConditional(&bad, choose, NULL, 0, which, CU_GRAPH_COND_TYPE_IF, 3, &result);
  EXPECT_TRUE(result == CUDA_ERROR_INVALID_VALUE);
  (void)AddConditional(&bad, choose, NULL, 0, choice, CU_GRAPH_COND_TYPE_IF, 1, &result);
  EXPECT_TRUE(result == CUDA_ERROR_INVALID_VALUE); /* choice belongs to `branch` */
  CUgraphConditionalHandle unused;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuGraphConditionalHandleCreate(&unused, choose, context, 0, 0x80));
  CHECK(cuGraphDestroy(choose));
  CHECK(cuGraphDestroy(branch));

  CHECK(cuMemFree(x));
  CHECK(cuMemFree(counter));
  CHECK(cuModuleUnload(module));
  CHECK(cuCtxDestroy(context));
  free(ptx);
  printf("graph conditional nodes: while, if/else and switch correct\n");
  return 0;
}
