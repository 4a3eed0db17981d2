// tiling_welford.h: tiling structs of the Welford APIs. On Atlas A2/A3 WelfordUpdate and WelfordFinalize take no
// tiling struct: the kernel passes WelfordUpdateParam / WelfordFinalizePara (adv_welford.h), and the host sizes the
// tmp buffer with GetWelfordUpdateMaxMinTmpSize / GetWelfordFinalizeMaxMinTmpSize (adv_welford_tiling_host.h).
#pragma once
