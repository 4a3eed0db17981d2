// adv_welford.h: WelfordUpdate / WelfordFinalize advanced APIs
#pragma once
