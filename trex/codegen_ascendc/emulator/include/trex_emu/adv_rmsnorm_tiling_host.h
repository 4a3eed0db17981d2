// adv_rmsnorm_tiling_host.h: host tiling helpers of RmsNorm
#pragma once
