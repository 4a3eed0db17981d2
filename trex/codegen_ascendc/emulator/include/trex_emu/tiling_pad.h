// tiling_pad.h: PadTiling / UnPadTiling structs
#pragma once
