// tiling_rmsnorm.h: RmsNormTiling struct
#pragma once
