// adv_pad_tiling_host.h: host tiling helpers of Pad / UnPad
#pragma once
