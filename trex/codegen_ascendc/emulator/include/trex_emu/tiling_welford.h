// tiling_welford.h: tiling structs of the Welford APIs
#pragma once
