// adv_pad.h: Pad / UnPad advanced APIs
#pragma once
