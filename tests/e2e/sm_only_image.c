/* A shared library carrying a fat binary of machine code only (saxpy for sm_80) in its own
 * data, as NVIDIA's libraries (cuBLAS, cuFFT, ...) carry theirs: image_origin_drv loads the
 * image from here and expects the error to name this library. */
__asm__(
    ".section .rodata\n"
    ".balign 16\n"
    ".globl pvgpu_sm_only_fatbin\n"
    ".hidden pvgpu_sm_only_fatbin\n"
    ".type pvgpu_sm_only_fatbin, @object\n"
    "pvgpu_sm_only_fatbin:\n"
    ".incbin \"" PVGPU_SM_ONLY_FATBIN
    "\"\n"
    ".size pvgpu_sm_only_fatbin, . - pvgpu_sm_only_fatbin\n"
    ".previous\n");

extern const unsigned char pvgpu_sm_only_fatbin[] __attribute__((visibility("hidden")));

const void* SmOnlyFatbin(void) { return pvgpu_sm_only_fatbin; }
