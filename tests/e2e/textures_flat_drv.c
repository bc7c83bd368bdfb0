/* The one-level 1D and 2D part of textures_drv.c: what every adapter supports. */
#define PVGPU_TEXTURES_FLAT_ONLY
#include "textures_drv.c"
