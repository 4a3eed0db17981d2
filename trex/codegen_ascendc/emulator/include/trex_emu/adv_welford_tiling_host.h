// adv_welford_tiling_host.h: host tiling helpers of the Welford APIs
#pragma once
